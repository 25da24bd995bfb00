// Explore's speed search on fake timings (no worker, no clock): a step in the target's time over the
// CPU's is found and bisected to the exact size, costs that only add overheads never make a cliff,
// one noisy measurement is timed again and dropped (through explore_cases: test_explore.cpp).
#include "core/explore_speed.hpp"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <utility>
#include <vector>

using namespace mpscheck;

namespace {

std::vector<std::int64_t> doublings(std::int64_t from, std::int64_t to) {
  std::vector<std::int64_t> s;
  for (std::int64_t n = from; n <= to; n *= 2) s.push_back(n);
  return s;
}

// Target and reference times of a side that costs a fixed overhead plus a constant per element.
struct Affine {
  double overhead, per_element;
  double at(std::int64_t n) const { return overhead + per_element * static_cast<double>(n); }
};

}  // namespace

TEST(ExploreSpeed, AStepInTheRatioIsBisectedToTheFirstSlowSize) {
  int calls = 0;
  const RatioAt ratio = [&](std::int64_t n) -> std::optional<double> {
    ++calls;
    return n > 4096 ? 8.0 : 1.1;
  };
  const std::optional<Cliff> c = find_cliff(doublings(256, 131072), ratio);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->bisected);
  EXPECT_EQ(c->last_fast, 4096);
  EXPECT_EQ(c->first_slow, 4097);
  EXPECT_DOUBLE_EQ(c->slow_ratio, 8.0);
  EXPECT_DOUBLE_EQ(c->fast_ratio, 1.1);
  // 256..8192 (6 sizes), the two re-timings, 16384 (still slow), then 12 halvings of 4096..8192.
  EXPECT_EQ(calls, 6 + 2 + 1 + 12);
}

TEST(ExploreSpeed, OverheadsAndPerElementCostsAloneNeverMakeACliff) {
  // Both orders: a target with a large overhead (its ratio falls with size) and one whose overhead
  // is the reference's (its ratio rises towards the per-element ratio, at most 2x per doubling).
  const std::vector<std::pair<Affine, Affine>> sides = {
      {{50e-6, 3e-9}, {2e-6, 1e-9}},
      {{1e-6, 9e-9}, {100e-6, 1e-9}},
      {{0, 3.9e-9}, {1e-3, 1e-9}},
  };
  for (const auto& [target, reference] : sides) {
    const RatioAt ratio = [&](std::int64_t n) -> std::optional<double> { return target.at(n) / reference.at(n); };
    EXPECT_FALSE(find_cliff(doublings(16, std::int64_t{1} << 30), ratio))
        << target.overhead << " + " << target.per_element << "/element";
  }
}

TEST(ExploreSpeed, OneNoisyMeasurementIsTimedAgainAndIsNoCliff) {
  std::map<std::int64_t, int> seen;
  const RatioAt ratio = [&](std::int64_t n) -> std::optional<double> {
    // The first timing at 8192 lands on a busy moment; every later one does not.
    return n == 8192 && seen[n]++ == 0 ? 9.0 : 1.0;
  };
  EXPECT_FALSE(find_cliff(doublings(256, 65536), ratio));
  EXPECT_EQ(seen[8192], 2);
}

TEST(ExploreSpeed, AJumpJustUnderTheFactorIsNoCliff) {
  const RatioAt ratio = [](std::int64_t n) -> std::optional<double> { return n > 1000 ? 3.9 : 1.0; };
  EXPECT_FALSE(find_cliff(doublings(64, 8192), ratio));
}

TEST(ExploreSpeed, ABudgetThatEndsMidBisectionKeepsTheBracket) {
  int calls = 0;
  const RatioAt ratio = [&](std::int64_t n) -> std::optional<double> {
    if (++calls > 10) return std::nullopt;
    return n > 5000 ? 10.0 : 1.0;
  };
  const std::optional<Cliff> c = find_cliff(doublings(1024, 16384), ratio);
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->bisected);
  EXPECT_LE(c->last_fast, 5000);
  EXPECT_GT(c->first_slow, 5000);
  EXPECT_LT(c->first_slow - c->last_fast, 8192 - 4096);
}

TEST(ExploreSpeed, AJumpThatDoesNotStayIsNoCliff) {
  // Slow at 8192 however often it is timed, fast again at 16384: a bump, not a cliff.
  const RatioAt ratio = [](std::int64_t n) -> std::optional<double> { return n == 8192 ? 9.0 : 1.0; };
  EXPECT_FALSE(find_cliff(doublings(256, 65536), ratio));
}

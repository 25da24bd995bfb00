// Explore's speed search: a cliff is a size past which the target becomes much slower than the CPU
// reference at the same size, not merely slower per element. Both sides are timed at each size, so
// what is compared between neighbouring sizes is the ratio target time / reference time.
//
// Why a factor of 4 between sizes at most twice apart is a cliff and not a trend: if each side
// costs a fixed overhead plus a constant per element (t = a + b·n), then doubling n multiplies one
// side's time by at most 2 and the other's by at least 1, so the ratio moves by at most 2x. Past
// that bound something changed its per-element cost at that size (another kernel, a fallback, a
// cache that stopped fitting), which is what a user needs to know before shipping that shape.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace mpscheck {

inline constexpr double kCliffFactor = 4;

// The target's time over the reference's at a size; nothing when it cannot be timed there (the
// budget is spent, the variant is not a pass, the run gave no times).
using RatioAt = std::function<std::optional<double>(std::int64_t size)>;

struct Cliff {
  std::int64_t last_fast = 0, first_slow = 0;  // neighbours when bisected
  double fast_ratio = 0, slow_ratio = 0;       // target/reference time at each, as last measured
  bool bisected = false;                       // false: the budget ran out between them
};

// Walks `sizes` (ascending, each at most twice the one before) and times each. A jump of at least
// `factor` in the ratio between two neighbours is timed again at both (the smaller of the two
// jumps must still reach `factor`, so one noisy measurement is not a cliff), the next size up must
// be as slow (a cliff stays past its size), then the two are bisected: a size whose ratio reaches
// the geometric middle of the two is on the slow side.
std::optional<Cliff> find_cliff(const std::vector<std::int64_t>& sizes, const RatioAt& ratio_at,
                                double factor = kCliffFactor);

}  // namespace mpscheck

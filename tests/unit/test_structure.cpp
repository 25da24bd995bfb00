// The structure rule by itself (checks/structure.hpp): the group it names and its figures. The
// verdicts it gives through the judge are tests/unit/test_structure_verdicts.cpp.
#include "checks/structure.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

using namespace mpscheck;

namespace {

// Linear(64, 128) on a batch of 64 in bfloat16: gold, the float32 result from rounded inputs, and
// the CPU's own bfloat16 run.
struct Linear {
  at::Tensor gold, rounded, witness;
};
Linear linear(std::uint64_t seed) {
  at::manual_seed(seed);
  const at::Tensor x = at::randn({64, 64}, at::kDouble), w = at::randn({128, 64}, at::kDouble) / 8;
  const at::Tensor b = at::randn({128}, at::kDouble) * 0.1;
  auto in = [&](c10::ScalarType t) {
    return at::addmm(b.to(c10::kBFloat16).to(t), x.to(c10::kBFloat16).to(t), w.to(c10::kBFloat16).to(t).t());
  };
  return {at::addmm(b, x, w.t()), in(at::kFloat), in(c10::kBFloat16)};
}

}  // namespace

// The rule by itself: the figures it reports, and its table's numbers in the order of their use.
TEST(StructureRule, ReportsTheWorstGroupWithItsFigures) {
  const Linear s = linear(7);
  at::Tensor planted = s.witness.to(at::kFloat);
  planted.select(1, 5).mul_(0.96);
  const StructureTest t = test_structure(s.gold, planted.to(c10::kBFloat16), s.rounded, s.witness, c10::kBFloat16);
  ASSERT_TRUE(t.measured);
  EXPECT_FALSE(t.ok);
  EXPECT_TRUE(t.witnessed);
  EXPECT_EQ(t.where, "column 5 ([:, 5])");
  EXPECT_EQ(t.count, 64);
  EXPECT_TRUE(t.in_magnitude);
  EXPECT_LT(t.target_units, -4);
  EXPECT_GT(t.target_units, -11);
  EXPECT_LT(std::abs(t.honest_units), 1);
  EXPECT_GT(t.z, 4);
  EXPECT_GE(t.allowed_units, kStructure.min_effect_units);
  const std::string text = describe_structure(t, "bfloat16");
  EXPECT_NE(text.find("column 5 ([:, 5]) (64 elements): "), std::string::npos) << text;
  EXPECT_NE(text.find("honest bfloat16 (the CPU's own bfloat16 run) shows"), std::string::npos) << text;
  // float32 and float64 outputs are not tested by this rule, nor outputs smaller than a group.
  EXPECT_FALSE(test_structure(s.gold, planted, s.rounded, {}, c10::kFloat).measured);
  EXPECT_FALSE(test_structure(s.gold.narrow(0, 0, 1).narrow(1, 0, 8), planted.narrow(0, 0, 1).narrow(1, 0, 8), {}, {},
                              c10::kBFloat16)
                   .measured);
}

TEST(StructureRule, OneTileInMemoryOrderIsFoundAndNamed) {
  at::manual_seed(9);
  const at::Tensor gold = at::randn({4096}, at::kDouble);
  at::Tensor target = gold.to(c10::kBFloat16).to(at::kFloat);
  target.narrow(0, 1024, 256).mul_(1.04);
  const StructureTest t = test_structure(gold, target.to(c10::kBFloat16), {}, {}, c10::kBFloat16);
  EXPECT_FALSE(t.ok);
  EXPECT_NE(t.where.find("in row-major order"), std::string::npos) << t.where;
  EXPECT_TRUE(test_structure(gold, gold.to(c10::kBFloat16), {}, {}, c10::kBFloat16).ok);
}

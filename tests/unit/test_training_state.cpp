// Issue 47 item 3: a network's gradients and updates in float16/bfloat16 are judged in units of the
// dtype's rounding against the honest side (Tolerance::training_state), and on a CPU target that
// side is the rounded-operation baseline (checks/rounded_ops.hpp).
#include "checks/compare.hpp"
#include "checks/rounded_ops.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace mpscheck;

namespace {

bool representable_in(const at::Tensor& x, c10::ScalarType dtype) {
  return at::equal(x, x.to(dtype).to(x.scalar_type()));
}

Tolerance training_state_tolerance(c10::ScalarType dtype, double floor) {
  Tolerance tol = tolerance_for("train", dtype);
  tol.network = tol.structure = tol.training_state = true;
  tol.unit_floor = floor;
  return tol;
}

// An honest reduced-precision result of `gold`: each element off by about `units` units of the
// dtype's rounding at random, then rounded to the dtype.
at::Tensor honest_of(const at::Tensor& gold, c10::ScalarType dtype, double units) {
  return (gold * (1 + units * unit_roundoff(dtype) * at::randn(gold.sizes(), at::kDouble))).to(dtype).to(at::kFloat);
}

}  // namespace

TEST(RoundedOperations, EveryResultForwardAndBackwardIsRoundedAndNothingAfter) {
  at::manual_seed(1);
  const at::Tensor x = at::randn({16, 16}).to(at::kBFloat16).to(at::kFloat).requires_grad_();
  const at::Tensor w = at::randn({16, 16}).to(at::kBFloat16).to(at::kFloat).requires_grad_();
  at::Tensor y, z;
  {
    const RoundEveryResult every(at::kBFloat16);
    y = at::matmul(x, w).exp();
    z = y.sum() * 1.0001;
    z.backward();
  }
  EXPECT_TRUE(representable_in(y.detach(), at::kBFloat16));
  EXPECT_TRUE(representable_in(z.detach(), at::kBFloat16));
  EXPECT_TRUE(representable_in(x.grad(), at::kBFloat16)) << "the backward's results are rounded too";
  EXPECT_TRUE(representable_in(w.grad(), at::kBFloat16));
  // The same without the guard: float32 results, which bfloat16 does not hold.
  const at::Tensor plain = at::matmul(x.detach(), w.detach()).exp();
  EXPECT_FALSE(representable_in(plain, at::kBFloat16));
}

// A gradient 10% off, up or down, on every element passes every per-element allowance built from a
// witness's peak error, but not the scatter test: 13 to 26 units of bfloat16 where the honest side
// shows one. An honest one 1.3x the honest side's scatter passes, in both dtypes.
TEST(TrainingStateRule, TenPercentPerElementIsAFindingAndHonestScatterIsNot) {
  for (const auto dtype : {at::kBFloat16, at::kHalf}) {
    SCOPED_TRACE(c10::toString(dtype));
    at::manual_seed(4);
    const at::Tensor gold = 0.02 * at::randn({256, 256}, at::kDouble);
    const at::Tensor reference = gold.to(at::kFloat), rounded = gold.to(dtype).to(at::kFloat);
    const at::Tensor emulated = honest_of(gold, dtype, 1.0), honest = honest_of(gold, dtype, 1.3);
    const at::Tensor signs = at::randint(0, 2, gold.sizes(), at::kDouble) * 2 - 1;
    const at::Tensor planted = (gold * (1 + 0.1 * signs)).to(dtype).to(at::kFloat);
    const Tolerance tol = training_state_tolerance(dtype, 0.02 / 1024);
    const Attribution ok = attribute_with_gold(gold, reference, honest, dtype, tol, rounded, {}, emulated);
    EXPECT_TRUE(ok.target_ok) << ok.structure.scatter_where << " " << ok.structure.scatter_target_units;
    EXPECT_TRUE(ok.training_state);
    EXPECT_NE(ok.honest.find("every operation's result rounded"), std::string::npos) << ok.honest;
    const Attribution bad = attribute_with_gold(gold, reference, planted, dtype, tol, rounded, {}, emulated);
    EXPECT_FALSE(bad.target_ok);
    EXPECT_FALSE(bad.structure.scatter_ok);
    EXPECT_GT(bad.structure.scatter_target_units, 10);
  }
}

// A gradient that is zero in exact arithmetic (an attention key bias's: float64 1e-17) carries an
// honest residue of its family's magnitudes (1e-3 in bfloat16). Judged at its family's floor, the
// residue the honest side shows passes; one 100x larger fails, element by element, never as a
// percentage of zero.
TEST(TrainingStateRule, AnExactlyZeroGradientIsJudgedInItsFamilysUnits) {
  at::manual_seed(6);
  const auto dtype = at::kBFloat16;
  const at::Tensor gold = 1e-17 * at::randn({64}, at::kDouble);
  const at::Tensor reference = (gold + 1e-8 * at::randn({64}, at::kDouble)).to(at::kFloat);
  const at::Tensor emulated = (1e-3 * at::randn({64})).to(dtype).to(at::kFloat);
  const at::Tensor honest = (1e-3 * at::randn({64})).to(dtype).to(at::kFloat);
  const Tolerance tol = training_state_tolerance(dtype, 0.5 / 1024);  // a family of RMS 0.5
  const Attribution ok = attribute_with_gold(gold, reference, honest, dtype, tol, reference, {}, emulated);
  EXPECT_TRUE(ok.target_ok) << ok.bad_elements << " " << ok.structure.scatter_target_units;
  const Attribution bad = attribute_with_gold(gold, reference, honest * 100, dtype, tol, reference, {}, emulated);
  EXPECT_FALSE(bad.target_ok);
  EXPECT_GT(bad.bad_elements, 0);
}

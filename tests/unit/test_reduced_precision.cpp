// Issue 22: float16/bfloat16 outputs are judged in their own units. Each test plants an error near
// what the old rules let through (a few percent, a few small elements, one overflowing mask) on
// an honest reduced-precision result, and checks that the honest one still passes.
#include "checks/compare.hpp"
#include "checks/tolerance.hpp"
#include "checks/verdict.hpp"

#include "checks/result.hpp"

#include <mpscheck/dtype_names.hpp>
#include <mpscheck/op.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace mpscheck;

namespace {

constexpr c10::ScalarType kReduced[] = {c10::kBFloat16, c10::kHalf};

// One output four ways: float64 gold, the float32 reference, the float32 result from inputs
// rounded to the dtype (the honest baseline, before its own rounding), and the target.
struct Four {
  at::Tensor gold, reference, rounded, target;
};

// A matmul-like output (64x128 @ 128x96), the target being the honest rounding of the baseline, as
// a CPU float16/bfloat16 kernel that accumulates in float32 gives.
Four matmul(c10::ScalarType dtype, std::uint64_t seed = 3) {
  at::manual_seed(seed);
  const at::Tensor x = at::randn({64, 128}, at::kDouble), w = at::randn({128, 96}, at::kDouble) / std::sqrt(128.0);
  auto in = [&](c10::ScalarType t) { return at::matmul(x.to(t).to(at::kFloat), w.to(t).to(at::kFloat)); };
  const at::Tensor rounded = in(dtype);
  return {at::matmul(x, w), in(at::kFloat).to(at::kDouble), rounded.to(at::kDouble), rounded.to(dtype)};
}

// What the host does with one by-value output: the plain tolerance as a fast path (with the atol
// of the output's own scale), then the float64 judge for anything that fails it.
bool judged_ok(const Four& c, c10::ScalarType dtype, const std::string& family) {
  const Tolerance tol = tolerance_for(family, dtype);
  if (compare_tensors("out", c.reference, c.target, tol, dtype).ok) return true;
  return attribute_with_gold(c.gold, c.reference, c.target, dtype, tol, c.rounded).target_ok;
}

}  // namespace

// ---- 1, 3: a systematic scale error is a finding --------------------------------------------------

TEST(ReducedPrecision, HonestMatmulPasses) {
  for (const auto dtype : kReduced) {
    SCOPED_TRACE(c10::toString(dtype));
    for (std::uint64_t seed : {1, 2, 3}) EXPECT_TRUE(judged_ok(matmul(dtype, seed), dtype, "matmul")) << seed;
  }
}

// Old rule: rtol/atol 0.03 for conv/matmul in reduced precision, so a kernel 3% off everywhere
// never reached the float64 judge.
TEST(ReducedPrecision, MatmulThreePercentTooLargeIsAMismatch) {
  for (const auto dtype : kReduced) {
    SCOPED_TRACE(c10::toString(dtype));
    for (const char* family : {"matmul", "conv", "attention", "recurrent", "linalg", "fft", "model"}) {
      Four c = matmul(dtype);
      c.target = (c.rounded * 1.03).to(dtype);
      EXPECT_FALSE(judged_ok(c, dtype, family)) << family;
    }
  }
  // float32: caught by the plain tolerance, as before.
  Four c = matmul(c10::kFloat);
  c.target = c.reference * 1.03;
  EXPECT_FALSE(compare_tensors("out", c.reference, c.target, tolerance_for("matmul", c10::kFloat)).ok);
}

// The float64 judge names the bias even when no element is beyond a few rounding units: a 1%
// (bfloat16) or 0.12% (float16) scale, inside the plain tolerance of every element.
TEST(ReducedPrecision, BiasInsideThePlainToleranceIsScreenedAndNamed) {
  for (const auto dtype : kReduced) {
    SCOPED_TRACE(c10::toString(dtype));
    const double scale = dtype == c10::kHalf ? 1.0012 : 1.01;
    Four c = matmul(dtype);
    c.target = (c.rounded * scale).to(dtype);
    const Tolerance tol =
        scaled_to_output(tolerance_for("matmul", dtype), dtype, finite_rms(c.reference), "matmul", "out");
    ASSERT_TRUE(compare_tensors("out", c.reference, c.target, tol, dtype).ok) << "the plant must hide in the elements";
    const SignedBias screen = signed_bias(c.reference, c.target);
    EXPECT_GT(screen.mean, kBiasScreenUnits * unit_roundoff(dtype));
    const Attribution a = attribute_with_gold(c.gold, c.reference, c.target, dtype, tol, c.rounded);
    EXPECT_FALSE(a.target_ok);
    EXPECT_FALSE(a.bias_ok);
    EXPECT_NEAR(a.bias_target, scale - 1, 0.3 * (scale - 1));
    EXPECT_LT(a.bias_allowed, 0.6 * (scale - 1));
    // The honest output is not screened, and passes the bias rule.
    const Four h = matmul(dtype);
    EXPECT_LT(std::abs(signed_bias(h.reference, h.target).mean), kBiasScreenUnits * unit_roundoff(dtype));
    EXPECT_TRUE(attribute_with_gold(h.gold, h.reference, h.target, dtype, tol, h.rounded).bias_ok);

    // The message names the bias.
    OutputReport o;
    o.name = "out";
    o.ok = false;
    o.note = "screened";
    std::vector<OutputAttribution> failing{{&o, a}};
    Verdict v = judge_outputs({o});
    Fragile attribution = Fragile::Unknown;
    decide_attribution(failing, v, attribution);
    EXPECT_EQ(v.status, Status::Mismatch);
    EXPECT_NE(v.message.find("too large on average against float64, honest " + a.dtype + " rounding explains"),
              std::string::npos)
        << v.message;
  }
}

// A 0-dim loss 10% off: the loss and model families' old rtol 0.02-0.05 passed it. (A train case's
// losses after optimizer steps are trajectories, still judged by the train family's old rule:
// Tolerance::trajectory.)
TEST(ReducedPrecision, ZeroDimLossTenPercentOffIsAMismatch) {
  for (const auto dtype : kReduced) {
    SCOPED_TRACE(c10::toString(dtype));
    const Four m = matmul(dtype);
    auto loss = [](const at::Tensor& y) { return y.square().mean(); };
    Four c{loss(m.gold), loss(m.reference), loss(m.rounded), loss(m.rounded).to(dtype)};
    for (const char* family : {"loss", "model"}) EXPECT_TRUE(judged_ok(c, dtype, family)) << family;
    c.target = (loss(m.rounded) * 1.1).to(dtype);
    for (const char* family : {"loss", "model"}) EXPECT_FALSE(judged_ok(c, dtype, family)) << family;
  }
}

// Parameter updates of size 1e-3 (Adam's lr) are judged at their own scale: an update 10% short
// used to pass under the train family's atol 0.05.
TEST(ReducedPrecision, SmallScaleOutputIsJudgedAtItsOwnScale) {
  for (const auto dtype : kReduced) {
    SCOPED_TRACE(c10::toString(dtype));
    Four c = matmul(dtype);
    for (at::Tensor* t : {&c.gold, &c.reference, &c.rounded}) *t = *t * 1e-3;
    c.target = c.rounded.to(dtype);
    EXPECT_TRUE(judged_ok(c, dtype, "train"));
    c.target = (c.rounded * 0.9).to(dtype);
    EXPECT_FALSE(judged_ok(c, dtype, "train"));
    const Tolerance tol =
        scaled_to_output(tolerance_for("train", dtype), dtype, finite_rms(c.reference), "train", "update/w");
    EXPECT_LT(tol.atol, 0.04 * finite_rms(c.reference));
  }
}

// ---- 1: small elements are judged by the errors small elements honestly have ---------------------

namespace {
// exp over [-4, 3]: values from 0.018 to 20, the honest error proportional to each.
Four exp_case(c10::ScalarType dtype) {
  const at::Tensor x = at::linspace(-4, 3, 4096, at::kDouble);
  const at::Tensor rounded = at::exp(x.to(dtype).to(at::kFloat));
  return {at::exp(x), at::exp(x.to(at::kFloat)).to(at::kDouble), rounded.to(at::kDouble), rounded.to(dtype)};
}
}  // namespace

// The shape: a bfloat16 exp 2.2x too large on some elements in (0.08, 0.125) passed as
// "float32 is the fragile side" (the allowance was 8x the whole output's RMSE, about 96% there).
// float16's old allowance was 8x smaller: 1.25x is near it.
TEST(ReducedPrecision, SmallElementsWrongAmongLargeOnesAreCaught) {
  for (const auto dtype : kReduced) {
    SCOPED_TRACE(c10::toString(dtype));
    Four c = exp_case(dtype);
    EXPECT_TRUE(judged_ok(c, dtype, "activation"));
    const at::Tensor small =
        (c.gold > 0.08) & (c.gold < 0.125) & (at::arange(c.gold.numel(), at::kLong) % 16 == 0);  // 16 of 4096 elements
    const double factor = dtype == c10::kHalf ? 1.25 : 2.2;
    c.target = at::where(small, c.rounded * factor, c.rounded).to(dtype);
    EXPECT_FALSE(judged_ok(c, dtype, "activation"));
    const Attribution a =
        attribute_with_gold(c.gold, c.reference, c.target, dtype, tolerance_for("activation", dtype), c.rounded);
    EXPECT_EQ(a.bad_elements, small.sum().item<std::int64_t>());
    EXPECT_GT(a.gold_value, 0.08);
    EXPECT_LT(a.gold_value, 0.125);
    EXPECT_LT(a.allowed, 0.2 * a.gold_value) << "the allowance is local, not the whole output's";
  }
}

// ---- 5: overflow-safe figures --------------------------------------------------------------------

namespace {
// Logits with a mask on 64 of 160 elements: float64 holds its lowest (-1.8e308), float32 its own
// (-3.4e38, nan_to_num's -inf), the target its dtype's own lowest.
Four masked_logits(c10::ScalarType dtype) {
  at::manual_seed(5);
  const at::Tensor x = at::randn({160}, at::kDouble) * 3;
  const at::Tensor mask = at::arange(160, at::kLong) % 5 < 2;
  auto masked = [&](const at::Tensor& v, double lowest) { return at::where(mask, at::full_like(v, lowest), v); };
  const at::Tensor rounded = x.to(dtype).to(at::kFloat).to(at::kDouble);
  const double target_lowest = dtype == c10::kHalf ? -65504.0
                               : dtype == c10::kBFloat16
                                   ? static_cast<double>(std::numeric_limits<c10::BFloat16>::lowest())
                                   : static_cast<double>(std::numeric_limits<float>::lowest());
  return {masked(x, std::numeric_limits<double>::lowest()),
          masked(x.to(at::kFloat).to(at::kDouble), std::numeric_limits<float>::lowest()),
          masked(rounded, std::numeric_limits<float>::lowest()), masked(rounded, target_lowest).to(dtype)};
}
}  // namespace

// (r - g)^2 overflowed at the masked elements, the baseline became inf and a bug on every other
// unmasked element was forgiven; with a -1e9 mask the same bug was caught.
TEST(ReducedPrecision, MaskedLogitsAtTheDtypesLowestKeepAFiniteBaseline) {
  for (const auto dtype : {c10::kBFloat16, c10::kHalf, c10::kFloat}) {
    SCOPED_TRACE(c10::toString(dtype));
    Four c = masked_logits(dtype);
    const Tolerance tol = tolerance_for("elementwise", dtype);
    const Attribution honest = attribute_with_gold(c.gold, c.reference, c.target, dtype, tol, c.rounded);
    EXPECT_TRUE(honest.target_ok);
    EXPECT_TRUE(std::isfinite(honest.baseline));
    EXPECT_TRUE(std::isfinite(honest.rmse_reference));
    EXPECT_LT(honest.baseline, 1.0);
    // A bug on every other unmasked element: 10% too large.
    const at::Tensor unmasked = c.gold > -1e300;
    const at::Tensor bug = unmasked & (at::arange(160, at::kLong) % 2 == 0);
    at::Tensor target = c.target.to(at::kDouble);
    target = at::where(bug, target * 1.1, target).to(c.target.scalar_type());
    const Attribution a = attribute_with_gold(c.gold, c.reference, target, dtype, tol, c.rounded);
    EXPECT_FALSE(a.target_ok);
    EXPECT_TRUE(std::isfinite(a.baseline));
    EXPECT_GE(a.bad_elements, bug.sum().item<std::int64_t>() / 2);
  }
}

// The masked positions are non-finite positions: +inf or the wrong sign there is a finding.
TEST(ReducedPrecision, MaskedPositionMustHoldAnExtremeOfGoldsSign) {
  Four c = masked_logits(c10::kBFloat16);
  at::Tensor t = c.target.clone();
  t[0] = 3e38;  // element 0 is masked: float64 -1.8e308
  EXPECT_FALSE(attribute_with_gold(c.gold, c.reference, t, c10::kBFloat16, Tolerance{0, 0}, c.rounded).target_ok);
  t[0] = -std::numeric_limits<double>::infinity();
  EXPECT_TRUE(attribute_with_gold(c.gold, c.reference, t, c10::kBFloat16, Tolerance{0, 0}, c.rounded).target_ok);
}

TEST(ReducedPrecision, RmseOfValuesNearTheTopOfTheRangeIsFinite) {
  const at::Tensor g = at::full({1000}, 1e300, at::kDouble);
  const at::Tensor ref = g * (1 + 1e-7);
  const Attribution a = attribute_with_gold(g, ref, ref.clone(), c10::kDouble, Tolerance{0, 0});
  EXPECT_TRUE(std::isfinite(a.rmse_reference));
  EXPECT_NEAR(a.rmse_reference / 1e293, 1.0, 1e-6);
  EXPECT_TRUE(std::isfinite(a.baseline));
  EXPECT_TRUE(a.target_ok);
}

TEST(ReducedPrecision, NonFiniteFiguresAreWrittenAsStrings) {
  OutputReport o;
  o.name = "out";
  o.max_abs = std::numeric_limits<double>::infinity();
  o.max_rel = std::numeric_limits<double>::quiet_NaN();
  o.reference_value = -std::numeric_limits<double>::infinity();
  o.target_value = 1.5;
  o.rmse_reference = 0.25;
  o.rmse_target = std::numeric_limits<double>::infinity();
  const nlohmann::json j = o;
  EXPECT_EQ(j.at("max_abs"), "inf");
  EXPECT_EQ(j.at("max_rel"), "nan");
  EXPECT_EQ(j.at("reference_value"), "-inf");
  EXPECT_EQ(j.at("rmse_target_vs_gold"), "inf");
  EXPECT_EQ(j.at("target_value"), 1.5);
  const OutputReport back = nlohmann::json::parse(j.dump()).get<OutputReport>();
  EXPECT_TRUE(std::isinf(back.max_abs) && back.max_abs > 0);
  EXPECT_TRUE(std::isnan(back.max_rel));
  EXPECT_TRUE(std::isinf(back.reference_value) && back.reference_value < 0);
  EXPECT_TRUE(std::isinf(back.rmse_target));
  EXPECT_EQ(back.rmse_reference, 0.25);
  // Reports written before: null stood for a non-finite figure.
  nlohmann::json old = j;
  old["max_abs"] = nullptr;
  EXPECT_TRUE(std::isinf(old.get<OutputReport>().max_abs));
}

// ---- 6: random statistics judged by the reference's sampling error -----------------------------

namespace {
// A standard normal sample's mean, variance and P(x < 0), with their standard errors.
struct Stats {
  at::Tensor value, se;
};
Stats normal_stats(const at::Tensor& f) {
  const double n = static_cast<double>(f.numel());
  const at::Tensor m = f.mean(), v = f.var(), p = (f < 0).to(at::kDouble).mean();
  const at::Tensor se_m = f.std() / std::sqrt(n);
  const at::Tensor se_v = ((f - m).square() - v).square().mean().sqrt() / std::sqrt(n);
  const at::Tensor se_p = (p * (1 - p) / n).sqrt();
  return {at::stack({m, v, p}), at::stack({se_m, se_v, se_p})};
}
}  // namespace

// A generator emitting 0.01% outliers at +-50 inflates its own variance's standard error enough
// to pass when the target's spread widens the allowance.
TEST(ReducedPrecision, OutliersCannotWidenTheirOwnAllowance) {
  at::manual_seed(11);
  const std::int64_t n = std::int64_t{1} << 18;
  const Stats ref = normal_stats(at::randn({n}, at::kDouble));
  at::Tensor sample = at::randn({n}, at::kDouble);
  const at::Tensor outlier = at::rand({n}, at::kDouble) < 1e-4;
  sample = at::where(outlier, 50 * at::sign(sample), sample);
  const Stats bad = normal_stats(sample);
  const Stats good = normal_stats(at::randn({n}, at::kDouble));
  for (const auto dtype : {c10::kBFloat16, c10::kHalf, c10::kFloat}) {
    SCOPED_TRACE(c10::toString(dtype));
    const double unit = 2 * unit_roundoff(dtype);
    EXPECT_TRUE(compare_statistics("out", ref.value, good.value, ref.se, good.se, kStatisticSigmas, unit).ok);
    const OutputReport o = compare_statistics("out", ref.value, bad.value, ref.se, bad.se, kStatisticSigmas, unit);
    EXPECT_FALSE(o.ok);
    EXPECT_EQ(o.first_mismatch, 1) << "the variance: " << o.note;
  }
}

// A histogram bin fraction 8% off (0.108 for 0.1) passed under bfloat16's flat 2^-7 per statistic.
TEST(ReducedPrecision, BinFractionGetsNoFlatRoundingAllowance) {
  const double n = std::ldexp(1.0, 18), p = 0.1;
  const at::Tensor ref = at::tensor({p}, at::kDouble), se = at::tensor({std::sqrt(p * (1 - p) / n)}, at::kDouble);
  for (const auto dtype : {c10::kBFloat16, c10::kHalf}) {
    SCOPED_TRACE(c10::toString(dtype));
    const double unit = 2 * unit_roundoff(dtype);
    EXPECT_TRUE(compare_statistics("out", ref, ref * 1.015, se, se, kStatisticSigmas, unit).ok);
    EXPECT_FALSE(compare_statistics("out", ref, ref * 1.08, se, se, kStatisticSigmas, unit).ok);
  }
  // A mean of size 10, which rounding moves by a few units of 10, keeps its rounding allowance.
  const at::Tensor mean = at::tensor({10.0}, at::kDouble), tiny = at::tensor({1e-4}, at::kDouble);
  const double bf16_unit = 2 * unit_roundoff(c10::kBFloat16);
  EXPECT_TRUE(compare_statistics("out", mean, mean + 0.05, tiny, tiny, kStatisticSigmas, bf16_unit).ok);
}

// A statistic with no sampling error (dropout's largest scale-back error |y * 0.7 - x|, 0 in
// float32) is moved by rounding on the scale of the sample's values: bfloat16 keeps 2^-7 of that.
TEST(ReducedPrecision, ExactStatisticKeepsTheRoundingOfTheSamplesScale) {
  const at::Tensor ref = at::tensor({1.2e-7}, at::kDouble), zero = at::zeros({1}, at::kDouble);
  const double unit = 2 * unit_roundoff(c10::kBFloat16);
  const at::Tensor rounded = at::tensor({0.00625}, at::kDouble), wrong = at::tensor({0.05}, at::kDouble);
  EXPECT_TRUE(compare_statistics("out", ref, rounded, zero, zero, kStatisticSigmas, unit).ok);
  EXPECT_FALSE(compare_statistics("out", ref, wrong, zero, zero, kStatisticSigmas, unit).ok);
}

// Four Bernoulli draws, all 0 on the reference: its sample's standard error is 0, so one draw of 1
// on the target (a mean of 0.25) was a mismatch by rounding alone (explore's bernoulli@p=2x2 on
// cpu:bfloat16). Too few draws judge nothing: the output is not judged and the case a skip, never a
// pass. From kMinDraws draws on, the same statistics are judged as before.
TEST(ReducedPrecision, TooFewDrawsAreNotJudgedAndTheCaseIsASkip) {
  using op::SampleStats;
  const double unit = 2 * unit_roundoff(c10::kBFloat16);
  auto bernoulli = [](std::int64_t n, std::int64_t ones) {
    at::Tensor b = at::zeros({n});
    b.slice(0, 0, ones).fill_(1);
    return SampleStats().mean(b).done();
  };
  const op::Tensors ref = bernoulli(4, 0), tgt = bernoulli(4, 1);
  const OutputReport o = compare_statistics("out", ref[0], tgt[0], ref[1], tgt[1], kStatisticSigmas, unit);
  EXPECT_TRUE(o.ok);
  EXPECT_TRUE(o.not_judged);
  EXPECT_NE(o.note.find("not judged"), std::string::npos) << o.note;
  const Verdict v = judge_outputs({o});
  EXPECT_EQ(v.status, Status::Skip);
  EXPECT_NE(v.message.find("too small"), std::string::npos) << v.message;

  // At the floor the sample is judged: 15 of 30 draws of 1 against none is a mismatch.
  const std::int64_t n = SampleStats::kMinDraws;
  const op::Tensors ref30 = bernoulli(n, 0), half = bernoulli(n, n / 2);
  const OutputReport judged = compare_statistics("out", ref30[0], half[0], ref30[1], half[1], kStatisticSigmas, unit);
  EXPECT_FALSE(judged.ok);
  EXPECT_FALSE(judged.not_judged);
  EXPECT_EQ(judge_outputs({judged}).status, Status::Mismatch);

  // Not judged is no licence for a non-finite statistic: a NaN where the reference is finite fails.
  const at::Tensor nan = at::full({1}, std::numeric_limits<float>::quiet_NaN());
  const OutputReport with_nan = compare_statistics("out", ref[0], nan, ref[1], ref[1], kStatisticSigmas, unit);
  EXPECT_FALSE(with_nan.ok);
  EXPECT_NE(judge_outputs({with_nan}).status, Status::Pass);

  // A case with one judged statistic beside the unjudged ones is judged by it: pass or mismatch, no skip.
  OutputReport known = compare_statistics("exact", at::zeros({1}), at::zeros({1}), at::zeros({1}), at::zeros({1}),
                                          kStatisticSigmas, unit);
  EXPECT_EQ(judge_outputs({o, known}).status, Status::Pass);
  known = compare_statistics("exact", at::zeros({1}), at::ones({1}), at::zeros({1}), at::zeros({1}), kStatisticSigmas,
                             unit);
  EXPECT_EQ(judge_outputs({o, known}).status, Status::Mismatch);
}

// A sample's extreme is exact only where the sample surely attains it: a dropout of four elements,
// one holding max(x), misses it with chance 0.3, and its largest output is not judged; with 20
// elements holding it (miss 0.3^20 = 3.5e-11) it is judged exactly, and one unit off fails.
TEST(ReducedPrecision, AnExtremeIsJudgedOnlyWhereTheSampleSurelyAttainsIt) {
  using op::SampleStats;
  const double unit = 2 * unit_roundoff(c10::kFloat);
  const at::Tensor ref = at::full({}, 1.9 / 0.7), other = at::full({}, 1.8 / 0.7);
  auto compare = [&](double miss) {
    const op::Tensors r = SampleStats().extreme(ref, miss).done(), t = SampleStats().extreme(other, miss).done();
    return compare_statistics("out", r[0], t[0], r[1], t[1], kStatisticSigmas, unit);
  };
  const OutputReport one_holds = compare(0.3);
  EXPECT_TRUE(one_holds.ok);
  EXPECT_TRUE(one_holds.not_judged);
  const OutputReport twenty_hold = compare(std::pow(0.3, 20));
  EXPECT_FALSE(twenty_hold.ok);
  EXPECT_FALSE(twenty_hold.not_judged);
}

// Which outputs get the scale-relative atol: accumulations and the gradients of ops that
// scatter-add or reduce; an elementwise gradient (tanh's, whose 1 - y^2 cancels) does not.
TEST(ReducedPrecision, OnlyAccumulatingOutputsGetAnAtolOfTheirScale) {
  for (const auto dtype : kReduced) {
    SCOPED_TRACE(c10::toString(dtype));
    const Tolerance base = tolerance_for("activation", dtype);
    EXPECT_EQ(base.atol, 0);
    EXPECT_EQ(scaled_to_output(base, dtype, 2.0, "activation", "out").atol, 0);
    EXPECT_EQ(scaled_to_output(base, dtype, 2.0, "activation", "grad/x").atol, 0);
    EXPECT_EQ(scaled_to_output(base, dtype, 2.0, "activation", "grad/x").chains, 2);
    EXPECT_EQ(scaled_to_output(base, dtype, 2.0, "pool", "out").atol, 0);
    EXPECT_DOUBLE_EQ(scaled_to_output(base, dtype, 2.0, "pool", "grad/x").atol,
                     kScaleRoundingUnits * unit_roundoff(dtype) * 2.0);
    EXPECT_DOUBLE_EQ(scaled_to_output(base, dtype, 1e-3, "train", "update/w").atol,
                     kScaleRoundingUnits * unit_roundoff(dtype) * 1e-3);
    // A training trajectory keeps the train family's old rule; its updates do not.
    EXPECT_TRUE(scaled_to_output(tolerance_for("train", dtype), dtype, 1.0, "train", "loss/step3").trajectory);
    EXPECT_FALSE(scaled_to_output(tolerance_for("train", dtype), dtype, 1.0, "train", "update/w").trajectory);
    // float32 keeps its family table.
    EXPECT_EQ(scaled_to_output(tolerance_for("conv", c10::kFloat), c10::kFloat, 2.0, "conv", "out").atol, 3e-5);
  }
}

// ---- honest rounding that the baseline does not show ------------------------------------------------

namespace {

// Every finite non-zero element of a float16/bfloat16 tensor moved one unit of its rounding, up or
// down by a hash of the element's index (as many up as down): a kernel that rounds faithfully
// rather than to nearest.
at::Tensor one_unit_off(const at::Tensor& t) {
  at::Tensor out = t.clone();
  at::Tensor bits = out.view(at::kShort);
  const at::Tensor index = at::arange(out.numel(), at::kLong).view(out.sizes());
  const at::Tensor sign = ((index * 2654435761LL).bitwise_right_shift(9).bitwise_and(1) * 2 - 1).to(at::kShort);
  bits.add_(at::where(at::isfinite(out) & (out != 0), sign, at::zeros_like(sign)));
  return out;
}

// silu's gradient, sigmoid(x) * (1 + x * (1 - sigmoid(x))) * go, as a device computes it op by op
// in `dtype` (`nudge`: each op one unit off, as above), with the float64 gold, the float32
// reference and the float32 result from rounded inputs. Near x = -1.28 the bracket cancels, and
// the roundings of the ops inside it, not of x, set the error there.
struct Chain {
  at::Tensor gold, reference, rounded, witness, target;
};
Chain silu_gradient(c10::ScalarType dtype, std::uint64_t seed = 11) {
  at::manual_seed(seed);
  const at::Tensor x = at::rand({48, 64}, at::kDouble) * 8 - 4, go = at::randn({48, 64}, at::kDouble);
  auto formula = [](const at::Tensor& a, const at::Tensor& b) {
    const at::Tensor sg = at::sigmoid(a);
    return sg * (1 + a * (1 - sg)) * b;
  };
  auto op_by_op = [&](bool nudge) {
    auto step = [&](const at::Tensor& v) { return nudge ? one_unit_off(v.to(dtype)) : v.to(dtype); };
    const at::Tensor xd = x.to(dtype), gd = go.to(dtype);
    const at::Tensor sg = step(at::sigmoid(xd)), rest = step(1 - sg), p = step(xd * rest), q = step(1 + p);
    return step(step(sg * q) * gd);
  };
  Chain c;
  c.gold = formula(x, go);
  c.reference = formula(x.to(at::kFloat), go.to(at::kFloat)).to(at::kDouble);
  c.rounded = formula(x.to(dtype).to(at::kFloat), go.to(dtype).to(at::kFloat)).to(at::kDouble);
  c.witness = op_by_op(false);
  c.target = op_by_op(true);
  return c;
}

}  // namespace

// An output the rounded baseline holds exactly (a gradient that is go times +-1): a kernel one unit
// off on every element is honest, and the RMSE rule allows the dtype's own rounding in aggregate,
// as the per-element rule does element by element. Old rule: the baseline RMSE was 0, so the RMSE
// rule failed the whole output. A planted 6% on every tenth element still fails.
TEST(ReducedPrecision, OneUnitOfRoundingEverywhereIsHonestInAggregate) {
  for (const auto dtype : kReduced) {
    SCOPED_TRACE(c10::toString(dtype));
    at::manual_seed(5);
    const at::Tensor gold = at::randn({64, 96}, at::kDouble).to(dtype).to(at::kDouble);
    const Tolerance tol = scaled_to_output(tolerance_for("activation", dtype), dtype, 1.0, "activation", "grad/x");
    const at::Tensor honest = one_unit_off(gold.to(dtype));
    const Attribution a = attribute_with_gold(gold, gold, honest, dtype, tol, gold);
    EXPECT_TRUE(a.rmse_ok) << a.rmse_target << " vs baseline " << a.baseline;
    EXPECT_TRUE(a.target_ok);
    at::Tensor wrong = honest.to(at::kDouble).clone();
    wrong.view({-1}).slice(0, 0, wrong.numel(), 10).mul_(1.06);
    EXPECT_FALSE(attribute_with_gold(gold, gold, wrong.to(dtype), dtype, tol, gold).target_ok);
  }
}

// A gradient that chains roundings (silu's, whose bracket cancels): the baseline, rounded once,
// does not show what the ops inside the bracket round, and a device that rounds each op faithfully
// has element errors beyond it. The CPU's own run in the dtype (the witness, on accelerator
// targets) shows them. Over 20 seeds: without the witness many seeds are flagged; with it at most a
// few seeds have one or two of 3,072 elements in the tail past the allowance (a false alarm we
// accept rather than widen the rule further). The witness excuses no bias and no wrong small
// element: a 3% scale and small elements 1.5x off are caught in every seed.
TEST(ReducedPrecision, TheCpuWitnessShowsWhatChainedRoundingHonestlyGives) {
  for (const auto dtype : kReduced) {
    SCOPED_TRACE(c10::toString(dtype));
    const Tolerance tol = scaled_to_output(tolerance_for("activation", dtype), dtype, 1.0, "activation", "grad/x");
    int flagged_without = 0, flagged_with = 0, scale_caught = 0, small_caught = 0;
    std::int64_t worst = 0;
    constexpr int kSeeds = 20;
    for (std::uint64_t seed = 1; seed <= kSeeds; ++seed) {
      const Chain c = silu_gradient(dtype, seed);
      flagged_without += !attribute_with_gold(c.gold, c.reference, c.target, dtype, tol, c.rounded).target_ok;
      const Attribution a = attribute_with_gold(c.gold, c.reference, c.target, dtype, tol, c.rounded, c.witness);
      flagged_with += !a.target_ok;
      EXPECT_TRUE(a.rmse_ok && a.bias_ok) << seed;
      worst = std::max(worst, a.bad_elements);
      const at::Tensor scaled = (c.target.to(at::kDouble) * 1.03).to(dtype);
      const Attribution s = attribute_with_gold(c.gold, c.reference, scaled, dtype, tol, c.rounded, c.witness);
      scale_caught += !s.target_ok && !s.bias_ok;
      at::Tensor small = c.target.to(at::kDouble);
      small = at::where(small.abs() < 0.02, small * 1.5, small).to(dtype);
      small_caught += !attribute_with_gold(c.gold, c.reference, small, dtype, tol, c.rounded, c.witness).target_ok;
    }
    EXPECT_GE(flagged_without, kSeeds / 3) << "without the witness the chain's rounding looks like a kernel error";
    EXPECT_LE(flagged_with, 3);
    EXPECT_LE(worst, 2);
    EXPECT_EQ(scale_caught, kSeeds);
    EXPECT_EQ(small_caught, kSeeds);
  }
}

// ---- 4: training state judged as a family -------------------------------------------------------

// Each rule's excess is its figure over its allowance: an output that keeps every rule is at most 1
// on each, and the planted small elements are past 1 on the element rule by the planted factor's
// order, in both dtypes.
TEST(TrainingFamily, ExcessFiguresFollowTheRules) {
  for (const auto dtype : kReduced) {
    SCOPED_TRACE(c10::toString(dtype));
    Four c = exp_case(dtype);
    const Tolerance tol = tolerance_for("activation", dtype);
    const Attribution honest = attribute_with_gold(c.gold, c.reference, c.target, dtype, tol, c.rounded);
    ASSERT_TRUE(honest.target_ok);
    for (double e : {honest.excess.rmse, honest.excess.element, honest.excess.band, honest.excess.bias}) {
      EXPECT_LE(e, 1.0);
      EXPECT_GE(e, 0.0);
    }
    const at::Tensor small = (c.gold > 0.08) & (c.gold < 0.125) & (at::arange(c.gold.numel(), at::kLong) % 16 == 0);
    c.target = at::where(small, c.rounded * (dtype == c10::kHalf ? 1.25 : 2.2), c.rounded).to(dtype);
    const Attribution planted = attribute_with_gold(c.gold, c.reference, c.target, dtype, tol, c.rounded);
    ASSERT_GT(planted.bad_elements, 0);
    EXPECT_GT(planted.excess.element, 1.0);
    EXPECT_LT(planted.excess.element, 1e3);
  }
}

// A family's scale: honest rounding of every element (each rounded to the dtype, a unit up or down
// at random) leaves the pooled RMS within kFamilyScale; a step 10% short, or 3% short, does not.
TEST(TrainingFamily, PooledScaleSeesAFactorAndNotRounding) {
  for (const auto dtype : kReduced) {
    SCOPED_TRACE(c10::toString(dtype));
    at::manual_seed(7);
    std::vector<std::pair<at::Tensor, at::Tensor>> honest, short10, short3;
    for (std::int64_t n : {4096, 100, 7, 65536}) {
      const at::Tensor w = (at::randn({n}, at::kFloat) * 1e-3).to(dtype);
      const double unit = 2 * unit_roundoff(dtype);
      const at::Tensor noise = at::where(at::rand({n}) < 0.5, 1.0 + unit, 1.0 - unit);
      honest.emplace_back(w, (w.to(at::kFloat) * noise).to(dtype));
      short10.emplace_back(w, (w.to(at::kFloat) * 0.9).to(dtype));
      short3.emplace_back(w, (w.to(at::kFloat) * 0.97).to(dtype));
    }
    EXPECT_NEAR(pooled_scale(honest), 1.0, kFamilyScale / 4);
    EXPECT_NEAR(pooled_scale(short10), 0.9, 0.01);
    EXPECT_GT(std::abs(pooled_scale(short3) - 1), kFamilyScale);
    EXPECT_TRUE(std::isnan(pooled_scale({})));
  }
}

// A float16 computation whose output is stored as float32 ((x * 1e-5).to(float16).to(float32) on a
// float16 target) rounds to float16's subnormals: an honest device that rounds a product the other
// way there is off by one float16 subnormal (2^-24), 100% of the smallest values. The rule measured
// the subnormal of the float32 storage (2^-149) and called it a mismatch; a value 64 subnormals off
// is still one.
TEST(ReducedPrecision, Float32OutputOfAFloat16ComputationRoundsAtFloat16Subnormals) {
  at::manual_seed(11);
  const at::Tensor x = at::randn({32, 48}, at::kDouble);
  // Every side runs the case's own cast: float64 gold rounds to float16 there too.
  const at::Tensor exact = x * 1e-5;
  const at::Tensor gold = exact.to(at::kHalf).to(at::kDouble);
  const at::Tensor reference = (x.to(at::kFloat) * 1e-5).to(at::kHalf).to(at::kFloat).to(at::kDouble);
  const double sub = std::ldexp(1.0, -24);
  // The other neighbour of the exact product on every fourth element: one float16 subnormal away.
  const at::Tensor flip = at::arange(gold.numel(), at::kLong).reshape(gold.sizes()) % 4 == 0;
  const at::Tensor honest = at::where(flip, reference + sub * at::sign(exact - reference + 1e-30), reference);
  const Tolerance tol = tolerance_for("conversion", c10::kHalf);
  const Attribution a =
      attribute_with_gold(gold, reference, honest.to(at::kFloat), c10::kHalf, tol, reference.to(at::kHalf));
  EXPECT_TRUE(a.target_ok) << a.bad_elements << " bad, band excess " << a.band_excess;
  const at::Tensor planted = at::where(flip & (gold.abs() < 1e-6), reference + 64 * sub, reference);
  ASSERT_GT((flip & (gold.abs() < 1e-6)).sum().item<std::int64_t>(), 0);
  EXPECT_FALSE(
      attribute_with_gold(gold, reference, planted.to(at::kFloat), c10::kHalf, tol, reference.to(at::kHalf)).target_ok);
}

// A softmax's rows sum to 1, so its honest errors sum to about 0 in every row however large each
// one is. The bias rule's standard error, taken as if every element's error were independent,
// overstated that many times: a witnessed bfloat16 softmax 3% too large (the sim's `scale` plant at
// --target sim) passed under a 6.6% allowance while the witness's own bias was 0.03%. With a
// witness, the spread of its errors' batch sums measures the standard error as the rows make it.
TEST(ReducedPrecision, AScaledSoftmaxIsCaughtThoughEachRowsErrorsCancel) {
  for (const auto dtype : kReduced) {
    SCOPED_TRACE(c10::toString(dtype));
    at::manual_seed(11);
    const at::Tensor gold = at::softmax(4 * at::randn({32, 100}, at::kDouble), -1);
    // An honest device: each element 20% off at random, each row renormalised (rows sum to 1).
    auto honest = [&] {
      const at::Tensor scattered = gold * (1 + 0.2 * at::randn({32, 100}, at::kDouble));
      return scattered / scattered.sum(-1, true);
    };
    const at::Tensor witness = honest(), device = honest();
    const at::Tensor reference = gold.to(at::kFloat).to(at::kDouble);
    const Tolerance tol = tolerance_for("softmax", dtype);
    auto judged = [&](const at::Tensor& target) {
      return attribute_with_gold(gold, reference, target.to(dtype), dtype, tol, reference, witness.to(dtype));
    };
    const Attribution scaled = judged(device * 1.03);
    EXPECT_FALSE(scaled.bias_ok) << "bias " << scaled.bias_target << " allowed " << scaled.bias_allowed;
    EXPECT_FALSE(scaled.target_ok);
    const Attribution fair = judged(device);
    EXPECT_TRUE(fair.bias_ok) << "bias " << fair.bias_target << " allowed " << fair.bias_allowed;
  }
}

// Logits from -100 to 100 rounded to bfloat16 (spacing 0.5 above 64) move a softmax down its columns
// by up to a quarter against float64, the same for every side that starts from the rounded inputs:
// the bias rule against float64 counted that as noise and allowed about 5%, so a softmax 3% too
// large passed. Against b (float32 from the same rounded inputs) it drops out, and the paired bias
// catches the scale while the honest device, a unit off here and there, stays inside it.
TEST(ReducedPrecision, AScaledSoftmaxOverCoarselyRoundedLogitsIsCaughtAgainstTheRoundedBaseline) {
  for (const auto dtype : kReduced) {
    SCOPED_TRACE(c10::toString(dtype));
    at::manual_seed(12);
    const at::Tensor x = 100 * (2 * at::rand({100, 32}, at::kDouble) - 1);
    const at::Tensor gold = at::softmax(x, 0);
    const at::Tensor reference = at::softmax(x.to(at::kFloat), 0).to(at::kDouble);
    const at::Tensor rounded = at::softmax(x.to(dtype).to(at::kFloat), 0);
    const at::Tensor witness = rounded.to(dtype);
    // An honest device: the witness with one element in three a unit of the dtype away.
    const at::Tensor unit = at::where(at::rand({100, 32}) < 1.0 / 3, 2 * unit_roundoff(dtype), 0.0);
    const at::Tensor device = (rounded * (1 + unit * at::where(at::rand({100, 32}) < 0.5, 1.0, -1.0))).to(dtype);
    const Tolerance tol = tolerance_for("softmax", dtype);
    auto judged = [&](const at::Tensor& target) {
      return attribute_with_gold(gold, reference, target, dtype, tol, rounded, witness);
    };
    const Attribution scaled = judged((rounded * 1.03).to(dtype));
    EXPECT_FALSE(scaled.bias_ok) << "paired " << scaled.paired_target << " allowed " << scaled.paired_allowed;
    // float16's spacing there is 1/16: the bias against float64 already catches it.
    if (dtype == c10::kBFloat16) {
      EXPECT_TRUE(scaled.paired_failed) << "bias " << scaled.bias_target << " allowed " << scaled.bias_allowed;
    }
    EXPECT_FALSE(scaled.target_ok);
    const Attribution fair = judged(device);
    EXPECT_TRUE(fair.bias_ok) << "paired " << fair.paired_target << " allowed " << fair.paired_allowed;
    if (!scaled.paired_failed) continue;
    // The witness here is that float32 result rounded once: the message says it gives it exactly,
    // not that it "is off by 0%".
    ASSERT_EQ(scaled.paired_honest, 0.0);
    OutputReport o;
    o.name = "out";
    o.ok = false;
    std::vector<OutputAttribution> failing{{&o, scaled}};
    Verdict v = judge_outputs({o});
    Fragile attribution = Fragile::Unknown;
    decide_attribution(failing, v, attribution);
    EXPECT_EQ(v.status, Status::Mismatch);
    EXPECT_NE(v.message.find("where the CPU's own bfloat16 run gives it exactly and honest rounding explains"),
              std::string::npos)
        << v.message;
    EXPECT_EQ(v.message.find("off by 0%"), std::string::npos) << v.message;
  }
}

namespace {

// One output judged as decide_attribution sees it on a witnessed target: compared with the plain
// tolerance, then against float64 with the rounded baseline and the CPU's own run in the dtype.
struct JudgedCase {
  Verdict verdict;
  Fragile attribution = Fragile::Unknown;
};

JudgedCase judge_witnessed(c10::ScalarType dtype, const std::vector<std::pair<std::string, at::Tensor>>& targets,
                           const std::vector<at::Tensor>& witnesses, const at::Tensor& gold) {
  const Tolerance tol = tolerance_for("elementwise", dtype);
  const at::Tensor reference = gold.to(at::kFloat);
  const at::Tensor rounded = gold.to(dtype).to(at::kFloat);
  std::vector<OutputReport> outputs;
  for (const auto& [name, target] : targets) outputs.push_back(compare_tensors(name, reference, target, tol, dtype));
  std::vector<OutputAttribution> failing;
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!outputs[i].ok)
      failing.push_back(
          {&outputs[i], attribute_with_gold(gold, reference, targets[i].second, dtype, tol, rounded, witnesses[i])});
  JudgedCase j;
  j.verdict = judge_outputs(outputs);
  decide_attribution(failing, j.verdict, j.attribution);
  return j;
}

at::Tensor with_nan_at(const at::Tensor& t, std::initializer_list<std::int64_t> at) {
  at::Tensor out = t.clone();
  for (const std::int64_t i : at) out.view({-1})[i] = std::numeric_limits<float>::quiet_NaN();
  return out;
}

}  // namespace

// float16 training with Adam turns NaN at its first step on the CPU as on any device (eps 1e-8
// underflows, and a zero second moment divides 0 by 0): a NaN the CPU's own run in the dtype gives
// at the same positions is still a finding, but the dtype's, and the message and attribution say
// so; a bug report against the target would be wrong. A NaN the witness does not share, at most
// of the positions, stays the target's, and so does a case with another output the target gets wrong.
TEST(ReducedPrecision, ANaNTheCpusOwnRunInTheDtypeSharesIsTheDtypesNotTheTargets) {
  for (const auto dtype : kReduced) {
    SCOPED_TRACE(c10::toString(dtype));
    at::manual_seed(5);
    const at::Tensor gold = at::rand({16, 16}, at::kDouble) + 0.5;
    const at::Tensor honest = gold.to(dtype).to(at::kFloat);
    const std::string named = dtype_name(dtype);

    const JudgedCase shared = judge_witnessed(dtype, {{"out", with_nan_at(honest, {3, 7, 11})}},
                                              {with_nan_at(honest, {3, 7, 11}).to(dtype)}, gold);
    EXPECT_EQ(shared.verdict.status, Status::Nan);
    EXPECT_EQ(shared.attribution, Fragile::Dtype) << shared.verdict.message;
    EXPECT_NE(
        shared.verdict.message.find("out: the CPU's own " + named + " run is NaN/Inf too at 3 of the 3 position(s)"),
        std::string::npos)
        << shared.verdict.message;

    // The witness finite there: the target's NaN.
    const JudgedCase own = judge_witnessed(dtype, {{"out", with_nan_at(honest, {3, 7, 11})}}, {honest.to(dtype)}, gold);
    EXPECT_EQ(own.verdict.status, Status::Nan);
    EXPECT_EQ(own.attribution, Fragile::Target) << own.verdict.message;
    EXPECT_EQ(own.verdict.message.find("hazard"), std::string::npos) << own.verdict.message;

    // The witness NaN at 1 of the target's 4 positions: still the target's.
    const JudgedCase few = judge_witnessed(dtype, {{"out", with_nan_at(honest, {3, 7, 11, 13})}},
                                           {with_nan_at(honest, {3}).to(dtype)}, gold);
    EXPECT_EQ(few.attribution, Fragile::Target) << few.verdict.message;

    // A shared NaN beside an output the target gets 3% wrong: the target's.
    const JudgedCase both = judge_witnessed(
        dtype, {{"loss", with_nan_at(honest, {3})}, {"param", (honest * 1.03).to(dtype).to(at::kFloat)}},
        {with_nan_at(honest, {3}).to(dtype), honest.to(dtype)}, gold);
    EXPECT_EQ(both.verdict.status, Status::Nan);
    EXPECT_EQ(both.attribution, Fragile::Target) << both.verdict.message;
  }
}

// Where float16/bfloat16 rounds terms that cancel (logcumsumexp's backward subtracts exponentials),
// an element's honest error is set by its terms, not its value: the CPU's bfloat16 run is off by
// up to 0.2 at elements below 1e-3 there. The witness and another honest device draw their errors from the same spread,
// element by element; where the witness happens to be nearly exact at a tiny element with large
// terms, the other device's ordinary error there was a finding, because the spread pooled from
// smaller magnitudes only. Honest errors that swamp the elements they fall on now set a noise floor
// for the elements below it. An element off by 10x the witness's worst error still fails.
TEST(ReducedPrecision, AnotherHonestDeviceWhereRoundedTermsCancelPassesAndTenTimesTheWorstDoesNot) {
  for (const auto dtype : kReduced) {
    SCOPED_TRACE(c10::toString(dtype));
    at::manual_seed(23);
    const std::int64_t n = 8192;
    const double u = unit_roundoff(dtype);
    // Results from 1e-4 to 10, and term sizes (what cancels) heavy-tailed and independent of them.
    const at::Tensor sign = at::where(at::rand({n}, at::kDouble) < 0.5, -1.0, 1.0);
    const at::Tensor gold = sign * at::pow(10.0, 5 * at::rand({n}, at::kDouble) - 4);
    at::Tensor terms = at::exp(1.5 * at::randn({n}, at::kDouble));
    // The element of smallest magnitude has large terms; the witness happens to be nearly exact there.
    const std::int64_t j = at::argmin(gold.abs()).item<std::int64_t>();
    terms[j] = terms.max().item<double>();
    at::Tensor z_witness = at::randn({n}, at::kDouble), z_device = at::randn({n}, at::kDouble);
    z_witness[j] = 0.01;
    z_device[j] = 2.0;
    auto side = [&](const at::Tensor& z) { return (gold + u * terms * z).to(dtype).to(at::kDouble); };
    const at::Tensor witness = side(z_witness), device = side(z_device);
    const at::Tensor reference = gold.to(at::kFloat).to(at::kDouble);
    const Tolerance tol = tolerance_for("reduction", dtype);
    const Attribution honest = attribute_with_gold(gold, reference, device, dtype, tol, reference, witness);
    EXPECT_TRUE(honest.target_ok) << honest.bad_elements << " bad, first " << honest.first_bad << " error "
                                  << std::abs(honest.target_value - honest.gold_value) << " allowed " << honest.allowed
                                  << "; bias " << honest.bias_ok << " band " << honest.band_ok << " rmse "
                                  << honest.rmse_ok;

    // Off by 10x the witness's worst error anywhere, at that element.
    const double worst = (witness - gold).abs().max().item<double>();
    at::Tensor planted = device.clone();
    planted[j] = gold[j].item<double>() + 10 * worst;
    const Attribution wrong = attribute_with_gold(gold, reference, planted, dtype, tol, reference, witness);
    EXPECT_FALSE(wrong.target_ok);
    EXPECT_EQ(wrong.first_bad, j);
  }
}

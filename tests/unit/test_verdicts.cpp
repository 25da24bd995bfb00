// Attribution with a float64 gold run, recommendations and baseline warnings.
#include "checks/compare.hpp"
#include "checks/errors.hpp"
#include "checks/verdict.hpp"
#include "checks/recommend.hpp"
#include "checks/tolerance.hpp"
#include "core/environment.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

using namespace mpscheck;

namespace {
at::Tensor gold_values() { return at::linspace(-2, 2, 1000, at::kDouble); }
}  // namespace

TEST(Attribution, TargetWorseThanFloat32Fails) {
  const at::Tensor g = gold_values();
  const at::Tensor ref = g + 1e-7;  // float32-sized error
  const at::Tensor tgt = g + 1e-3;  // far worse
  const auto a = attribute_with_gold(g, ref, tgt, c10::kFloat, Tolerance{0, 1e-9});
  EXPECT_FALSE(a.target_ok);
  EXPECT_NEAR(a.rmse_target, 1e-3, 1e-9);
  EXPECT_NEAR(a.rmse_reference, 1e-7, 1e-12);
}

TEST(Attribution, Float32FragileAndTargetCloseToGoldPasses) {
  const at::Tensor g = gold_values();
  const at::Tensor ref = g + 1e-3;  // float32 itself is off (e.g. catastrophic cancellation)
  const at::Tensor tgt = g + 1.5e-3;
  EXPECT_TRUE(attribute_with_gold(g, ref, tgt, c10::kFloat, Tolerance{0, 1e-9}).target_ok);
  EXPECT_FALSE(attribute_with_gold(g, ref, g + 3e-3, c10::kFloat, Tolerance{0, 1e-9}).target_ok);  // beyond 2x
}

TEST(Attribution, ReducedPrecisionIsJudgedAgainstWhatItsDtypeDelivers) {
  const at::Tensor g = gold_values();
  const at::Tensor ref = g.to(at::kFloat).to(at::kDouble);
  const at::Tensor bf16 = g.to(at::kBFloat16).to(at::kDouble);  // just the dtype's rounding
  EXPECT_FALSE(attribute_with_gold(g, ref, bf16, c10::kFloat, Tolerance{0, 1e-9}).target_ok);  // as if float32
  EXPECT_TRUE(attribute_with_gold(g, ref, bf16, c10::kBFloat16, Tolerance{0, 1e-9}).target_ok);
  EXPECT_FALSE(attribute_with_gold(g, ref, bf16 + 0.05, c10::kBFloat16, Tolerance{0, 1e-9}).target_ok);
}

TEST(Attribution, NanInTheTargetWhereGoldIsFiniteFails) {
  const at::Tensor g = gold_values();
  at::Tensor tgt = g.clone();
  tgt[10] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(attribute_with_gold(g, g, tgt, c10::kFloat, Tolerance{0, 1e-9}).target_ok);
}

TEST(Attribution, NanInTheReferenceOnlyBlamesFloat32) {
  const at::Tensor g = gold_values();
  at::Tensor ref = g.clone();
  ref[10] = std::numeric_limits<double>::infinity();
  const auto a = attribute_with_gold(g, ref, g + 1e-10, c10::kFloat, Tolerance{0, 1e-9});
  EXPECT_TRUE(std::isinf(a.rmse_reference));
  EXPECT_TRUE(a.target_ok);
}

TEST(Attribution, NanInGoldIsLeftOut) {
  at::Tensor g = gold_values();
  g[5] = std::numeric_limits<double>::quiet_NaN();
  at::Tensor ref = g + 1e-7, tgt = g + 1.5e-7;
  EXPECT_TRUE(attribute_with_gold(g, ref, tgt, c10::kFloat, Tolerance{0, 1e-12}).target_ok);
}

TEST(Attribution, WrongShapeIsTheTargetsFaultWithNoFigures) {
  // CPU bfloat16 conv_transpose3d in LibTorch 1.13 returns [1,4,2,3,3] for [1,4,7,9,9]: nothing
  // to take an RMSE of, so no figures may be reported, and the target is still not ok.
  const at::Tensor g = at::randn({1, 4, 7, 9, 9}, at::kDouble);
  const auto a =
      attribute_with_gold(g, g.to(at::kFloat), at::zeros({1, 4, 2, 3, 3}), c10::kBFloat16, Tolerance{0, 1e-5});
  EXPECT_FALSE(a.target_ok);
  EXPECT_FALSE(a.measured);
  EXPECT_TRUE(attribute_with_gold(g, g, g, c10::kFloat, Tolerance{0, 1e-9}).measured);
}

TEST(Recommendation, FollowsStatusAndSpeed) {
  CaseResult r;
  r.status = Status::Pass;
  r.speedup = 3.2;
  r.speed_class = SpeedClass::Faster;
  recommend(r);
  EXPECT_EQ(r.recommendation, Recommendation::Accelerate);
  EXPECT_NE(r.reason.find("3.20x faster"), std::string::npos);
  r.speed_class = SpeedClass::Similar;
  r.speedup = 1.02;
  recommend(r);
  EXPECT_EQ(r.recommendation, Recommendation::KeepOnCpu);
  r.status = Status::Mismatch;
  recommend(r);
  EXPECT_EQ(r.recommendation, Recommendation::Blocked);
}

TEST(Recommendation, ClassIsBlockedByAnyFinding) {
  std::vector<CaseResult> cases(3);
  cases[0].id = "op/conv/conv2d/f32/contiguous/forward";
  cases[0].recommendation = Recommendation::Accelerate;
  cases[1].id = "op/conv/conv3d/f32/contiguous/forward";
  cases[1].recommendation = Recommendation::Blocked;
  cases[2].id = "model/vae/train";
  cases[2].recommendation = Recommendation::Accelerate;
  const auto s = summarize_classes(cases);
  EXPECT_EQ(s.at("op/conv").recommendation(), "blocked");
  EXPECT_EQ(s.at("model/vae").recommendation(), "accelerate");
}

TEST(Attribution, RoundedInputBaselineForgivesPropagatedRounding) {
  const at::Tensor g = gold_values();
  const at::Tensor ref = g.to(at::kFloat).to(at::kDouble);
  // A result whose inputs were rounded to bfloat16: its error is several times gold's own rounding.
  const at::Tensor rounded = g + 0.02 * at::sin(g * 37);
  const at::Tensor target = g + 0.03 * at::sin(g * 37 + 1);
  EXPECT_FALSE(attribute_with_gold(g, ref, target, c10::kBFloat16, Tolerance{0, 1e-9}).target_ok);
  EXPECT_TRUE(attribute_with_gold(g, ref, target, c10::kBFloat16, Tolerance{0, 1e-9}, rounded).target_ok);
}

// ---- the per-element rule (issue 10): an RMSE never clears one wrong element ----------------

namespace {
// 2 * x over 256x256 in float64, its float32 reference, and a reduced-precision target that is
// the honest rounding of it, as a CPU float16/bfloat16 run gives.
struct Doubled {
  at::Tensor gold, reference, rounded, target;
};
Doubled doubled(c10::ScalarType dtype) {
  at::manual_seed(1);
  at::Tensor x = at::randn({256, 256}, at::kDouble);
  x[3][5] = 1.5;  // where errors are planted: 100 bfloat16 ulps there (1.56) are outside any plain tolerance
  const at::Tensor xr = x.to(dtype).to(at::kDouble);  // inputs rounded to the dtype
  return {x * 2, (x.to(at::kFloat) * 2).to(at::kDouble), xr * 2, (xr * 2).to(dtype)};
}
}  // namespace

TEST(Attribution, OneElementIn65536OffByOneIsCaughtAndNamed) {
  for (const auto dtype : {c10::kBFloat16, c10::kHalf}) {
    SCOPED_TRACE(c10::toString(dtype));
    Doubled d = doubled(dtype);
    const Tolerance tol = tolerance_for("model", dtype);
    ASSERT_TRUE(attribute_with_gold(d.gold, d.reference, d.target, dtype, tol, d.rounded).target_ok);
    d.target[3][5] += 1.0;
    const auto a = attribute_with_gold(d.gold, d.reference, d.target, dtype, tol, d.rounded);
    // The RMSE rule alone dilutes it by sqrt(n) (bfloat16); float16's baseline is small enough that,
    // with no fixed atol added to it any more (issue 22), the RMSE rule catches it as well.
    if (dtype == c10::kBFloat16) {
      EXPECT_TRUE(a.rmse_ok) << "the RMSE rule alone dilutes it by sqrt(n)";
    }
    EXPECT_FALSE(a.target_ok);
    EXPECT_EQ(a.bad_elements, 1);
    EXPECT_EQ(a.first_bad, 3 * 256 + 5);
    EXPECT_DOUBLE_EQ(a.gold_value, d.gold[3][5].item<double>());
  }
}

TEST(Attribution, OneElementOffBy100UlpIsCaught) {
  Doubled d = doubled(c10::kBFloat16);
  const double v = d.target[3][5].item<double>();
  d.target[3][5] += 100 * std::ldexp(1.0, std::ilogb(std::abs(v)) - 7);
  const auto a = attribute_with_gold(d.gold, d.reference, d.target, c10::kBFloat16,
                                     tolerance_for("model", c10::kBFloat16), d.rounded);
  EXPECT_FALSE(a.target_ok);
  EXPECT_EQ(a.first_bad, 3 * 256 + 5);
  // float32 target: 100 float32 ulps at one element of an elementwise op.
  at::Tensor t = d.reference.clone();
  const double r = t[7][7].item<double>();
  t[7][7] += 100 * std::ldexp(1.0, std::ilogb(std::abs(r)) - 23);
  const auto f = attribute_with_gold(d.gold, d.reference, t, c10::kFloat, Tolerance{0, 0});
  EXPECT_FALSE(f.target_ok);
  EXPECT_EQ(f.first_bad, 7 * 256 + 7);
}

TEST(Attribution, HonestReducedRoundingPassesEvenWithNoPlainTolerance) {
  for (const auto dtype : {c10::kBFloat16, c10::kHalf}) {
    const Doubled d = doubled(dtype);
    // No plain tolerance at all: every element is judged by the float64 rule alone.
    EXPECT_TRUE(attribute_with_gold(d.gold, d.reference, d.target, dtype, Tolerance{0, 0}, d.rounded).target_ok);
    EXPECT_TRUE(attribute_with_gold(d.gold, d.reference, d.target, dtype, Tolerance{0, 0}).target_ok);
  }
}

// float32 computed in another order (a GPU's blocking, a tree reduction) differs from the CPU's
// float32 by about as much as float32 differs from float64: judged element by element with no
// plain tolerance at all, it still passes.
TEST(Attribution, Float32AccumulationOrderDifferencesPass) {
  at::manual_seed(2);
  const at::Tensor a = at::randn({64, 4096}, at::kDouble), b = at::randn({4096, 64}, at::kDouble);
  const at::Tensor mm_gold = at::matmul(a, b);
  const at::Tensor mm_ref = at::matmul(a.to(at::kFloat), b.to(at::kFloat));
  const at::Tensor mm_tgt = at::matmul(a.flip(1).to(at::kFloat), b.flip(0).to(at::kFloat));
  ASSERT_FALSE(at::equal(mm_ref, mm_tgt));
  EXPECT_TRUE(attribute_with_gold(mm_gold, mm_ref, mm_tgt, c10::kFloat, Tolerance{0, 0}).target_ok);

  const at::Tensor x = at::randn({8, 64, 16, 16}, at::kDouble), w = at::randn({32, 64, 3, 3}, at::kDouble);
  const at::Tensor perm = at::randperm(64, at::kLong);
  const at::Tensor cv_gold = at::conv2d(x, w);
  const at::Tensor cv_ref = at::conv2d(x.to(at::kFloat), w.to(at::kFloat));
  const at::Tensor cv_tgt = at::conv2d(x.index_select(1, perm).to(at::kFloat), w.index_select(1, perm).to(at::kFloat));
  ASSERT_FALSE(at::equal(cv_ref, cv_tgt));
  EXPECT_TRUE(attribute_with_gold(cv_gold, cv_ref, cv_tgt, c10::kFloat, Tolerance{0, 0}).target_ok);

  const at::Tensor r = at::randn({256, 8192}, at::kDouble);
  const at::Tensor sum_ref = r.to(at::kFloat).sum(-1);
  const at::Tensor sum_tgt = r.to(at::kFloat).reshape({256, 64, 128}).sum(-1).sum(-1);  // a two-level tree
  ASSERT_FALSE(at::equal(sum_ref, sum_tgt));
  EXPECT_TRUE(attribute_with_gold(r.sum(-1), sum_ref, sum_tgt, c10::kFloat, Tolerance{0, 0}).target_ok);
}

// Catastrophic cancellation makes float32 the fragile side: the target that is closer to float64
// passes, the per-element rule included.
TEST(Attribution, Float32FragileStillPassesElementByElement) {
  at::manual_seed(3);
  const at::Tensor big = at::randn({4096}, at::kDouble) * 1e4;
  const at::Tensor small = at::randn({4096}, at::kDouble);
  const at::Tensor gold = (big + small) - big;  // = small in float64
  const at::Tensor ref = ((big.to(at::kFloat) + small.to(at::kFloat)) - big.to(at::kFloat)).to(at::kDouble);
  const at::Tensor tgt = small + (ref - small) * 0.5;  // half of float32's error at every element
  const auto a = attribute_with_gold(gold, ref, tgt, c10::kFloat, tolerance_for("elementwise", c10::kFloat));
  EXPECT_TRUE(a.target_ok);
  EXPECT_EQ(a.bad_elements, 0);
}

// Where large terms cancel to a small result (logcumsumexp's backward subtracts two exponentials),
// float32's honest errors are heavy-tailed: set by each element's terms, its largest error is tens
// of times its RMSE. Another honest float32 kernel, which rounds the larger term to its other
// float32 neighbour on every second element, lands where float32 itself happened to be exact at
// some elements: it must pass. An element off by 10x the largest error float32 shows anywhere in
// the output must not.
TEST(Attribution, AnotherHonestFloat32KernelWhereTermsCancelPassesAndTenTimesFloat32sWorstDoesNot) {
  at::manual_seed(11);
  const std::int64_t n = 4096;
  const at::Tensor x = at::randn({n}, at::kDouble);                   // the result
  const at::Tensor terms = at::exp(3 * at::randn({n}, at::kDouble));  // what cancels to it
  const at::Tensor a = terms + x;
  const at::Tensor gold = a - terms;
  const at::Tensor a32 = a.to(at::kFloat), terms32 = terms.to(at::kFloat);
  const at::Tensor ref = (a32 - terms32).to(at::kDouble);
  const at::Tensor toward =
      at::where(a32.to(at::kDouble) < a, at::full_like(a32, INFINITY), at::full_like(a32, -INFINITY));
  const at::Tensor pick = (at::arange(n) % 2).eq(0) & a32.to(at::kDouble).ne(a);
  const at::Tensor tgt = (at::where(pick, at::nextafter(a32, toward), a32) - terms32).to(at::kDouble);
  const Tolerance tol = tolerance_for("reduction", c10::kFloat);
  ASSERT_GT(((tgt - ref).abs() > tol.atol + tol.rtol * ref.abs()).sum().item<std::int64_t>(), 0);
  const double worst = (ref - gold).abs().max().item<double>();
  const double rmse = (ref - gold).pow(2).mean().sqrt().item<double>();
  ASSERT_GT(worst, 20 * rmse);  // heavy-tailed, as the case is
  Attribution a1 = attribute_with_gold(gold, ref, tgt, c10::kFloat, tol);
  EXPECT_TRUE(a1.target_ok) << a1.bad_elements << " bad, first " << a1.first_bad << " error "
                            << std::abs(a1.target_value - a1.gold_value) << " allowed " << a1.allowed;

  // An ordinary element (small terms) off by 10x float32's worst error anywhere.
  const std::int64_t j = at::argmin(terms).item<std::int64_t>();
  at::Tensor planted = tgt.clone();
  planted[j] += 10 * worst;
  const Attribution a2 = attribute_with_gold(gold, ref, planted, c10::kFloat, tol);
  EXPECT_FALSE(a2.target_ok);
  EXPECT_EQ(a2.first_bad, j);
  EXPECT_EQ(a2.bad_elements, 1);
}

// One non-finite element in the baseline (float32 overflows where float64 does not) used to make
// the baseline RMSE infinite, and then every target value passed.
TEST(Attribution, NonFiniteBaselineElementExcusesNoOtherElement) {
  at::Tensor g = at::linspace(-2, 2, 1000, at::kDouble);
  g[900] = 1e39;  // beyond float32
  const at::Tensor ref = g.to(at::kFloat).to(at::kDouble);
  ASSERT_TRUE(std::isinf(ref[900].item<double>()));
  at::Tensor tgt = ref.clone();
  tgt[7] += 0.25;
  auto a = attribute_with_gold(g, ref, tgt, c10::kFloat, Tolerance{1.3e-6, 1e-5});
  EXPECT_FALSE(a.target_ok);
  EXPECT_EQ(a.first_bad, 7);
  EXPECT_TRUE(std::isinf(a.rmse_reference));
  // Without the planted error, the target that overflows exactly where float32 does is fine.
  EXPECT_TRUE(attribute_with_gold(g, ref, ref.clone(), c10::kFloat, Tolerance{0, 0}).target_ok);

  // The same through the rounded baseline of a bfloat16 target.
  const at::Tensor g2 = at::linspace(-2, 2, 1000, at::kDouble);
  at::Tensor rounded = g2.clone();
  rounded[500] = std::numeric_limits<double>::infinity();
  at::Tensor t2 = g2.to(at::kBFloat16).to(at::kDouble);
  EXPECT_TRUE(attribute_with_gold(g2, g2, t2, c10::kBFloat16, Tolerance{0, 1e-9}, rounded).target_ok);
  t2[20] += 0.5;
  a = attribute_with_gold(g2, g2, t2, c10::kBFloat16, Tolerance{1.6e-2, 1e-5}, rounded);
  EXPECT_FALSE(a.target_ok);
  EXPECT_EQ(a.first_bad, 20);
}

TEST(Attribution, IntegerAndComplexOutputsAreNeverForgiven) {
  const at::Tensor i = at::arange(10, at::kLong);
  EXPECT_FALSE(attribute_with_gold(i, i, i + 1, c10::kBFloat16, Tolerance{0, 0}).measured);
  const at::Tensor c = at::complex(at::ones({4}, at::kDouble), at::ones({4}, at::kDouble));
  EXPECT_FALSE(attribute_with_gold(c, c, c, c10::kFloat, Tolerance{0, 0}).target_ok);
}

// ---- the decision: one place turns the figures into a verdict ---------------------------------

TEST(Decision, AttributionMessageNamesTheElementTheRuleCaught) {
  Doubled d = doubled(c10::kBFloat16);
  d.target[3][5] += 1.0;
  const Tolerance tol = tolerance_for("model", c10::kBFloat16);
  OutputReport o = compare_tensors("out", d.reference.to(at::kFloat), d.target, tol, c10::kBFloat16);
  ASSERT_FALSE(o.ok);
  Verdict v = judge_outputs({o});
  std::vector<OutputAttribution> failing{
      {&o, attribute_with_gold(d.gold, d.reference, d.target, c10::kBFloat16, tol, d.rounded)}};
  Fragile attribution = Fragile::Unknown;
  decide_attribution(failing, v, attribution);
  EXPECT_EQ(v.status, Status::Mismatch);
  EXPECT_EQ(attribution, Fragile::Target);
  EXPECT_NE(v.message.find("first at [3, 5]"), std::string::npos) << v.message;
  EXPECT_GT(o.rmse_target, 0);
}

TEST(Decision, AllOutputsWithinTheGoldRulesPassAsFloat32Fragile) {
  OutputReport o;
  o.name = "out";
  o.ok = false;
  Attribution a;
  a.measured = a.target_ok = a.rmse_ok = true;
  std::vector<OutputAttribution> failing{{&o, a}};
  Verdict v{Status::Mismatch, "out: 3 of 9 elements outside tolerance"};
  Fragile attribution = Fragile::Unknown;
  decide_attribution(failing, v, attribution);
  EXPECT_EQ(v.status, Status::Pass);
  EXPECT_EQ(attribution, Fragile::Float32);
  // An output with no gold figures (an integer, a missing output) keeps the finding.
  OutputReport exact;
  exact.name = "idx";
  exact.ok = false;
  failing.push_back({&exact, Attribution{}});
  v = {Status::Mismatch, "idx: 1 of 9 elements outside tolerance"};
  decide_attribution(failing, v, attribution);
  EXPECT_EQ(v.status, Status::Mismatch);
  EXPECT_EQ(attribution, Fragile::Target);
}

// Chaos: a failing output whose difference from the CPU's own run is within kChaosMultiplier times
// what that run moves by with its parameters and layers one unit away is not judged; a case of such outputs (and
// forgiven ones) is a skip, never a pass. A 10% scale error on a stable output stays a mismatch, and
// so does a chaotic output beside one that fails outright, or a target NaN the witness lacks.
TEST(Decision, AChaoticFirstStepIsASkipNeverAPass) {
  at::manual_seed(3);
  const at::Tensor w = at::randn({4096});
  auto failing_output = [](const std::string& name) {
    OutputReport o;
    o.name = name;
    o.ok = false;
    return o;
  };
  auto measured = [] {
    Attribution a;
    a.measured = true;
    a.dtype = "bfloat16";
    return a;
  };
  auto decide = [](std::vector<OutputAttribution>& failing, Fragile& attribution) {
    Verdict v{Status::Mismatch, "grad0/a: 900 of 4096 elements outside tolerance", "grad0/a"};
    decide_attribution(failing, v, attribution);
    return v;
  };
  // Chaotic: the nudged run lands 0.1 away (RMS), the target 0.15.
  const TensorsByName witness{{"grad0/a", w}, {"grad0/b", w}};
  const TensorsByName nudged{{"grad0/a", w + 0.1 * at::randn({4096})}, {"grad0/b", w + 1e-3 * at::randn({4096})}};
  OutputReport a = failing_output("grad0/a"), b = failing_output("grad0/b");
  std::vector<OutputAttribution> failing{{&a, measured()}};
  EXPECT_TRUE(mark_chaotic(failing, witness, nudged, {{"grad0/a", w + 0.15 * at::randn({4096})}}));
  Fragile attribution = Fragile::Float32;
  Verdict v = decide(failing, attribution);
  EXPECT_EQ(v.status, Status::Skip);
  EXPECT_EQ(attribution, Fragile::Unknown);
  EXPECT_NE(v.message.find("not judged: bfloat16 training"), std::string::npos) << v.message;

  // Stable (the nudged run 1e-3 away): a target 10% too small is no chaos, and stays a mismatch.
  failing = {{&b, measured()}};
  EXPECT_FALSE(mark_chaotic(failing, witness, nudged, {{"grad0/b", w * 0.9}}));
  EXPECT_EQ(decide(failing, attribution).status, Status::Mismatch);

  // As scattered as the nudged run, but 10% short as a whole: a scale, not chaos.
  failing = {{&a, measured()}};
  EXPECT_FALSE(mark_chaotic(failing, witness, nudged, {{"grad0/a", 0.9 * w + 0.1 * at::randn({4096})}}));
  EXPECT_EQ(decide(failing, attribution).status, Status::Mismatch);

  // One chaotic output beside one that fails outright: the case is a mismatch.
  failing = {{&a, measured()}, {&b, measured()}};
  mark_chaotic(failing, witness, nudged, {{"grad0/a", w + 0.15 * at::randn({4096})}, {"grad0/b", w * 0.9}});
  EXPECT_TRUE(failing[0].attribution.chaotic);
  EXPECT_FALSE(failing[1].attribution.chaotic);
  EXPECT_EQ(decide(failing, attribution).status, Status::Mismatch);

  // A NaN the witness does not have is never chaos, however close the rest.
  at::Tensor with_nan = w + 0.05 * at::randn({4096});
  with_nan[7] = std::numeric_limits<float>::quiet_NaN();
  failing = {{&a, measured()}};
  EXPECT_FALSE(mark_chaotic(failing, witness, nudged, {{"grad0/a", with_nan}}));
}

// A short optimizer step the dtype mostly rounds away (the seeds' DCGAN and LSTM at bfloat16: Adam
// moves weights of 0.02 by 1.6 spacings) passes every update's own float64 rule, because the CPU's
// own run loses as much against float64. The update family's scale, read where the dtype resolves
// the updates, still sees it: such a case is a mismatch naming the step, in both dtypes, and an
// honest device whose parameters land one spacing the other way is not.
TEST(Decision, AShortStepTheDtypeRoundsAwayIsStillAFinding) {
  for (const c10::ScalarType dtype : {c10::kBFloat16, c10::kHalf}) {
    SCOPED_TRACE(c10::toString(dtype));
    at::manual_seed(5);
    constexpr int64_t n = 1 << 16;
    const double lr = 2e-4;
    const at::Tensor before = (0.02 * at::randn({n})).to(dtype).to(at::kFloat);
    const at::Tensor step = lr * at::randn({n}).sign();  // Adam's first step: lr per element
    auto stepped = [&](const at::Tensor& from, double factor) {
      return (from + factor * step).to(dtype).to(at::kFloat);
    };
    const at::Tensor after = stepped(before, 1.0);
    // The nudged witness: every parameter one unit away, then the same step.
    const double unit = 2 * unit_roundoff(dtype);
    const at::Tensor moved = (before * (1 + unit * at::randn({n}).sign())).to(dtype).to(at::kFloat);
    // An honest device: 1 in 20 parameters lands one spacing away after the step.
    const at::Tensor spacing = at::exp2(at::floor(at::log2(after.abs().clamp_min(1e-30)))) * unit;
    const at::Tensor honest_after = after + spacing * at::randn({n}).sign() * (at::rand({n}) < 0.05);
    const TensorsByName witness{{"update/w", after - before}, {"param/w", after}};
    const TensorsByName nudged{{"update/w", stepped(moved, 1.0) - moved}, {"param/w", stepped(moved, 1.0)}};
    const std::map<std::string, Tolerance> tols{{"update/w", Tolerance{0.05, 0.05}}};
    auto judged = [&](const at::Tensor& target_update, std::string& note, const TensorsByName& nudged_run) {
      OutputReport o;
      o.name = "update/w";
      o.ok = false;
      Attribution forgiven;  // as every update's own rules forgave it on the seeds' networks
      forgiven.measured = forgiven.target_ok = true;
      forgiven.dtype = c10::toString(dtype);
      std::vector<OutputAttribution> failing{{&o, forgiven}};
      const TensorsByName target{{"update/w", target_update}};
      note = judge_training_family(failing, witness, nudged_run, target, tols, dtype, "the dtype");
      mark_chaotic(failing, witness, nudged_run, target);
      Verdict v{Status::Mismatch, "update/w: 900 of 65536 elements outside tolerance", "update/w"};
      Fragile attribution = Fragile::Unknown;
      decide_attribution(failing, v, attribution);
      return std::make_pair(v.status, failing[0].attribution.systematic);
    };
    std::string note;
    // The step 10% short, applied before the parameter is rounded (the sim's train-step plant).
    const at::Tensor short_update = stepped(before, 0.9) - before;
    EXPECT_EQ(judged(short_update, note, nudged), std::make_pair(Status::Mismatch, true));
    EXPECT_NE(note.find("parameter updates are"), std::string::npos) << note;
    EXPECT_NE(note.find("smaller"), std::string::npos) << note;
    EXPECT_EQ(judged(honest_after - before, note, nudged), std::make_pair(Status::Pass, false)) << note;
    EXPECT_EQ(judged(after - before, note, nudged), std::make_pair(Status::Pass, false)) << note;
    // A network so chaotic that its nudged witness's updates are 28% larger (efficientnet_b4 at
    // bfloat16, its layers nudged too): the short step's scale is within what chaos gives, and
    // every update's own rule forgave it. Nothing can judge it, so it is a skip, never a pass.
    const TensorsByName chaotic{{"update/w", stepped(moved, 1.28) - moved}, {"param/w", stepped(moved, 1.28)}};
    EXPECT_EQ(judged(short_update, note, chaotic), std::make_pair(Status::Skip, false)) << note;
  }
}

// float32: BERT's AdamW at 2e-5 moves a weight by 4e-5 in two steps, less than the train family's
// atol (1e-4), so every update passed by itself with the step 10% short (the sim's train-step plant
// at --target sim). The updates' scale as a family fails the largest, as a finding float64 cannot
// excuse. Honest differences do not: Adam turning a few near-zero gradients into whole steps of the
// other sign, or a unit of rounding on every element.
TEST(Decision, AFloat32StepShortAsAWholeIsAFindingBelowTheTrainAtol) {
  at::manual_seed(9);
  TensorsByName reference, target_short, target_flipped, target_rounded;
  std::vector<OutputReport> outputs;
  for (const char* name : {"a", "b", "c"}) {
    const at::Tensor param = 0.02 * at::randn({4096});
    const at::Tensor update = 4e-5 * at::randn({4096}).sign();
    const std::string u = std::string("update/") + name;
    reference[u] = update;
    reference[std::string("param/") + name] = param;
    target_short[u] = 0.9 * update;
    target_flipped[u] = at::where(at::rand({4096}) < 0.02, -update, update);
    target_rounded[u] = update + 4e-12 * at::randn({4096}).sign();
    OutputReport o;
    o.name = u;
    outputs.push_back(o);
  }
  auto judged = [&](const TensorsByName& target) {
    std::vector<OutputReport> out = outputs;
    judge_update_scale(reference, target, c10::kFloat, out);
    return std::count_if(out.begin(), out.end(), [](const OutputReport& o) { return !o.ok; });
  };
  std::vector<OutputReport> out = outputs;
  judge_update_scale(reference, target_short, c10::kFloat, out);
  const auto failed = std::find_if(out.begin(), out.end(), [](const OutputReport& o) { return !o.ok; });
  ASSERT_NE(failed, out.end());
  EXPECT_TRUE(failed->family_finding);
  EXPECT_NE(failed->note.find("parameter updates are 10% smaller"), std::string::npos) << failed->note;
  EXPECT_EQ(judged(target_short), 1);
  EXPECT_EQ(judged(target_flipped), 0);
  EXPECT_EQ(judged(target_rounded), 0);
  EXPECT_EQ(judged(reference), 0);
}

// The float64 figures quoted are those of the output the verdict leads with, as the verdict names
// it, never as its message text happens to begin.
TEST(Decision, TheQuotedOutputIsTheOneTheVerdictNamesNotTheMessagesFirstWord) {
  OutputReport a, b;
  a.name = "a";
  b.name = "b";
  a.ok = b.ok = false;
  Attribution wrong;
  wrong.measured = true;
  wrong.bias_ok = true;
  wrong.band_ok = true;
  wrong.bad_elements = 3;
  wrong.gold_value = 1.0;
  wrong.target_value = 1.5;
  std::vector<OutputAttribution> failing{{&a, wrong}, {&b, wrong}};
  Verdict v{Status::Mismatch, "a: looks like output a leads", "b"};
  Fragile attribution = Fragile::Unknown;
  decide_attribution(failing, v, attribution);
  EXPECT_EQ(attribution, Fragile::Target);
  EXPECT_NE(v.message.find("3 of b's elements"), std::string::npos) << v.message;
  EXPECT_EQ(v.message.find("of a's elements"), std::string::npos) << v.message;
}

// The verdict leads with the output whose finding it reports. lenet5's bfloat16 training with the
// step 10% short (the sim's train-step plant) led with its first-step gradient, the first output
// out of the plain tolerance, which honest bfloat16 rounding explains, and went on with the
// float64 figures of the update that failed, as if they were the gradient's.
TEST(Decision, AForgivenFirstOutputGivesTheLeadToTheOneThatFailed) {
  OutputReport grad, update;
  grad.name = "grad0/conv1.weight";
  update.name = "update/conv1.weight";
  for (OutputReport* o : {&grad, &update}) {
    o->ok = false;
    o->numel = 150;
    o->mismatches = 12;
    o->shape = {150};
    o->first_mismatch = 7;
  }
  Attribution honest;
  honest.measured = honest.target_ok = true;
  Attribution systematic;
  systematic.measured = systematic.systematic = true;
  systematic.bias_ok = systematic.band_ok = true;
  systematic.rmse_target = 1.18e-4;
  systematic.rmse_reference = 4.07e-9;
  std::vector<OutputAttribution> failing{{&grad, honest}, {&update, systematic}};
  Verdict v = judge_outputs({grad, update});
  ASSERT_EQ(v.output, grad.name);
  Fragile attribution = Fragile::Unknown;
  decide_attribution(failing, v, attribution);
  EXPECT_EQ(v.status, Status::Mismatch);
  EXPECT_EQ(attribution, Fragile::Target);
  EXPECT_EQ(v.output, update.name);
  EXPECT_EQ(v.message.rfind("update/conv1.weight: 12 of 150 elements outside tolerance", 0), 0u) << v.message;
  EXPECT_NE(v.message.find("the target's RMSE is 0.000118"), std::string::npos) << v.message;
  EXPECT_EQ(v.message.find("grad0/"), std::string::npos) << v.message;
  // A NaN verdict keeps its lead: the output that went non-finite is the finding.
  grad.nan_target = 3;
  v = judge_outputs({grad, update});
  decide_attribution(failing, v, attribution);
  EXPECT_EQ(v.status, Status::Nan);
  EXPECT_EQ(v.output, grad.name);
}

TEST(Decision, LayerDivergesUnlessFloat64ShowsFloat32IsTheFragileSide) {
  OutputReport bad;
  bad.ok = false;
  Attribution excused;
  excused.measured = excused.target_ok = true;
  EXPECT_TRUE(layer_diverges(bad, nullptr));
  const Attribution unmeasured;
  EXPECT_TRUE(layer_diverges(bad, &unmeasured));
  EXPECT_FALSE(layer_diverges(bad, &excused));
  OutputReport good;
  EXPECT_FALSE(layer_diverges(good, nullptr));
}

TEST(Decision, CpuFallbackWarningMakesAPassAFallback) {
  const std::string warning =
      "The operator 'aten::_linalg_eigh' is not currently supported on the MPS backend and will fall back to run on "
      "the CPU. This may have performance implications.";
  EXPECT_TRUE(is_fallback_warning(warning));
  EXPECT_FALSE(is_fallback_warning("Casting complex values to real discards the imaginary part"));
  Verdict v;
  apply_fallback({"something else", warning}, v);
  EXPECT_EQ(v.status, Status::Fallback);
  EXPECT_NE(v.message.find("aten::_linalg_eigh"), std::string::npos);
  Verdict wrong{Status::Mismatch, "out: wrong"};
  apply_fallback({warning}, wrong);
  EXPECT_EQ(wrong.status, Status::Mismatch);  // a wrong answer stays one
  EXPECT_NE(wrong.message.find("ran on the CPU"), std::string::npos);
  Verdict clean;
  apply_fallback({"an unrelated warning"}, clean);
  EXPECT_EQ(clean.status, Status::Pass);
}

TEST(Recommendation, FallbackIsKeptOnCpuAndNeverAccelerated) {
  CaseResult r;
  r.status = Status::Fallback;
  recommend(r);
  EXPECT_EQ(r.recommendation, Recommendation::KeepOnCpu);
  EXPECT_NE(r.reason.find("ran that on the CPU"), std::string::npos);
  EXPECT_TRUE(is_finding(Status::Fallback));
  EXPECT_EQ(status_from_string("fallback"), Status::Fallback);
}

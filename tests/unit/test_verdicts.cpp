// Attribution with a float64 gold run, recommendations and baseline warnings.
#include "checks/compare.hpp"
#include "checks/recommend.hpp"
#include "core/environment.hpp"

#include <gtest/gtest.h>

#include <limits>

using namespace mpscheck;

namespace {
at::Tensor gold_values() { return at::linspace(-2, 2, 1000, at::kDouble); }
}  // namespace

TEST(Attribution, TargetWorseThanFloat32Fails) {
  const at::Tensor g = gold_values();
  const at::Tensor ref = g + 1e-7;   // float32-sized error
  const at::Tensor tgt = g + 1e-3;   // far worse
  const auto a = attribute_with_gold(g, ref, tgt, c10::kFloat, 1e-9);
  EXPECT_FALSE(a.target_ok);
  EXPECT_NEAR(a.rmse_target, 1e-3, 1e-9);
  EXPECT_NEAR(a.rmse_reference, 1e-7, 1e-12);
}

TEST(Attribution, Float32FragileAndTargetCloseToGoldPasses) {
  const at::Tensor g = gold_values();
  const at::Tensor ref = g + 1e-3;  // float32 itself is off (e.g. catastrophic cancellation)
  const at::Tensor tgt = g + 1.5e-3;
  EXPECT_TRUE(attribute_with_gold(g, ref, tgt, c10::kFloat, 1e-9).target_ok);
  EXPECT_FALSE(attribute_with_gold(g, ref, g + 3e-3, c10::kFloat, 1e-9).target_ok);  // beyond 2x
}

TEST(Attribution, ReducedPrecisionIsJudgedAgainstWhatItsDtypeDelivers) {
  const at::Tensor g = gold_values();
  const at::Tensor ref = g.to(at::kFloat).to(at::kDouble);
  const at::Tensor bf16 = g.to(at::kBFloat16).to(at::kDouble);  // just the dtype's rounding
  EXPECT_FALSE(attribute_with_gold(g, ref, bf16, c10::kFloat, 1e-9).target_ok);  // as if float32
  EXPECT_TRUE(attribute_with_gold(g, ref, bf16, c10::kBFloat16, 1e-9).target_ok);
  EXPECT_FALSE(attribute_with_gold(g, ref, bf16 + 0.05, c10::kBFloat16, 1e-9).target_ok);
}

TEST(Attribution, NanInTheTargetWhereGoldIsFiniteFails) {
  const at::Tensor g = gold_values();
  at::Tensor tgt = g.clone();
  tgt[10] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(attribute_with_gold(g, g, tgt, c10::kFloat, 1e-9).target_ok);
}

TEST(Attribution, NanInTheReferenceOnlyBlamesFloat32) {
  const at::Tensor g = gold_values();
  at::Tensor ref = g.clone();
  ref[10] = std::numeric_limits<double>::infinity();
  const auto a = attribute_with_gold(g, ref, g + 1e-9, c10::kFloat, 1e-9);
  EXPECT_TRUE(std::isinf(a.rmse_reference));
  EXPECT_TRUE(a.target_ok);
}

TEST(Attribution, NanInGoldIsLeftOut) {
  at::Tensor g = gold_values();
  g[5] = std::numeric_limits<double>::quiet_NaN();
  at::Tensor ref = g + 1e-7, tgt = g + 1.5e-7;
  EXPECT_TRUE(attribute_with_gold(g, ref, tgt, c10::kFloat, 1e-12).target_ok);
}

TEST(Attribution, WrongShapeIsTheTargetsFaultWithNoFigures) {
  // CPU bfloat16 conv_transpose3d in LibTorch 1.13 returns [1,4,2,3,3] for [1,4,7,9,9]: nothing
  // to take an RMSE of, so no figures may be reported, and the target is still not ok.
  const at::Tensor g = at::randn({1, 4, 7, 9, 9}, at::kDouble);
  const auto a = attribute_with_gold(g, g.to(at::kFloat), at::zeros({1, 4, 2, 3, 3}), c10::kBFloat16, 1e-5);
  EXPECT_FALSE(a.target_ok);
  EXPECT_FALSE(a.measured);
  EXPECT_TRUE(attribute_with_gold(g, g, g, c10::kFloat, 1e-9).measured);
}

TEST(Recommendation, FollowsStatusAndSpeed) {
  CaseResult r;
  r.status = Status::Pass;
  r.speedup = 3.2;
  r.speed_class = "faster";
  recommend(r);
  EXPECT_EQ(r.recommendation, "accelerate");
  EXPECT_NE(r.reason.find("3.20x faster"), std::string::npos);
  r.speed_class = "similar";
  r.speedup = 1.02;
  recommend(r);
  EXPECT_EQ(r.recommendation, "keep on CPU");
  r.status = Status::Mismatch;
  recommend(r);
  EXPECT_EQ(r.recommendation, "blocked");
}

TEST(Recommendation, ClassIsBlockedByAnyFinding) {
  std::vector<CaseResult> cases(3);
  cases[0].id = "op/conv/conv2d/f32/contiguous/forward";
  cases[0].recommendation = "accelerate";
  cases[1].id = "op/conv/conv3d/f32/contiguous/forward";
  cases[1].recommendation = "blocked";
  cases[2].id = "model/vae/train";
  cases[2].recommendation = "accelerate";
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
  EXPECT_FALSE(attribute_with_gold(g, ref, target, c10::kBFloat16, 1e-9).target_ok);
  EXPECT_TRUE(attribute_with_gold(g, ref, target, c10::kBFloat16, 1e-9, rounded).target_ok);
}

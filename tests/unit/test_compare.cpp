#include "checks/compare.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace mpscheck;

namespace {
const Tolerance kTol{1e-5, 1e-6};
}

TEST(Compare, IdenticalTensorsPass) {
  const at::Tensor a = at::arange(12, at::kFloat).reshape({3, 4});
  const auto r = compare_tensors("out", a, a.clone(), kTol);
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.mismatches, 0);
  EXPECT_EQ(r.max_abs, 0);
  EXPECT_EQ(r.numel, 12);
  EXPECT_EQ(judge_outputs({r}).status, Status::Pass);
}

TEST(Compare, IdenticalOutputsStillCountTheirInfinitiesAndNans) {
  at::Tensor a = at::arange(6, at::kFloat);
  a[1] = std::numeric_limits<float>::infinity();
  const auto with_inf = compare_tensors("out", a, a.clone(), kTol);
  EXPECT_TRUE(with_inf.ok);
  EXPECT_EQ(with_inf.inf_reference, 1);
  EXPECT_EQ(with_inf.inf_target, 1);
  EXPECT_EQ(with_inf.max_abs, 0);
  a[4] = std::nanf("");
  const auto with_nan = compare_tensors("out", a, a.clone(), kTol);
  EXPECT_TRUE(with_nan.ok);
  EXPECT_EQ(with_nan.nan_reference, 1);
  EXPECT_EQ(with_nan.nan_target, 1);
  EXPECT_EQ(with_nan.inf_reference, 1);
}

// Outputs are compared in chunks of 2^20 elements: counts add up, the first mismatch and the worst
// element keep their global index across chunk boundaries.
TEST(Compare, LargeOutputsKeepGlobalIndicesAcrossChunks) {
  const int64_t n = (int64_t{1} << 20) * 3 + 17;
  const at::Tensor ref = at::ones({n});
  at::Tensor tgt = ref.clone();
  tgt[(int64_t{1} << 20) + 5] = 1.25;                // first bad, in the second chunk
  tgt[(int64_t{1} << 21) + 9] = 3.0;                 // the worst, in the third
  tgt[n - 1] = std::numeric_limits<float>::quiet_NaN();  // in the short last chunk
  const auto r = compare_tensors("out", ref, tgt, kTol);
  EXPECT_EQ(r.numel, n);
  EXPECT_EQ(r.mismatches, 3);
  EXPECT_EQ(r.first_mismatch, (int64_t{1} << 20) + 5);
  EXPECT_DOUBLE_EQ(r.max_abs, 2.0);
  EXPECT_DOUBLE_EQ(r.max_rel, 2.0);
  EXPECT_DOUBLE_EQ(r.target_value, 3.0);
  EXPECT_EQ(r.nan_target, 1);
  EXPECT_EQ(r.nan_reference, 0);
  EXPECT_EQ(judge_outputs({r}).status, Status::Nan);
}

TEST(Compare, OneWrongElementIsFoundWithItsIndexAndError) {
  const at::Tensor ref = at::ones({4, 5});
  at::Tensor tgt = ref.clone();
  tgt[2][3] = 1.5;
  const auto r = compare_tensors("out", ref, tgt, kTol);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.mismatches, 1);
  EXPECT_EQ(r.first_mismatch, 2 * 5 + 3);
  EXPECT_DOUBLE_EQ(r.max_abs, 0.5);
  EXPECT_DOUBLE_EQ(r.max_rel, 0.5);
  EXPECT_DOUBLE_EQ(r.reference_value, 1.0);
  EXPECT_DOUBLE_EQ(r.target_value, 1.5);
  const auto v = judge_outputs({r});
  EXPECT_EQ(v.status, Status::Mismatch);
  EXPECT_NE(v.message.find("[2, 3]"), std::string::npos) << v.message;
}

TEST(Compare, DifferencesInsideToleranceAreAccepted) {
  const at::Tensor ref = at::full({8}, 100.0);
  const at::Tensor tgt = ref + 100.0 * 0.5e-5;  // rtol 1e-5 allows 1e-3 at 100
  EXPECT_TRUE(compare_tensors("out", ref, tgt, kTol).ok);
  EXPECT_FALSE(compare_tensors("out", ref, ref + 2e-3, kTol).ok);
}

TEST(Compare, NanOnTheTargetOnlyIsANanVerdict) {
  const at::Tensor ref = at::ones({6});
  at::Tensor tgt = ref.clone();
  tgt[1] = std::numeric_limits<float>::quiet_NaN();
  tgt[4] = std::numeric_limits<float>::infinity();
  const auto r = compare_tensors("loss", ref, tgt, kTol);
  EXPECT_EQ(r.nan_target, 1);
  EXPECT_EQ(r.inf_target, 1);
  EXPECT_EQ(r.nan_reference, 0);
  EXPECT_EQ(r.mismatches, 2);
  EXPECT_EQ(judge_outputs({r}).status, Status::Nan);
}

TEST(Compare, MatchingNonFiniteValuesAgree) {
  at::Tensor ref = at::ones({4});
  ref[0] = std::numeric_limits<float>::quiet_NaN();
  ref[1] = -std::numeric_limits<float>::infinity();
  EXPECT_TRUE(compare_tensors("out", ref, ref.clone(), kTol).ok);
  at::Tensor flipped = ref.clone();
  flipped[1] = std::numeric_limits<float>::infinity();  // -inf vs +inf disagree
  EXPECT_FALSE(compare_tensors("out", ref, flipped, kTol).ok);
}

TEST(Compare, ShapeDifferenceIsAMismatchWithANote) {
  const auto r = compare_tensors("out", at::zeros({2, 3}), at::zeros({3, 2}), kTol);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.note.find("shape differs"), std::string::npos);
  EXPECT_EQ(judge_outputs({r}).status, Status::Mismatch);
}

TEST(Compare, MissingOutputIsAMismatch) {
  const auto r = compare_tensors("grad/x", at::zeros({2}), at::Tensor(), kTol);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(judge_outputs({r}).status, Status::Mismatch);
}

TEST(Compare, ReducedPrecisionTargetIsComparedInDouble) {
  const at::Tensor ref = at::linspace(-3, 3, 50);
  const at::Tensor tgt = ref.to(at::kBFloat16);
  EXPECT_FALSE(compare_tensors("out", ref, tgt, kTol).ok);
  EXPECT_TRUE(compare_tensors("out", ref, tgt, Tolerance{1.6e-2, 1e-5}).ok);
}

TEST(Compare, IntegersCompareExactly) {
  const at::Tensor ref = at::arange(10, at::kLong);
  at::Tensor tgt = ref.clone();
  EXPECT_TRUE(compare_tensors("out", ref, tgt, Tolerance{0, 0}).ok);
  tgt[9] = 10;
  EXPECT_EQ(compare_tensors("out", ref, tgt, Tolerance{0, 0}).mismatches, 1);
}

TEST(Compare, FirstBadOutputNamesTheVerdict) {
  const at::Tensor a = at::ones({3});
  const auto good = compare_tensors("loss/step0", a, a, kTol);
  const auto bad = compare_tensors("loss/step1", a, a * 2, kTol);
  const auto worse = compare_tensors("loss/step2", a, a * 3, kTol);
  const auto v = judge_outputs({good, bad, worse});
  EXPECT_EQ(v.status, Status::Mismatch);
  EXPECT_EQ(v.message.rfind("loss/step1", 0), 0u) << v.message;
}

TEST(Compare, BlowUpNamesWhereTheLossLeftToleranceAndWhereItWentNonFinite) {
  // The seeds' VAE on MPS: 550.8 -> 4705 -> 1.8e8 -> NaN while the CPU trained normally.
  const double ref[] = {550.8, 330.6, 250.1, 201.7}, tgt[] = {550.8, 4705, 1.8e8, std::nan("")};
  std::vector<OutputReport> steps;
  for (int s = 0; s < 4; ++s)
    steps.push_back(compare_tensors("loss/step" + std::to_string(s), at::full({}, ref[s]), at::full({}, tgt[s]), kTol));
  const auto v = judge_outputs(steps);
  EXPECT_EQ(v.status, Status::Nan);
  EXPECT_EQ(v.message.rfind("loss/step3: target has 1 NaN", 0), 0u) << v.message;
  EXPECT_NE(v.message.find("first left tolerance at loss/step1: reference 330.6, target 4705"), std::string::npos)
      << v.message;
}

TEST(ExceptionClassification, NotImplementedIsUnsupported) {
  EXPECT_EQ(classify_exception("\"slow_conv2d_cpu\" not implemented for 'Half'"), Status::Unsupported);
  EXPECT_EQ(classify_exception("The operator 'aten::foo' is not currently implemented for the MPS device"),
            Status::Unsupported);
  EXPECT_EQ(classify_exception("Could not run 'aten::bar' with arguments from the 'MPS' backend"), Status::Unsupported);
  EXPECT_EQ(classify_exception("MPS does not support cumsum op with int64 input"), Status::Unsupported);
  EXPECT_EQ(classify_exception("shape mismatch: value tensor of shape [3]"), Status::Error);
}

TEST(ExceptionClassification, MessagesAreOneTidyLine) {
  EXPECT_EQ(tidy_exception_message("bad thing\nException raised from foo at bar.cpp:1\nframe #0"), "bad thing");
  EXPECT_EQ(tidy_exception_message(std::string(1000, 'x')).size(), 400u);
}

TEST(ExceptionClassification, DtypeGapsPhrasedAsTypeErrorsAreUnsupported) {
  EXPECT_EQ(classify_exception("expected scalar type ComplexDouble but found ComplexFloat"), Status::Unsupported);
  EXPECT_EQ(classify_exception("Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int"),
            Status::Unsupported);
}

#include "checks/compare.hpp"
#include "checks/verdict.hpp"

#include <nlohmann/json.hpp>

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
  EXPECT_TRUE(compare_tensors("out", ref, tgt, Tolerance{1.6e-2, 1e-5}, c10::kBFloat16).ok);
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
  EXPECT_EQ(tidy_exception_message(std::string(1000, 'x')), std::string(399, 'x') + "\xE2\x80\xA6");  // 400 code points
}

TEST(ExceptionClassification, DtypeGapsPhrasedAsTypeErrorsAreUnsupported) {
  EXPECT_EQ(classify_exception("expected scalar type ComplexDouble but found ComplexFloat"), Status::Unsupported);
  EXPECT_EQ(classify_exception("Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int"),
            Status::Unsupported);
}

// ---- exact where exactness is the contract (issue 10) -----------------------------------------

TEST(Compare, IntegerOutputsAreExactWhateverTheTolerance) {
  const at::Tensor ref = at::arange(4096, at::kLong);
  at::Tensor tgt = ref.clone();
  tgt[4095] += 1;
  const auto r = compare_tensors("out", ref, tgt, Tolerance{1.6e-2, 1e-2}, c10::kBFloat16);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.mismatches, 1);
  EXPECT_EQ(r.first_mismatch, 4095);
  EXPECT_EQ(r.rule, "exact");
  const at::Tensor mask = at::arange(100, at::kLong).remainder(3).eq(0);
  at::Tensor flipped = mask.clone();
  flipped[50] = !flipped[50].item<bool>();
  EXPECT_EQ(compare_tensors("mask", mask, flipped, Tolerance{0.5, 0.5}).mismatches, 1);
}

TEST(Compare, Int64BeyondTwoToThe53IsStillExact) {
  const at::Tensor ref = at::full({4}, (int64_t{1} << 60) + 1, at::kLong);
  at::Tensor tgt = ref.clone();
  tgt[2] += 1;  // equal once rounded through double
  EXPECT_EQ(compare_tensors("out", ref, tgt, Tolerance{0, 0}).mismatches, 1);
}

TEST(Compare, OutputDtypeIsPartOfTheResult) {
  const at::Tensor ref = at::arange(16, at::kLong);
  const auto r = compare_tensors("out", ref, ref.to(at::kInt), Tolerance{0, 0}, c10::kBFloat16);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.mismatches, 0);
  const auto v = judge_outputs({r});
  EXPECT_EQ(v.status, Status::Mismatch);
  EXPECT_NE(v.message.find("dtype differs: reference Long vs target Int"), std::string::npos) << v.message;
  // The floating dtype a reduced-precision target asks for is not a finding; another one is.
  const at::Tensor f = at::linspace(-1, 1, 16);
  EXPECT_TRUE(compare_tensors("out", f, f.to(at::kBFloat16), Tolerance{1.6e-2, 1e-5}, c10::kBFloat16).ok);
  EXPECT_FALSE(compare_tensors("out", f, f.to(at::kHalf), Tolerance{1.6e-2, 1e-5}, c10::kBFloat16).ok);
  EXPECT_FALSE(compare_tensors("out", f, f.to(at::kDouble), Tolerance{1.6e-2, 1e-5}, c10::kFloat).ok);
  EXPECT_FALSE(compare_tensors("out", f, f.to(at::kBFloat16), Tolerance{1.6e-2, 1e-5}).ok);
}

TEST(Compare, ComplexOutputsCompareBothPartsWithoutThrowing) {
  const at::Tensor re = at::linspace(-1, 1, 32), im = at::linspace(2, 3, 32);
  const at::Tensor ref = at::complex(re, im);
  at::Tensor im2 = im.clone();
  im2[9] += 0.5;
  const auto r = compare_tensors("out", ref, at::complex(re, im2), kTol);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.mismatches, 1);
  EXPECT_EQ(r.first_mismatch, 9);
  EXPECT_NEAR(r.max_abs, 0.5, 1e-6);
  EXPECT_NE(r.note.find("i"), std::string::npos) << r.note;
  EXPECT_TRUE(compare_tensors("out", ref, ref.clone(), kTol).ok);
  EXPECT_EQ(judge_outputs({r}).status, Status::Mismatch);
}

TEST(CompareIndex, TiedIndicesPassAndAWrongOneFailsByWhatItSelects) {
  // Row 0 has a tie between columns 1 and 3; row 1 does not.
  const at::Tensor x = at::tensor({0.0, 5.0, 1.0, 5.0, 2.0, 0.5, 7.0, 1.0}, at::kFloat).reshape({2, 4});
  const at::Tensor ref = at::tensor({int64_t{1}, int64_t{2}}, at::kLong);
  const at::Tensor tie = at::tensor({int64_t{3}, int64_t{2}}, at::kLong);
  const at::Tensor wrong = at::tensor({int64_t{1}, int64_t{3}}, at::kLong);
  const auto t = compare_index("out", ref, tie, x, -1, false);
  EXPECT_TRUE(t.ok) << t.note;
  EXPECT_EQ(t.rule, "index");
  const auto w = compare_index("out", ref, wrong, x, -1, false);
  EXPECT_FALSE(w.ok);
  EXPECT_EQ(w.first_mismatch, 1);
  EXPECT_NE(w.note.find("selects"), std::string::npos) << w.note;
  const auto out_of_range = compare_index("out", ref, at::tensor({int64_t{1}, int64_t{4}}, at::kLong), x, -1, false);
  EXPECT_FALSE(out_of_range.ok);
  EXPECT_NE(out_of_range.note.find("out of range"), std::string::npos);
  // Flattened (argmax over all elements) and same-rank (sort's indices) forms.
  EXPECT_TRUE(compare_index("out", at::scalar_tensor(1, at::kLong), at::scalar_tensor(3, at::kLong),
                            x.reshape({-1}).slice(0, 0, 4), 0, true).ok);
  const at::Tensor sorted_ref = at::tensor({int64_t{0}, int64_t{2}, int64_t{1}, int64_t{3}}, at::kLong).reshape({1, 4});
  const at::Tensor sorted_tie = at::tensor({int64_t{0}, int64_t{2}, int64_t{3}, int64_t{1}}, at::kLong).reshape({1, 4});
  EXPECT_TRUE(compare_index("out", sorted_ref, sorted_tie, x.slice(0, 0, 1), -1, false).ok);
  EXPECT_FALSE(compare_index("out", sorted_ref, sorted_ref.flip(-1), x.slice(0, 0, 1), -1, false).ok);
  EXPECT_FALSE(compare_index("out", ref, tie.to(at::kInt), x, -1, false).ok);  // dtype still counts
}

TEST(CompareStatistics, ToleranceIsSigmasTimesTheStandardError) {
  const at::Tensor ref = at::tensor({0.30, 0.21}, at::kDouble), se = at::tensor({1e-3, 1e-3}, at::kDouble);
  // 6 sigmas of the difference of two samples: 6 * sqrt(2) * 1e-3 = 8.5e-3.
  EXPECT_TRUE(compare_statistics("out", ref, ref + 8e-3, se, se, 6, 1e-7).ok);
  const auto r = compare_statistics("out", ref, at::tensor({0.31, 0.21}, at::kDouble), se, se, 6, 1e-7);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.first_mismatch, 0);
  EXPECT_EQ(r.rule, "statistics");
  EXPECT_NE(r.note.find("standard errors"), std::string::npos) << r.note;
  // A zero-error statistic (a count that must be exact) only has the rounding allowance.
  const at::Tensor zero = at::zeros({2}, at::kDouble);
  EXPECT_FALSE(compare_statistics("out", ref, ref + 1e-4, zero, zero, 6, 1e-7).ok);
}

TEST(ExceptionClassification, TorchScriptErrorsKeepTheirCause) {
  const std::string jit =
      "The following operation failed in the TorchScript interpreter.\n"
      "Traceback of TorchScript (most recent call last):\n"
      "  File \"m.py\", line 6, in forward\n"
      "        if x.dtype == torch.float16:\n"
      "            y = torch.linalg.cholesky(y)\n"
      "                ~~~~~~~~~~~~~~~~~~~~~ <--- HERE\n"
      "        return y\n"
      "RuntimeError: \"cholesky_cpu\" not implemented for 'Half'\n";
  const std::string m = tidy_exception_message(jit);
  EXPECT_NE(m.find("not implemented for 'Half'"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos);
  EXPECT_EQ(classify_exception(m), Status::Unsupported);
}

TEST(ExceptionClassification, MessagesAreValidUtf8CutOnACharacterBoundary) {
  std::string long_message = "bad \xFF\xFE bytes ";
  for (int i = 0; i < 500; ++i) long_message += "\xE2\x82\xAC";  // "€", three bytes each
  const std::string m = tidy_exception_message(long_message);
  EXPECT_EQ(m.rfind("bad \xEF\xBF\xBD", 0), 0u) << "invalid bytes become U+FFFD";
  EXPECT_EQ(m.substr(m.size() - 3), "\xE2\x80\xA6");
  EXPECT_NO_THROW(nlohmann::json(m).dump());
  // Raw, the same text makes nlohmann's strict writer throw: what used to take the worker down.
  EXPECT_THROW(nlohmann::json(long_message).dump(), nlohmann::json::type_error);
}

TEST(CaseResultJson, InvalidBytesAnywhereNeverMakeTheWriterThrow) {
  CaseResult r;
  r.id = "op/x/\xFF";
  r.message = "cut \xE2\x82";
  r.warnings = {"target: \xC0\xAF"};
  r.tags = {"\xFE"};
  OutputReport o;
  o.name = "out\xFF";
  o.note = "\xED\xA0\x80";  // a surrogate
  r.outputs.push_back(o);
  std::string text;
  ASSERT_NO_THROW(text = nlohmann::json(r).dump());
  const CaseResult back = nlohmann::json::parse(text).get<CaseResult>();
  EXPECT_EQ(back.id, "op/x/\xEF\xBF\xBD");
  EXPECT_EQ(back.warnings.size(), 1u);
}

#include "checks/compare.hpp"
#include "checks/verdict.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

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
  tgt[(int64_t{1} << 20) + 5] = 1.25;                    // first bad, in the second chunk
  tgt[(int64_t{1} << 21) + 9] = 3.0;                     // the worst, in the third
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

// ---- exact where exactness is the contract (issue 10) -----------------------------------------

TEST(Compare, IntegerOutputsAreExactWhateverTheTolerance) {
  const at::Tensor ref = at::arange(4096, at::kLong);
  at::Tensor tgt = ref.clone();
  tgt[4095] += 1;
  const auto r = compare_tensors("out", ref, tgt, Tolerance{1.6e-2, 1e-2}, c10::kBFloat16);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.mismatches, 1);
  EXPECT_EQ(r.first_mismatch, 4095);
  EXPECT_EQ(r.rule, Rule::Exact);
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
  EXPECT_NE(v.message.find("dtype differs: reference int64 vs target int32"), std::string::npos) << v.message;
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
  EXPECT_EQ(t.rule, Rule::Index);
  const auto w = compare_index("out", ref, wrong, x, -1, false);
  EXPECT_FALSE(w.ok);
  EXPECT_EQ(w.first_mismatch, 1);
  EXPECT_NE(w.note.find("selects"), std::string::npos) << w.note;
  const auto out_of_range = compare_index("out", ref, at::tensor({int64_t{1}, int64_t{4}}, at::kLong), x, -1, false);
  EXPECT_FALSE(out_of_range.ok);
  EXPECT_NE(out_of_range.note.find("out of range"), std::string::npos);
  // Flattened (argmax over all elements) and same-rank (sort's indices) forms.
  EXPECT_TRUE(compare_index("out", at::scalar_tensor(1, at::kLong), at::scalar_tensor(3, at::kLong),
                            x.reshape({-1}).slice(0, 0, 4), 0, true)
                  .ok);
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
  EXPECT_EQ(r.rule, Rule::Statistics);
  EXPECT_NE(r.note.find("standard errors"), std::string::npos) << r.note;
  // A zero-error statistic (a count that must be exact) only has the rounding allowance.
  const at::Tensor zero = at::zeros({2}, at::kDouble);
  EXPECT_FALSE(compare_statistics("out", ref, ref + 1e-4, zero, zero, 6, 1e-7).ok);
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

// ---- The fast pass against a plain reading of the contract ----
//
// compare_tensors passes over float32/float16/bfloat16 (and float64) pairs block by block with
// vectorised predicates and leaves only the blocks that could change a figure to the scalar pass.
// Whatever it skips, the report must be the one a plain element-by-element reading of the contract
// gives. plain_compare is that reading, written here from compare.hpp's comment without the
// library's code: every element in double, in order.
namespace {

OutputReport plain_compare(const at::Tensor& reference, const at::Tensor& target, const Tolerance& tol) {
  OutputReport o;
  o.name = "out";
  o.shape.assign(reference.sizes().begin(), reference.sizes().end());
  o.numel = reference.numel();
  const at::Tensor rd = reference.to(at::kDouble).contiguous().reshape({-1});
  const at::Tensor td = target.to(at::kDouble).contiguous().reshape({-1});
  const double* r = rd.data_ptr<double>();
  const double* t = td.data_ptr<double>();
  double largest = -1;  // the largest |t - r| over the elements, 0 for a non-finite one
  std::int64_t worst = 0;
  for (std::int64_t i = 0; i < o.numel; ++i) {
    bool bad = false;
    double diff = 0;
    if (std::isfinite(r[i]) && std::isfinite(t[i])) {
      diff = std::abs(t[i] - r[i]);
      const double mag = std::abs(r[i]);
      bad = diff > tol.atol + tol.rtol * mag;
      if (mag > tol.atol && diff / mag > o.max_rel) o.max_rel = diff / mag;
    } else {
      o.nan_reference += std::isnan(r[i]);
      o.nan_target += std::isnan(t[i]);
      o.inf_reference += std::isinf(r[i]);
      o.inf_target += std::isinf(t[i]);
      const bool both_nan = std::isnan(r[i]) && std::isnan(t[i]);
      const bool same_inf = std::isinf(r[i]) && r[i] == t[i];
      bad = !(both_nan || same_inf);
    }
    if (bad) {
      ++o.mismatches;
      if (o.first_mismatch < 0) o.first_mismatch = i;
    }
    if (diff > largest) largest = diff, worst = i;
  }
  o.max_abs = std::max(largest, 0.0);
  o.ok = o.mismatches == 0;
  const std::int64_t f = o.first_mismatch;
  const bool nonfinite_first = f >= 0 && !(std::isfinite(r[f]) && std::isfinite(t[f]));
  const std::int64_t shown = nonfinite_first ? f : worst;
  o.reference_value = r[shown];
  o.target_value = t[shown];
  // Bit-identical outputs of one dtype report the reference's first value on both sides.
  const bool identical = reference.scalar_type() == target.scalar_type() && o.ok && o.nan_reference == 0 &&
                         o.nan_target == 0 && o.max_abs == 0;
  if (identical) o.target_value = o.reference_value = r[0];
  if (!identical && o.mismatches > 0 && shown != worst) o.note = "first bad element at " + index_string(shown, o.shape);
  return o;
}

bool same_double(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

void expect_same_report(const OutputReport& want, const OutputReport& got, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(got.numel, want.numel);
  EXPECT_EQ(got.ok, want.ok);
  EXPECT_EQ(got.mismatches, want.mismatches);
  EXPECT_EQ(got.first_mismatch, want.first_mismatch);
  EXPECT_EQ(got.nan_reference, want.nan_reference);
  EXPECT_EQ(got.nan_target, want.nan_target);
  EXPECT_EQ(got.inf_reference, want.inf_reference);
  EXPECT_EQ(got.inf_target, want.inf_target);
  EXPECT_TRUE(same_double(got.max_abs, want.max_abs)) << got.max_abs << " vs " << want.max_abs;
  EXPECT_TRUE(same_double(got.max_rel, want.max_rel)) << got.max_rel << " vs " << want.max_rel;
  EXPECT_TRUE(same_double(got.reference_value, want.reference_value))
      << got.reference_value << " vs " << want.reference_value;
  EXPECT_TRUE(same_double(got.target_value, want.target_value)) << got.target_value << " vs " << want.target_value;
  EXPECT_EQ(got.note, want.note);
  EXPECT_EQ(got.rule, Rule::Tolerance);
}

// Random pairs of one kind of trouble or another. `trouble` is the share of elements that are
// special (non-finite, subnormal, signed zeros, gross errors, errors on the tolerance's edge);
// the rest differ by less than the tolerance, so that whole blocks are quiet and the fast
// predicates, not the scalar pass, decide them.
std::pair<at::Tensor, at::Tensor> random_pair(std::int64_t n, c10::ScalarType rdt, c10::ScalarType tdt,
                                              const Tolerance& tol, double trouble, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> unit;
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const double tiny = rdt == at::kHalf ? 3e-6 : rdt == at::kDouble ? 1e-310 : 1e-40;  // subnormal in rdt
  at::Tensor r = at::empty({n}, at::kDouble), t = at::empty({n}, at::kDouble);
  auto ra = r.accessor<double, 1>();
  for (std::int64_t i = 0; i < n; ++i)
    ra[i] = normal(rng) * std::pow(10.0, std::floor(unit(rng) * 7) - 3);  // 1e-3..1e3
  // Representable in both dtypes, so that the target's error is the one planted below.
  r = r.to(rdt).to(tdt).to(at::kDouble);
  ra = r.accessor<double, 1>();
  auto ta = t.accessor<double, 1>();
  for (std::int64_t i = 0; i < n; ++i) {
    double rv = ra[i];
    const double allowed = tol.atol + tol.rtol * std::abs(rv);
    double tv = rv + (unit(rng) - 0.5) * allowed;  // inside the tolerance
    if (unit(rng) < trouble) {
      switch (static_cast<int>(unit(rng) * 12)) {
        case 0: tv = nan; break;
        case 1: rv = nan; break;
        case 2: rv = tv = nan; break;
        case 3: rv = tv = (unit(rng) < 0.5 ? inf : -inf); break;
        case 4: tv = (unit(rng) < 0.5 ? inf : -inf); break;
        case 5: rv = inf, tv = -inf; break;
        case 6: rv = tiny * (1 + std::floor(unit(rng) * 4)), tv = (unit(rng) < 0.5 ? rv : -rv); break;
        case 7: rv = 0.0, tv = -0.0; break;
        case 8: rv = -0.0, tv = unit(rng) < 0.5 ? 0.0 : tiny; break;
        case 9: tv = rv * 2 + 1; break;                                           // grossly wrong
        case 10: tv = rv + allowed * (unit(rng) < 0.5 ? 1.0 : 1.0000001); break;  // on the edge
        default: tv = rv; break;
      }
    }
    ra[i] = rv, ta[i] = tv;
  }
  return {r.to(rdt), t.to(tdt)};
}

struct DtypePair {
  c10::ScalarType reference, target;
};
const DtypePair kFastPairs[] = {{at::kFloat, at::kFloat}, {at::kHalf, at::kHalf},      {at::kBFloat16, at::kBFloat16},
                                {at::kFloat, at::kHalf},  {at::kFloat, at::kBFloat16}, {at::kDouble, at::kDouble}};
// Lengths around the vector widths (4, 8, 16 lanes) and the 1024-element block.
const std::int64_t kLengths[] = {1, 3, 7, 17, 1023, 1024, 1025, 3 * 1024 + 517};

}  // namespace

TEST(CompareFastPass, MatchesThePlainReadingOnRandomInputs) {
  const Tolerance tols[] = {kTol, Tolerance{1.6e-2, 1e-5}, Tolerance{0, 0}, Tolerance{.rtol = 1e-3, .atol = 0},
                            Tolerance{.rtol = 0, .atol = 1e-3}};
  std::uint64_t seed = 1;
  for (const auto& p : kFastPairs)
    for (const std::int64_t n : kLengths)
      for (const double trouble : {0.0, 1e-4, 3e-3, 0.3})
        for (const auto& tol : tols) {
          const auto [r, t] = random_pair(n, p.reference, p.target, tol, trouble, seed++);
          expect_same_report(plain_compare(r, t, tol), compare_tensors("out", r, t, tol, p.target),
                             fmt::format("{} vs {}, n {}, trouble {}, tol {}/{}, seed {}", c10::toString(p.reference),
                                         c10::toString(p.target), n, trouble, tol.atol, tol.rtol, seed - 1));
        }
}

// One wrong element in otherwise good data, at the first position and at the last (the tail past
// the last whole vector and the last whole block), barely outside the tolerance and far outside.
TEST(CompareFastPass, FindsASingleWrongElementAtTheHeadAndInTheTail) {
  for (const auto& p : kFastPairs)
    for (const std::int64_t n : {std::int64_t{1}, std::int64_t{13}, std::int64_t{1024}, std::int64_t{3 * 1024 + 5}})
      for (const bool last : {false, true})
        for (const double factor : {1.0001, 1000.0}) {
          auto [r, t] = random_pair(n, p.reference, p.target, kTol, 0.0, static_cast<std::uint64_t>(n));
          const std::int64_t at = last ? n - 1 : 0;
          // Out by a margin that survives rounding to the target's dtype (its spacing at 10).
          const double rv = 10.0;
          const double margin = p.target == at::kBFloat16 ? 0.0625
                                : p.target == at::kHalf   ? 0.0079
                                : p.target == at::kFloat  ? 2e-6
                                                          : 1e-12;
          r[at] = rv;
          t[at] = rv + factor * (kTol.atol + kTol.rtol * rv) + margin;
          const std::string what = fmt::format("{} vs {}, n {}, at {}, factor {}", c10::toString(p.reference),
                                               c10::toString(p.target), n, at, factor);
          const OutputReport got = compare_tensors("out", r, t, kTol, p.target);
          EXPECT_EQ(got.mismatches, 1) << what;
          EXPECT_EQ(got.first_mismatch, at) << what;
          EXPECT_FALSE(got.ok) << what;
          expect_same_report(plain_compare(r, t, kTol), got, what);
          // And a NaN planted in the same place.
          t[at] = std::nan("");
          const OutputReport nan = compare_tensors("out", r, t, kTol, p.target);
          EXPECT_EQ(nan.nan_target, 1) << what;
          EXPECT_EQ(nan.first_mismatch, at) << what;
          expect_same_report(plain_compare(r, t, kTol), nan, what + ", NaN");
        }
}

// The largest error and the largest relative error where only the last element has them: the
// worst element's index and values must come from the tail.
TEST(CompareFastPass, TheWorstElementInTheTailIsReported) {
  for (const auto& p : kFastPairs) {
    const std::int64_t n = 2 * 1024 + 11;
    at::Tensor r = at::full({n}, 3.0, at::kDouble).to(p.reference), t = r.to(p.target).clone();
    t[n - 1] = 3.0 + 1.0 / 64;  // exact in every dtype here, within a loose tolerance
    const Tolerance loose{0.1, 0};
    const OutputReport got = compare_tensors("out", r, t, loose, p.target);
    EXPECT_TRUE(got.ok);
    EXPECT_EQ(got.max_abs, 1.0 / 64) << c10::toString(p.target);
    EXPECT_EQ(got.target_value, 3.0 + 1.0 / 64) << c10::toString(p.target);
    expect_same_report(plain_compare(r, t, loose), got, c10::toString(p.target));
  }
}

// Equal errors everywhere (every element ties with the largest error so far) and errors growing
// along the output (every element a new largest): the predicates must neither miss a new largest
// error nor mistake a tie for one.
TEST(CompareFastPass, TiesAndGrowingErrorsKeepTheFirstWorstIndex) {
  for (const auto& p : kFastPairs) {
    const std::int64_t n = 5 * 1024 + 3;
    const at::Tensor r = at::linspace(1, 2, n, at::kDouble).to(p.reference);
    const double step = p.target == at::kBFloat16 ? 1.0 / 64 : p.target == at::kHalf ? 1.0 / 512 : 1.0 / 4096;
    const at::Tensor tied = (r.to(at::kDouble) + step).to(p.target);
    const at::Tensor growing = (r.to(at::kDouble) * (1 + at::linspace(0, 1e-2, n, at::kDouble))).to(p.target);
    for (const auto& tol : {kTol, Tolerance{0.1, 0.1}}) {
      expect_same_report(plain_compare(r, tied, tol), compare_tensors("out", r, tied, tol, p.target),
                         std::string("tied ") + c10::toString(p.target));
      expect_same_report(plain_compare(r, growing, tol), compare_tensors("out", r, growing, tol, p.target),
                         std::string("growing ") + c10::toString(p.target));
    }
  }
}

// Every float16 and bfloat16 bit pattern (signed zeros, subnormals, infinities, NaNs) read by the
// fast pass as LibTorch reads it: each pattern against its neighbour.
TEST(CompareFastPass, EveryHalfAndBfloat16BitPatternIsWidenedExactly) {
  const at::Tensor bits = at::arange(-32768, 32768, at::kInt).to(at::kShort);
  for (const auto dtype : {at::kHalf, at::kBFloat16}) {
    const at::Tensor all = bits.view(dtype);
    const at::Tensor next = all.roll(1);
    for (const auto& tol : {Tolerance{0, 0}, Tolerance{1e-3, 1e-2}}) {
      expect_same_report(plain_compare(all, next, tol), compare_tensors("out", all, next, tol),
                         std::string("neighbours ") + c10::toString(dtype));
      expect_same_report(plain_compare(all, all.clone(), tol), compare_tensors("out", all, all.clone(), tol),
                         std::string("itself ") + c10::toString(dtype));
      const at::Tensor as_float = all.to(at::kFloat);
      expect_same_report(plain_compare(as_float, next, tol), compare_tensors("out", as_float, next, tol, dtype),
                         std::string("float32 vs ") + c10::toString(dtype));
    }
  }
}

// Strided inputs are copied to contiguous memory first; the figures are those of the copies.
TEST(CompareFastPass, NonContiguousInputsMatchTheirContiguousCopies) {
  for (const auto& p : kFastPairs) {
    auto [r, t] = random_pair(64 * 48, p.reference, p.target, kTol, 1e-2, 7);
    const at::Tensor rs = r.reshape({64, 48}).t(), ts = t.reshape({64, 48}).t();  // transposed views
    ASSERT_FALSE(rs.is_contiguous());
    expect_same_report(plain_compare(rs, ts, kTol), compare_tensors("out", rs, ts, kTol, p.target),
                       std::string("transposed ") + c10::toString(p.target));
    const at::Tensor every_other_r = r.slice(0, 1, r.numel(), 2), every_other_t = t.slice(0, 1, t.numel(), 2);
    expect_same_report(plain_compare(every_other_r, every_other_t, kTol),
                       compare_tensors("out", every_other_r, every_other_t, kTol, p.target),
                       std::string("strided ") + c10::toString(p.target));
  }
}

// (A suite of its own: it skips where the CPU cannot flush, and a skip is never counted a pass.)
// A thread that flushes subnormals to zero skips the float32 predicate and widens float16 without
// F16C: every float16 bit pattern, random float16 pairs and a wrong element in the tail are still
// read as always (none of these values is a float32 or float64 subnormal, so the mode changes
// nothing in the plain reading either).
TEST(CompareFlushToZero, TheModeChangesNothingAwayFromSubnormals) {
  if (!at::globalContext().setFlushDenormal(true)) GTEST_SKIP() << "this CPU cannot flush subnormals";
  std::vector<std::pair<OutputReport, OutputReport>> runs;  // (plain, fast), judged after the mode is restored
  std::vector<std::string> names;
  auto run = [&](const at::Tensor& r, const at::Tensor& t, const Tolerance& tol, c10::ScalarType reduced,
                 const std::string& what) {
    runs.emplace_back(plain_compare(r, t, tol), compare_tensors("out", r, t, tol, reduced));
    names.push_back(what);
  };
  const std::int64_t n = 4 * 1024 + 9;
  const at::Tensor line = at::linspace(1, 2, n);
  at::Tensor wrong = line.clone();
  wrong[n - 1] = 5.0;
  run(line, wrong, kTol, c10::ScalarType::Undefined, "float32, wrong in the tail");
  const at::Tensor all = at::arange(-32768, 32768, at::kInt).to(at::kShort).view(at::kHalf);
  run(all, all.roll(1), Tolerance{1e-3, 1e-2}, c10::ScalarType::Undefined, "every float16 pattern");
  for (const DtypePair p : {DtypePair{at::kHalf, at::kHalf}, DtypePair{at::kFloat, at::kHalf}}) {
    auto [r, t] = random_pair(n, p.reference, p.target, kTol, 0.0, 11);
    t[n - 1] = 100.0;
    run(r, t, kTol, p.target, std::string("random, wrong in the tail, ") + c10::toString(p.reference));
  }
  at::globalContext().setFlushDenormal(false);
  for (size_t i = 0; i < runs.size(); ++i) expect_same_report(runs[i].first, runs[i].second, names[i]);
  EXPECT_EQ(runs[0].second.first_mismatch, n - 1);
  EXPECT_EQ(runs[2].second.first_mismatch, n - 1);
}

// Where float32 arithmetic alone would misjudge an element, the float32 predicate must leave it
// to the exact pass. Each pair plants, in the second block, an element whose float32 figures
// round onto the safe-looking side of a threshold while its exact figures are past it.
TEST(CompareFastPass, Float32RoundingNeverHidesAnElement) {
  const std::int64_t n = 2048, at = 1500;  // block 0 sets the thresholds, block 1 holds the element
  auto check = [&](c10::ScalarType dtype, double r0, double t0, double r1, double t1, const Tolerance& tol,
                   const std::string& what) {
    at::Tensor r = at::zeros({n}, at::kDouble), t = at::zeros({n}, at::kDouble);
    r[0] = r0, t[0] = t0, r[at] = r1, t[at] = t1;
    r = r.to(dtype), t = t.to(dtype);
    ASSERT_EQ(r[at].item<double>(), r1) << what << ": not representable";
    ASSERT_EQ(t[at].item<double>(), t1) << what << ": not representable";
    expect_same_report(plain_compare(r, t, tol), compare_tensors("out", r, t, tol), what);
  };
  // A new largest error whose float32 difference rounds down onto the old one: 2^30 + 63 reads as
  // 2^30 in float32, a tie; only an exact difference shows it is larger.
  check(at::kBFloat16, 0, std::ldexp(1, 30), -63, std::ldexp(1, 30), Tolerance{.rtol = 0, .atol = std::ldexp(1, 31)},
        "bfloat16 tie");
  check(at::kHalf, 0, 32768, -std::ldexp(1, -9), 32768, Tolerance{.rtol = 0, .atol = 65536}, "float16 tie");
  // The same without quantized inputs: 1 + 2^-29 reads as 1 in float32, below the largest error
  // so far, 1 + 2^-30, once that is rounded to float32.
  check(at::kFloat, std::ldexp(127, -30), 1 + std::ldexp(1, -23), -std::ldexp(1, -29), 1,
        Tolerance{.rtol = 0, .atol = 4}, "float32 margin");
  // A tolerance that underflows: rtol |r| is 0.99 of the smallest subnormal, which float32 rounds
  // up to the subnormal itself, and a difference of one subnormal is outside it. Element 0 sets
  // a large relative error so that the relative test does not already flag the element.
  check(at::kFloat, std::ldexp(1, -130), 1, std::ldexp(3, -149), std::ldexp(4, -149),
        Tolerance{.rtol = 0.33, .atol = 0}, "underflowing tolerance");
}

// Outputs equal element by element (the target's first element a -0.0 where the reference has
// 0.0) are reported as bit-identical outputs always were: the reference's first value on both sides.
TEST(CompareFastPass, EqualOutputsReportTheReferencesFirstValueOnBothSides) {
  for (const auto& p : kFastPairs) {
    if (p.reference != p.target) continue;
    at::Tensor r = at::arange(3000, at::kDouble).to(p.reference), t = r.clone();
    t[0] = -0.0;
    const OutputReport got = compare_tensors("out", r, t, kTol);
    EXPECT_TRUE(got.ok);
    EXPECT_FALSE(std::signbit(got.target_value)) << c10::toString(p.reference);
    expect_same_report(plain_compare(r, t, kTol), got, c10::toString(p.reference));
  }
}

// ---- float16 and bfloat16 read in registers (F16C and AVX2 on x86-64, the portable loop elsewhere) ----
//
// Quantized outputs, as float16 and bfloat16 results are, where most blocks are quiet and the
// in-register predicate alone decides them, with special values planted among them: every lane
// of a vector and the elements past the last whole vector must be seen.
namespace {

const DtypePair kHalfPairs[] = {
    {at::kHalf, at::kHalf}, {at::kBFloat16, at::kBFloat16}, {at::kFloat, at::kHalf}, {at::kFloat, at::kBFloat16}};

// Reference and target of about unit size (1e-3..1e3 here and there) a rounding step or a few
// apart in places: the target is the reference moved by up to `spread` relatively, then rounded.
std::pair<at::Tensor, at::Tensor> quantized_pair(std::int64_t n, const DtypePair& p, double spread,
                                                 std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> unit;
  at::Tensor x = at::empty({n}, at::kDouble), y = at::empty({n}, at::kDouble);
  auto xa = x.accessor<double, 1>();
  auto ya = y.accessor<double, 1>();
  for (std::int64_t i = 0; i < n; ++i) {
    xa[i] = normal(rng) * (unit(rng) < 0.05 ? std::pow(10.0, std::floor(unit(rng) * 7) - 3) : 1.0);
    ya[i] = xa[i] * (1 + spread * normal(rng));
  }
  return {x.to(p.reference), y.to(p.target)};
}

// The bit patterns a widening can get wrong, for float16 (half) or bfloat16: signed zeros, the
// infinities, NaNs (quiet, signalling, negative, with payloads), the smallest and largest
// subnormals, the smallest normal, the largest finite value, and a random subnormal.
std::vector<std::uint16_t> special_patterns(c10::ScalarType dtype, std::mt19937_64& rng) {
  const std::uint16_t sub = static_cast<std::uint16_t>(rng());
  if (dtype == at::kHalf)
    return {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0xfe01, 0x7c01, 0x7fff,
            0x0001, 0x8001, 0x03ff, 0x83ff, 0x0400, 0x7bff, 0xfbff, static_cast<std::uint16_t>(sub & 0x83ff)};
  return {0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0xffc1, 0x7f81, 0x7fff,
          0x0001, 0x8001, 0x007f, 0x807f, 0x0080, 0x7f7f, 0xff7f, static_cast<std::uint16_t>(sub & 0x807f)};
}

// Element i of x set to the value of a float16/bfloat16 bit pattern (bit for bit where x is of
// that dtype, widened where x is float32).
void plant(at::Tensor& x, std::int64_t i, std::uint16_t bits, c10::ScalarType dtype) {
  const at::Tensor value = at::full({1}, static_cast<std::int16_t>(bits), at::kShort).view(dtype);
  x.narrow(0, i, 1).copy_(value);
}

c10::ScalarType half_of(const DtypePair& p) { return p.target; }

std::string pair_name(const DtypePair& p) {
  return fmt::format("{} vs {}", c10::toString(p.reference), c10::toString(p.target));
}

}  // namespace

// Special values sprinkled at random over quantized outputs of lengths that are not multiples of
// the vector width, on either side or on both, under tolerances from none to loose.
TEST(CompareHalfLanes, RandomSpecialValuesInQuantizedOutputsMatchThePlainReading) {
  const Tolerance tols[] = {Tolerance{1e-3, 1e-5}, Tolerance{1.6e-2, 1e-5}, Tolerance{0, 0}, Tolerance{1e-2, 1e-2}};
  std::uint64_t seed = 100;
  int compared = 0;
  for (const auto& p : kHalfPairs)
    for (const std::int64_t n :
         {std::int64_t{5}, std::int64_t{13}, std::int64_t{1024 + 7}, std::int64_t{3 * 1024 + 13}})
      for (const double rate : {0.0, 1e-3, 1e-2, 0.2})
        for (const auto& tol : tols) {
          std::mt19937_64 rng(seed);
          auto [r, t] = quantized_pair(n, p, p.target == at::kHalf ? 1e-3 : 8e-3, seed++);
          const auto patterns = special_patterns(half_of(p), rng);
          std::uniform_real_distribution<double> unit;
          for (std::int64_t i = 0; i < n; ++i) {
            if (unit(rng) >= rate) continue;
            const std::uint16_t bits = patterns[rng() % patterns.size()];
            const int side = static_cast<int>(rng() % 3);  // reference, target, or both
            if (side != 1) plant(r, i, bits, half_of(p));
            if (side != 0) plant(t, i, side == 2 && rng() % 2 ? patterns[rng() % patterns.size()] : bits, half_of(p));
          }
          expect_same_report(plain_compare(r, t, tol), compare_tensors("out", r, t, tol, p.target),
                             fmt::format("{}, n {}, rate {}, tol {}/{}, seed {}", pair_name(p), n, rate, tol.rtol,
                                         tol.atol, seed - 1));
          ++compared;
        }
  EXPECT_EQ(compared, 4 * 4 * 4 * 4);
}

// One special value in an otherwise quiet output, in each lane of a vector in the middle of a
// block, in the first and last lanes of the last whole vector and in every element after it: the
// report must be the plain reading's, and the element must show in it.
TEST(CompareHalfLanes, OneSpecialValueIsSeenInEveryLaneAndInTheTail) {
  const std::int64_t n = 2 * 1024 + 13;  // the last whole vector ends at n - 5
  std::vector<std::int64_t> positions;
  for (std::int64_t lane = 0; lane < 8; ++lane) positions.push_back(1024 + 512 + lane);
  for (std::int64_t i = n - 13; i < n; ++i) positions.push_back(i);
  const Tolerance tol{1e-2, 1e-3};
  for (const auto& p : kHalfPairs) {
    std::mt19937_64 rng(7);
    const auto patterns = special_patterns(half_of(p), rng);
    // Quiet: the same values on both sides but for errors well inside the tolerance.
    const auto [r0, t0] = quantized_pair(n, p, 1e-3, 5);
    const OutputReport quiet = compare_tensors("out", r0, t0, tol, p.target);
    ASSERT_TRUE(quiet.ok) << pair_name(p);
    ASSERT_EQ(quiet.nan_reference + quiet.nan_target + quiet.inf_reference + quiet.inf_target, 0) << pair_name(p);
    for (const std::int64_t at : positions)
      for (const std::uint16_t bits : patterns)
        for (const int side : {0, 1, 2}) {
          at::Tensor r = r0.clone(), t = t0.clone();
          if (side != 1) plant(r, at, bits, half_of(p));
          if (side != 0) plant(t, at, bits, half_of(p));
          const std::string what = fmt::format("{}, at {}, bits {:#06x}, side {}", pair_name(p), at, bits, side);
          const OutputReport want = plain_compare(r, t, tol), got = compare_tensors("out", r, t, tol, p.target);
          expect_same_report(want, got, what);
          // A NaN or an infinity on one side only is a mismatch at that element.
          const double v = at::full({1}, static_cast<std::int16_t>(bits), at::kShort).view(half_of(p)).item<double>();
          if (!std::isfinite(v) && side != 2) {
            EXPECT_EQ(got.first_mismatch, at) << what;
          }
        }
  }
}

// Identical 16-bit outputs, bit for bit, take a shortcut of their own (equal bits that are not an
// infinity or a NaN are quiet). One special value, on one side or on both, in each of the sixteen
// lanes of a step in the middle of a block and in the tail, under a tolerance and under none: the
// report must be the plain reading's. A NaN or an infinity on both sides is the same bits on both
// sides too, and must still be counted and judged as the plain reading judges it.
TEST(CompareHalfLanes, IdenticalOutputsWithOneSpecialValueAnywhereMatchThePlainReading) {
  const std::int64_t n = 3 * 1024 + 13;
  std::vector<std::int64_t> positions;
  for (std::int64_t lane = 0; lane < 16; ++lane) positions.push_back(1024 + 512 + lane);
  for (std::int64_t i = n - 13; i < n; ++i) positions.push_back(i);
  int compared = 0;
  for (const auto& p : kHalfPairs) {
    if (p.reference != p.target) continue;
    std::mt19937_64 rng(11);
    const auto patterns = special_patterns(p.target, rng);
    const at::Tensor r0 = quantized_pair(n, p, 1e-3, 3).first;
    for (const Tolerance& tol : {Tolerance{0, 0}, Tolerance{1e-2, 1e-3}}) {
      const OutputReport same = compare_tensors("out", r0, r0.clone(), tol, p.target);
      ASSERT_TRUE(same.ok) << pair_name(p);
      ASSERT_EQ(same.max_abs, 0.0) << pair_name(p);
      for (const std::int64_t at : positions)
        for (const std::uint16_t bits : patterns)
          for (const int side : {0, 1, 2}) {
            at::Tensor r = r0.clone(), t = r0.clone();
            if (side != 1) plant(r, at, bits, p.target);
            if (side != 0) plant(t, at, bits, p.target);
            const std::string what = fmt::format("{}, at {}, bits {:#06x}, side {}, tol {}/{}", pair_name(p), at, bits,
                                                 side, tol.rtol, tol.atol);
            expect_same_report(plain_compare(r, t, tol), compare_tensors("out", r, t, tol, p.target), what);
            ++compared;
          }
    }
  }
  EXPECT_EQ(compared, 2 * 2 * (16 + 13) * 16 * 3);
}

// A new largest error, a new largest relative error, and an error outside the tolerance, each
// planted once in every lane of the last vector of a block and in every element of the next,
// short, block (a whole vector and a tail). Element 0 sets the largest errors so far: in the
// "tied" output every other element ties with the largest error (the 16-bit pairs' tie test
// decides), in the "below" one every other error is below it. The largest error's element and
// value, the largest relative error and the mismatch must come from the planted element.
TEST(CompareHalfLanes, ANewLargestErrorInAnyLaneIsFound) {
  const std::int64_t n = 2 * 1024 + 11;  // block 0 sets the thresholds; 2040..2047 end block 1
  for (const auto& p : kHalfPairs)
    for (const bool tied : {true, false}) {
      // Reference 1.5, target one rounding step of the target dtype above it (exact in both).
      const double step = p.target == at::kHalf ? std::ldexp(1, -10) : std::ldexp(1, -7);
      at::Tensor r0 = at::full({n}, 1.5, at::kDouble), t0 = at::full({n}, 1.5 + step, at::kDouble);
      const double first = tied ? step : 2 * step;  // element 0's error, on a reference of 1
      r0[0] = 1.0;
      t0[0] = 1.0 + first;
      r0 = r0.to(p.reference), t0 = t0.to(p.target);
      const Tolerance tol{0, 4 * step};  // absolute only: three steps pass, five do not
      const std::string name = fmt::format("{}, {}", pair_name(p), tied ? "tied" : "below");
      for (std::int64_t at = 2040; at < n; ++at) {
        for (const double steps : {3.0, 5.0}) {
          at::Tensor t = t0.clone();
          t[at] = 1.5 + steps * step;
          const std::string what = fmt::format("{}, at {}, {} steps", name, at, steps);
          const OutputReport got = compare_tensors("out", r0, t, tol, p.target);
          expect_same_report(plain_compare(r0, t, tol), got, what);
          EXPECT_EQ(got.max_abs, steps * step) << what;
          EXPECT_EQ(got.target_value, 1.5 + steps * step) << what;
          EXPECT_EQ(got.mismatches, steps > 4 ? 1 : 0) << what;
        }
        // A larger relative error: twice the step on a reference of 0.75.
        at::Tensor r = r0.clone(), t = t0.clone();
        r[at] = 0.75;
        t[at] = 0.75 + 2 * step;
        const std::string what = fmt::format("{}, relative at {}", name, at);
        const OutputReport got = compare_tensors("out", r, t, tol, p.target);
        expect_same_report(plain_compare(r, t, tol), got, what);
        EXPECT_EQ(got.max_rel, 2 * step / 0.75) << what;
        EXPECT_EQ(got.max_abs, 2 * step) << what;
      }
    }
}

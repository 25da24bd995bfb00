#include "checks/tolerance.hpp"

#include "checks/rule_book.hpp"

#include <mpscheck/tolerance_families.hpp>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string_view>

namespace mpscheck {

namespace {

// PyTorch's assert_close defaults per dtype.
Tolerance dtype_default(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::kHalf: return {1e-3, 1e-5};
    case c10::kBFloat16: return {1.6e-2, 1e-5};
    case c10::kDouble: return {1e-7, 1e-7};
    case c10::kFloat: return {1.3e-6, 1e-5};
    default: return {0, 0};
  }
}

struct FamilyRule {
  std::string_view family;
  Tolerance f32;  // floor for float32 targets
  const char* why;
};

// Widened only where accumulation order legitimately differs between backends. float16/bfloat16
// targets have no per-family widening (tolerance_for): what rounding explains is decided against
// float64, output by output, element by element.
constexpr FamilyRule kRules[] = {
    {"elementwise", {1.3e-6, 1e-5}, "one rounding per element"},
    {"activation", {1e-5, 1e-5}, "vendor libm/erf/tanh approximations differ by ulps"},
    {"conv", {1e-4, 3e-5}, "long dot products, algorithm (im2col, winograd, fft) differs"},
    {"matmul", {1e-4, 3e-5}, "long dot products, blocking order differs"},
    {"linalg", {1e-4, 1e-4}, "factorisations amplify rounding by the condition number"},
    {"reduction", {1e-5, 1e-5}, "summation order differs (tree vs sequential)"},
    {"softmax", {1e-5, 1e-6}, "exp and a reduction"},
    {"norm", {1e-5, 1e-5}, "mean/variance reductions"},
    {"pool", {1.3e-6, 1e-5}, "max is exact; average is a short sum"},
    {"indexing", {1.3e-6, 1e-5}, "data movement; accumulate variants add in any order"},
    {"loss", {1e-5, 1e-5}, "a reduction over the batch"},
    {"attention", {1e-4, 3e-5}, "matmuls plus softmax"},
    {"recurrent", {1e-4, 3e-5}, "matmuls chained over time steps"},
    {"fft", {1e-4, 1e-4}, "butterfly order differs"},
    {"random", {0.05, 0.05}, "statistics of samples, not values (see the op's notes)"},
    {"model", {1e-4, 1e-4}, "whole networks: many chained reductions"},
    {"train", {1e-3, 1e-4}, "training steps compound the forward/backward error"},
};

double reduced_unit(c10::ScalarType dtype) { return std::ldexp(1.0, dtype == c10::kHalf ? -11 : -8); }

// The SDK's list of tolerance families (what the host lets a plugin name) and this table agree:
// every rule is for a listed family, and every listed family but "shape" (exact, below) has a rule.
constexpr bool every_rule_is_a_listed_family() {
  for (const auto& rule : kRules)
    if (!is_tolerance_family(rule.family)) return false;
  return is_tolerance_family("shape");
}
static_assert(every_rule_is_a_listed_family(), "a tolerance rule for a family missing from kToleranceFamilies");
static_assert(std::size(kRules) + 1 == std::size(kToleranceFamilies),
              "a family in kToleranceFamilies without a tolerance rule");

}  // namespace

std::string_view float32_tolerance_reason(std::string_view family) {
  for (const auto& rule : kRules)
    if (rule.family == family) return rule.why;
  return family == "shape" ? "pure data movement: exact" : "";
}

Tolerance tolerance_for(const std::string& family, c10::ScalarType dtype) {
  if (!c10::isFloatingType(dtype)) return {0, 0};
  Tolerance tol = dtype_default(dtype);
  const bool reduced = dtype == c10::kHalf || dtype == c10::kBFloat16;
  // Statistics of samples are judged by their sampling error (compare_statistics), not by this.
  if (reduced && family == "random") return {0.05, 0.05};
  // One fast path for every family: a few rounding units; the atol comes from the output's scale.
  // (bfloat16: PyTorch's assert_close default 1.6e-2, just above 4 units.)
  if (reduced) return {std::max(tol.rtol, kPlainRoundingUnits * reduced_unit(dtype)), 0};
  // Pure data movement must be exact.
  if (family == "shape") return Tolerance{0, 0};
  for (const auto& rule : kRules) {
    if (family != rule.family) continue;
    const Tolerance& floor = rule.f32;
    tol.rtol = std::max(tol.rtol, floor.rtol);
    tol.atol = std::max(tol.atol, floor.atol);
    return tol;
  }
  // An unknown family: the host refuses plugin cases that name one.
  return tol;
}

bool accumulates(const std::string& family, const std::string& output) {
  const bool gradient = output.rfind("grad/", 0) == 0;
  if (gradient && (family == "pool" || family == "indexing" || family == "shape" || family == "softmax")) return true;
  for (std::string_view per_element : {"elementwise", "activation", "softmax", "pool", "indexing", "shape"})
    if (family == per_element) return false;
  return true;
}

bool rounds_once(const std::string& family, const std::string& output) {
  if (family == "matmul" || family == "conv") return true;
  if (output.rfind("grad/", 0) == 0) return false;
  for (std::string_view per_element : {"elementwise", "activation", "pool", "indexing", "shape"})
    if (family == per_element) return true;
  return false;
}

bool is_trajectory(const std::string& family, const std::string& output) {
  return family == "train" &&
         (output.rfind("loss/", 0) == 0 || output.rfind("param/", 0) == 0 || output.rfind("buffer/", 0) == 0);
}

Tolerance as_trajectory(const Tolerance& tol) {
  // The train family's tolerance before issue 22 (see Tolerance::trajectory).
  Tolerance t = tol;
  t.rtol = std::max(t.rtol, kTrajectoryRtol);
  t.atol = std::max(t.atol, kTrajectoryAtol);
  t.trajectory = true;
  return t;
}

Tolerance scaled_to_output(const Tolerance& tol, c10::ScalarType dtype, double scale, const std::string& family,
                           const std::string& output) {
  if (dtype != c10::kHalf && dtype != c10::kBFloat16) return tol;
  if (is_trajectory(family, output)) return as_trajectory(tol);
  Tolerance t = tol;
  if (output.rfind("grad/", 0) == 0) t.chains = 2;
  // Never below `tol`'s own atol (a nondeterministic reference's widening stays).
  if (accumulates(family, output) && std::isfinite(scale))
    t.atol = std::max(t.atol, kScaleRoundingUnits * reduced_unit(dtype) * scale);
  return t;
}

}  // namespace mpscheck

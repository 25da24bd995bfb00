// The one tensor-comparison routine, and attribution against a float64 gold run.
#pragma once

#include "checks/tolerance.hpp"
#include <mpscheck/result.hpp>

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <string>
#include <vector>

namespace mpscheck {

// Compares one target output against the reference output, elementwise with `tol`
// (|t - r| <= atol + rtol * |r|); non-finite values must agree exactly (NaN with NaN, +inf with
// +inf). Integer and bool outputs compare exactly whatever `tol` says; complex outputs compare
// on both parts (|t - r| is the modulus). The dtype is part of the result: a target dtype other
// than the reference's is a finding, except that a floating (complex) output may come back in
// `reduced`, the floating dtype a reduced-precision target computes in. Either tensor may live on
// any device. One pass over the elements, no whole-tensor temporaries for float32/float64.
OutputReport compare_tensors(const std::string& name, const at::Tensor& reference, const at::Tensor& target,
                             const Tolerance& tol, c10::ScalarType reduced = c10::ScalarType::Undefined);

// An index output (argmax, sort's indices, topk, kthvalue, mode) checked by what it means: the
// target's index must be in range, and must select, from the target's own `source` along `dim`
// (dim < 0 after flattening when `flat`), a value equal to the one the reference's index selects
// there. Two indices of tied values both pass; an index off by one onto a different value fails.
OutputReport compare_index(const std::string& name, const at::Tensor& reference, const at::Tensor& target,
                           const at::Tensor& source, std::int64_t dim, bool flat);

// Random statistics, judged by their sampling error: element i passes when
// |t - r| <= sigmas * sqrt(se_r^2 + se_t^2) + unit * max(1, |r|), where `unit` allows for the
// rounding of the dtype the samples were drawn in.
OutputReport compare_statistics(const std::string& name, const at::Tensor& reference, const at::Tensor& target,
                                const at::Tensor& se_reference, const at::Tensor& se_target, double sigmas,
                                double unit);

// Attribution with a float64 gold run (DESIGN.md §5). Two rules, both must hold:
//  - RMSE (PyTorch's dynamo accuracy checker): the target's RMSE against gold is within
//    `multiplier` times the baseline RMSE plus tol.atol. The baseline is float32's own RMSE
//    against gold; for float16/bfloat16 targets it is at least the error of `rounded` — the float32
//    result from inputs and weights rounded to that dtype, itself rounded to it (or gold rounded,
//    when `rounded` is undefined). Each side's RMSE is taken over the elements where it is finite.
//  - Per element, so that one wrong element is never diluted by sqrt(n): an element outside the
//    plain tolerance `tol` must have |t - g| <= kElementMultiplier * max(|r - g|, |b - g|)
//    + kSpreadMultiplier * baseline + kRoundingUnits * u * |g| + tol.atol, where b is the baseline
//    above at that element (left out where non-finite) and u the target dtype's unit roundoff.
// Where gold is non-finite the target must hold the same non-finite value as gold or as float32;
// where gold is finite, a non-finite target element is acceptable only when float32 holds the
// same value there (both overflowed). rmse_target is then infinite, as a figure.
struct Attribution {
  bool target_ok = false;
  // False when the three cannot be set side by side (an output missing, or shapes that differ):
  // then nothing was computed and the figures below mean nothing.
  bool measured = false;
  bool rmse_ok = false;
  double rmse_reference = 0, rmse_target = 0, baseline = 0, multiplier = 2;
  // Elements that fail the per-element rule: how many, the first, and the figures there.
  std::int64_t bad_elements = 0, first_bad = -1;
  double gold_value = 0, target_value = 0, allowed = 0;
};
constexpr double kElementMultiplier = 3;
constexpr double kSpreadMultiplier = 8;
constexpr double kRoundingUnits = 4;
Attribution attribute_with_gold(const at::Tensor& gold, const at::Tensor& reference, const at::Tensor& target,
                                c10::ScalarType target_dtype, const Tolerance& tol, const at::Tensor& rounded = {});

// The unit roundoff of a floating dtype (half the distance from 1 to the next value).
double unit_roundoff(c10::ScalarType dtype);

// Flat index -> "[i, j, k]" for messages.
std::string index_string(std::int64_t flat, const std::vector<std::int64_t>& shape);

}  // namespace mpscheck

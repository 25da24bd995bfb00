// The one tensor-comparison routine and the verdict rules built on it.
#pragma once

#include "checks/tolerance.hpp"
#include "core/result.hpp"

#include <ATen/ATen.h>

#include <string>
#include <vector>

namespace mpscheck {

// Compares one target output against the reference output, elementwise with `tol`
// (|t - r| <= atol + rtol * |r|); non-finite values must agree exactly (NaN with NaN, +inf with
// +inf). Either tensor may live on any device and dtype.
OutputReport compare_tensors(const std::string& name, const at::Tensor& reference,
                             const at::Tensor& target, const Tolerance& tol);

struct Verdict {
  Status status = Status::Pass;
  std::string message;
};

// Attribution with a float64 gold run (DESIGN.md §5, the RMSE-multiplier rule of PyTorch's
// dynamo accuracy checker): the target is acceptable when its RMSE against gold is within
// `multiplier` times the baseline RMSE plus `floor`. The baseline is float32's own RMSE against
// gold; for float16/bfloat16 targets it is at least the error of `rounded` — the float32 result
// from inputs and weights rounded to that dtype, itself rounded to it (or gold rounded, when
// `rounded` is undefined) — so a reduced-precision target is judged by what its dtype can deliver. Positions where gold is
// non-finite are left out; a target that is non-finite where gold is finite is never acceptable.
struct Attribution {
  bool target_ok = false;
  // False when the three cannot be set side by side (an output missing, or shapes that differ):
  // then no RMSE was computed and the figures below mean nothing.
  bool measured = false;
  double rmse_reference = 0, rmse_target = 0, baseline = 0, multiplier = 2;
};
Attribution attribute_with_gold(const at::Tensor& gold, const at::Tensor& reference, const at::Tensor& target,
                                c10::ScalarType target_dtype, double floor, const at::Tensor& rounded = {});

// pass / mismatch / nan over all outputs of a case (DESIGN.md §4).
Verdict judge_outputs(const std::vector<OutputReport>& outputs);

// Classifies an exception raised on the target: unsupported when the message says the op or
// dtype is not implemented / not supported there, error otherwise.
Status classify_exception(const std::string& message);

// The first line of an exception message without LibTorch's C++ backtrace, at most 400 chars.
std::string tidy_exception_message(const std::string& what);

}  // namespace mpscheck

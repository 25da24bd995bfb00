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

// pass / mismatch / nan over all outputs of a case (DESIGN.md §4).
Verdict judge_outputs(const std::vector<OutputReport>& outputs);

// Classifies an exception raised on the target: unsupported when the message says the op or
// dtype is not implemented / not supported there, error otherwise.
Status classify_exception(const std::string& message);

// The first line of an exception message without LibTorch's C++ backtrace, at most 400 chars.
std::string tidy_exception_message(const std::string& what);

}  // namespace mpscheck

// What a failure message means: LibTorch's and MPS's exceptions and warnings, read for what they
// say about the target (it lacks the op or dtype, its device is poisoned, it ran part of the case
// on the CPU) rather than for any substring that sounds like "not supported". Light on purpose:
// the worker host (core/worker.cpp) uses it without LibTorch.
#pragma once

#include <mpscheck/vocabulary.hpp>

#include <string>

namespace mpscheck {

// Classifies an exception raised on the target. `unsupported` only when the message is one of
// the phrasings in which LibTorch or MPS declare that the target lacks the op or the dtype
// (checks/errors.cpp lists them with their sources); `error` for everything else, including a
// dtype or shape complaint from inside a kernel ("expected scalar type Float but found Double"
// is a bug in the computation, not a gap of the device) and a sticky device error.
Status classify_exception(const std::string& message);

// Whether the message reports a device error that poisons the process's device context: CUDA's
// sticky errors (illegal address, device-side assert, launch failure ...; every later call on
// that context fails) and Metal command-buffer failures. The worker must not run another case.
bool is_sticky_device_error(const std::string& message);

// Whether the worker that produced this result must be replaced before the next case: after a
// sticky device error on any target, and on an accelerator (`accelerator`: the target is not the
// CPU) after any target failure (error, mismatch, NaN), since a device left in a bad state by
// one case would otherwise be charged to the next.
bool needs_fresh_worker(Status status, const std::string& message, bool accelerator);

// Whether a LibTorch warning says an op ran on the CPU instead of the target. Matches every
// phrasing PyTorch 2.x uses, case-insensitively: the generic MPS fallback ("... is not currently
// supported on the MPS backend and will fall back to run on the CPU") and the per-op ones
// ("MPS: nonzero op is supported natively starting from macOS 14.0. Falling back on CPU. ...").
bool is_fallback_warning(const std::string& warning);

// One line of an exception message without LibTorch's C++ backtrace: the first line, or for a
// TorchScript interpreter error the line that names the cause. Valid UTF-8, at most 400 code points.
std::string tidy_exception_message(const std::string& what);

}  // namespace mpscheck

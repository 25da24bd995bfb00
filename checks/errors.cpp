#include "checks/errors.hpp"

#include "checks/memory.hpp"

#include "util/text.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

namespace mpscheck {

namespace {

std::string lower(std::string_view text) {
  std::string m(text);
  std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return std::tolower(c); });
  return m;
}

bool contains(const std::string& haystack, const char* needle) { return haystack.find(needle) != std::string::npos; }

// A phrase LibTorch or MPS uses to say the device lacks something: every part must appear, in
// order (lowercase; the parts around the op or dtype name that varies).
struct Phrase {
  const char* first;
  const char* then = nullptr;
};

bool matches(const std::string& m, const Phrase& p) {
  const auto at = m.find(p.first);
  if (at == std::string::npos) return false;
  return !p.then || m.find(p.then, at + std::char_traits<char>::length(p.first)) != std::string::npos;
}

// The declarations of a gap, with where each comes from. Nothing broader: "not supported" or
// "unsupported" alone also appear in kernel argument checks and in CUDA's error 717, which are
// not gaps a target declares.
const Phrase kUnsupported[] = {
    // ATen/Dispatch.h, AT_DISPATCH_* with no case for the dtype:
    // "\"addmm_impl_cpu_\" not implemented for 'Half'".
    {"\" not implemented for '"},
    // ATen/mps/MPSFallback.mm (mps_error_fallback, PYTORCH_ENABLE_MPS_FALLBACK unset):
    // "The operator 'aten::foo' is not currently implemented for the MPS device. If you want ..."
    {"is not currently implemented for the ", " device"},
    // c10 dispatcher (OperatorEntry::reportError), no kernel for the backend:
    // "Could not run 'aten::bar' with arguments from the 'MPS' backend. This could be because ..."
    {"could not run '", "with arguments from the '"},
    // ATen/mps/EmptyTensor.cpp, MPS_ERROR_DOUBLE_NOT_SUPPORTED: "Cannot convert a MPS Tensor to
    // float64 dtype as the MPS framework doesn't support float64. Please use float32 instead."
    {"doesn't support float64"},
    // ATen/native/mps/OperationUtils.mm, getMPSDataType: "Trying to convert Double to the MPS
    // backend but it does not have support for that dtype."
    {"to the mps backend but it does not have support for that dtype"},
    // ATen/native/mps/OperationUtils.h, checkSupportsBFloat16: "MPS bfloat16 type is supported on
    // MacOS 14.0 or newer."
    {"mps ", "type is supported on macos "},
    // ATen/native/mps kernels of PyTorch 2.0-2.2 (ReduceOps.mm, ...): "MPS does not support
    // cumsum op with int64 input".
    {"mps does not support "},
    // c10/core/impl/DeviceGuardImplInterface.h: "PyTorch is not linked with support for mps devices".
    {"is not linked with support for ", " devices"},
    // ATen/mps/EmptyTensor.cpp, MPS_ERROR_NOT_COMPILED: "PyTorch code is not compiled with MPS enabled".
    {"is not compiled with mps enabled"},
    // ATen/mps/EmptyTensor.cpp, MPS_ERROR_RUNTIME_TOO_LOW: "The MPS backend is supported on MacOS 13.0+.".
    {"the mps backend is supported on macos "},
    // torch/csrc/autograd/FunctionsManual.cpp, not_implemented(): "the derivative for 'foo' is
    // not implemented." (the op has no backward anywhere).
    {"the derivative for ", " is not implemented"},
    // ATen/native/SpectralOps.cpp, promote_type_fft: "Unsupported dtype BFloat16" (the FFTs take
    // float16 only on CUDA and bfloat16 nowhere).
    {"unsupported dtype bfloat16"},
    {"unsupported dtype half"},
    // ATen/native/mkl/SpectralOps.cpp: "MKL FFT doesn't support tensors of type: Half".
    {"mkl fft doesn't support tensors of type: "},
    // ATen/native/TensorFactories.cpp, complex_check_dtype (torch.complex, torch.polar):
    // "Expected both inputs to be Half, Float or Double tensors but got BFloat16 and BFloat16".
    {"expected both inputs to be half, float or double tensors but got "},
    // ATen/native/LinearAlgebraUtils.h, checkFloatingOrComplex without low-precision dtypes:
    // "linalg.inv: Low precision dtypes not supported. Got BFloat16".
    {"low precision dtypes not supported. got "},
    // ATen/native/BatchLinearAlgebra.cpp (linalg.lstsq's driver dispatch): "This function doesn't
    // handle types other than float and double".
    {"doesn't handle types other than float and double"},
    // ATen/native/LinearAlgebraUtils.h, checkIsMatrix/checkFloatingOrComplex as linalg.pinv words it:
    // "linalg.pinv(Half{[5, 5]}): expected a tensor with 2 or more dimensions of float, double,
    // cfloat or cdouble types".
    {"dimensions of float, double, cfloat or cdouble types"},
};

// CUDA's sticky errors, as cudaGetErrorString words them (c10/cuda/CUDAException.h prefixes
// "CUDA error: "): after one of these every later call on the context fails.
const char* const kStickyCuda[] = {
    "an illegal memory access was encountered",                // cudaErrorIllegalAddress, 700
    "the launch timed out and was terminated",                 // cudaErrorLaunchTimeout, 702
    "device-side assert triggered",                            // cudaErrorAssert, 710
    "hardware stack error",                                    // cudaErrorHardwareStackError, 714
    "an illegal instruction was encountered",                  // cudaErrorIllegalInstruction, 715
    "misaligned address",                                      // cudaErrorMisalignedAddress, 716
    "operation not supported on global/shared address space",  // cudaErrorInvalidAddressSpace, 717
    "invalid program counter",                                 // cudaErrorInvalidPc, 718
    "unspecified launch failure",                              // cudaErrorLaunchFailure, 719
    "uncorrectable ecc error encountered",                     // cudaErrorECCUncorrectable, 214
};

// Metal: a failed command buffer leaves the MPS stream unusable. ATen/mps/MPSStream.mm reports
// "Command buffer ... failed"; Metal's own text names MTLCommandBufferErrorDomain and IOKit's
// kIOGPUCommandBufferCallbackError* codes; the MPSGraph runtime says "command buffer exited with
// error status".
const Phrase kStickyMetal[] = {
    {"command buffer", "failed"},
    {"mtlcommandbuffererror"},
    {"kiogpucommandbuffercallbackerror"},
    {"command buffer exited with error status"},
};

// The CPU fallbacks of PyTorch 2.x's MPS backend, all TORCH_WARN_ONCE:
const char* const kFallback[] = {
    // ATen/mps/MPSFallback.mm (PYTORCH_ENABLE_MPS_FALLBACK=1): "The operator 'aten::foo' is not
    // currently supported on the MPS backend and will fall back to run on the CPU. This may have
    // performance implications."
    "will fall back to run on the cpu",
    // ATen/native/mps/operations/*.mm, per op: "MPS: nonzero op is supported natively starting from
    // macOS 14.0. Falling back on CPU. This may have performance implications." (also median,
    // unique_consecutive, grid_sampler_2d, max_unpooling2d, randperm, and Pooling.mm's "passing
    // divisor to Average Pooling op with int64 input is not supported on MPS backend. Falling back
    // on CPU.")
    "falling back on cpu",
    // Phrasings of the same event elsewhere in 2.x and in third-party backends built on the
    // same CPU fallback (at::native::cpu_fallback).
    "falling back to cpu",
    "falling back to the cpu",
    "fall back to the cpu",
    "fall back to cpu",
};

}  // namespace

bool is_sticky_device_error(const std::string& message) {
  const std::string m = lower(message);
  for (const char* p : kStickyCuda)
    if (contains(m, p)) return true;
  for (const Phrase& p : kStickyMetal)
    if (matches(m, p)) return true;
  return false;
}

Status classify_exception(const std::string& message) {
  // A poisoned device first: CUDA 717's text says "not supported", and it is no declared gap.
  if (is_sticky_device_error(message)) return Status::Error;
  // Out of memory is no declared gap and no bug of the computation: the case does not fit.
  if (is_out_of_memory(message)) return Status::Memory;
  const std::string m = lower(message);
  for (const Phrase& p : kUnsupported)
    if (matches(m, p)) return Status::Unsupported;
  return Status::Error;
}

bool needs_fresh_worker(Status status, const std::string& message, bool accelerator) {
  if (is_sticky_device_error(message)) return true;
  if (!accelerator) return false;
  // After running out of memory, the allocator's cache and fragmentation would be the next case's.
  return status == Status::Error || status == Status::Mismatch || status == Status::Nan || status == Status::Memory;
}

bool is_fallback_warning(const std::string& warning) {
  const std::string m = lower(warning);
  for (const char* p : kFallback)
    if (contains(m, p)) return true;
  return false;
}

std::string tidy_exception_message(const std::string& what) {
  std::string m = what;
  const auto backtrace = m.find("Exception raised from");
  if (backtrace != std::string::npos) m.erase(backtrace);
  std::vector<std::string> lines;
  for (std::size_t begin = 0; begin <= m.size();) {
    std::size_t end = m.find('\n', begin);
    if (end == std::string::npos) end = m.size();
    std::string line = m.substr(begin, end - begin);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    const auto lead = line.find_first_not_of(" \t");
    if (lead != std::string::npos) lines.push_back(line.substr(lead));
    begin = end + 1;
  }
  std::string line = lines.empty() ? std::string() : lines.front();
  // The TorchScript interpreter leads with "The following operation failed in the TorchScript
  // interpreter." and a Python-like traceback; the cause is the last line that is not part of it
  // (e.g. "RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'").
  if (line.find("failed in the TorchScript interpreter") != std::string::npos) {
    for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
      const std::string& l = *it;
      if (l.rfind("Traceback", 0) == 0 || l.rfind("File ", 0) == 0 || l.find("~~~") != std::string::npos ||
          l.find("^^^") != std::string::npos || l.rfind("The following operation failed", 0) == 0)
        continue;
      if (l.find("Error") != std::string::npos || l.find("error") != std::string::npos ||
          l.find("not implemented") != std::string::npos) {
        line = "TorchScript: " + l;
        break;
      }
    }
  }
  // Valid UTF-8, cut on a code point boundary: the message goes into JSON, XML and HTML.
  return shorten(line, 400);
}

}  // namespace mpscheck

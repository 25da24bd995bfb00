// Errors read for what they mean (issue 23 item 4): real LibTorch, CUDA and MPS messages, each with
// the place it comes from, and the status, stickiness and fallback reading each must get.
#include "checks/errors.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

using namespace mpscheck;

namespace {

struct Message {
  const char* text;
  Status status;
  bool sticky;
};

// clang-format off
const std::vector<Message> kMessages = {
    // -- the target declares it lacks the op or the dtype: unsupported --
    // ATen/Dispatch.h (AT_DISPATCH_*), CPU and CUDA kernels without the dtype.
    {"\"slow_conv2d_cpu\" not implemented for 'Half'", Status::Unsupported, false},
    {"\"ctc_loss_cpu\" not implemented for 'BFloat16'", Status::Unsupported, false},
    // LibTorch 2.13's own refusals of reduced precision in the FFTs and in linalg.
    {"Unsupported dtype BFloat16", Status::Unsupported, false},
    {"MKL FFT doesn't support tensors of type: Half", Status::Unsupported, false},
    {"Expected both inputs to be Half, Float or Double tensors but got BFloat16 and BFloat16", Status::Unsupported, false},
    {"linalg.inv: Low precision dtypes not supported. Got BFloat16", Status::Unsupported, false},
    // linalg.lstsq's and linalg.pinv's refusals of float16/bfloat16 (OpInfo's samples, docs/opinfo.md).
    {"This function doesn't handle types other than float and double", Status::Unsupported, false},
    {"linalg.pinv(Half{[5, 5]}): expected a tensor with 2 or more dimensions of float, double, cfloat or cdouble "
     "types", Status::Unsupported, false},
    {"\"baddbmm_cuda\" not implemented for 'Int'", Status::Unsupported, false},
    // ATen/mps/MPSFallback.mm, mps_error_fallback (NotImplementedError).
    {"The operator 'aten::hardsigmoid.out' is not currently implemented for the MPS device. If you want this op to "
     "be added in priority during the prototype phase of this feature, please comment on "
     "https://github.com/pytorch/pytorch/issues/77764. As a temporary fix, you can set the environment variable "
     "`PYTORCH_ENABLE_MPS_FALLBACK=1` to use the CPU as a fallback for this op. WARNING: this will be slower than "
     "running natively on MPS.", Status::Unsupported, false},
    // c10 dispatcher, OperatorEntry::reportError.
    {"Could not run 'aten::_fft_r2c' with arguments from the 'MPS' backend. This could be because the operator "
     "doesn't exist for this backend, or was omitted during the selective/custom build process (if using custom "
     "build).", Status::Unsupported, false},
    // ATen/mps/EmptyTensor.cpp, MPS_ERROR_DOUBLE_NOT_SUPPORTED (used to be `error`).
    {"Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support float64. Please use "
     "float32 instead.", Status::Unsupported, false},
    // ATen/native/mps/OperationUtils.mm, getMPSDataType.
    {"Trying to convert Double to the MPS backend but it does not have support for that dtype.",
     Status::Unsupported, false},
    // ATen/native/mps/OperationUtils.h, checkSupportsBFloat16.
    {"MPS bfloat16 type is supported on MacOS 14.0 or newer.", Status::Unsupported, false},
    // ATen/native/mps/operations/ReduceOps.mm (PyTorch 2.0).
    {"MPS does not support cumsum op with int64 input", Status::Unsupported, false},
    // c10/core/impl/DeviceGuardImplInterface.h.
    {"PyTorch is not linked with support for mps devices", Status::Unsupported, false},
    // ATen/mps/EmptyTensor.cpp, MPS_ERROR_NOT_COMPILED and MPS_ERROR_RUNTIME_TOO_LOW.
    {"PyTorch code is not compiled with MPS enabled", Status::Unsupported, false},
    {"The MPS backend is supported on MacOS 13.0+.Current OS version can be queried using `sw_vers`",
     Status::Unsupported, false},
    // torch/csrc/autograd/FunctionsManual.cpp, not_implemented().
    {"the derivative for '_ctc_loss_backward' is not implemented.", Status::Unsupported, false},
    // plugins/sim (the simulated device words its gaps as MPSFallback.mm does).
    {"The operator 'aten::erf.out' is not currently implemented for the sim device for BFloat16 inputs.",
     Status::Unsupported, false},

    // -- a dtype or shape complaint from inside a kernel: a bug of the computation, error --
    // ATen/native/TensorIterator / c10 ScalarType checks (used to be `unsupported`).
    {"expected scalar type Float but found Double", Status::Error, false},
    {"expected scalar type ComplexDouble but found ComplexFloat", Status::Error, false},
    // ATen/TensorUtils.cpp, checkScalarTypes (used to be `unsupported`).
    {"Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got "
     "torch.FloatTensor instead (while checking arguments for embedding)", Status::Error, false},
    // ATen/native/LinearAlgebra.cpp, addmm / mm checks.
    {"mat1 and mat2 shapes cannot be multiplied (4x3 and 4x5)", Status::Error, false},
    {"expected m1 and m2 to have the same dtype, but got: float != double", Status::Error, false},
    {"expected mat1 and mat2 to have the same dtype, but got: c10::Half != float", Status::Error, false},
    // ATen/native/Convolution.cpp.
    {"Input type (float) and bias type (c10::Half) should be the same", Status::Error, false},
    // ATen/native/Distance.cpp (used to be `unsupported`).
    {"cdist only supports floating-point dtypes, X1 got: Long", Status::Error, false},
    // ATen/TensorUtils.cpp, checkSameDevice / TensorIterator.
    {"Expected all tensors to be on the same device, but found at least two devices, mps:0 and cpu!",
     Status::Error, false},
    {"shape mismatch: value tensor of shape [3] cannot be broadcast to indexing result of shape [2]",
     Status::Error, false},
    // c10/core/Allocator / MPSAllocator: out of memory is no declared gap and no bug of the
    // computation: the case does not fit the device (checks/memory.hpp).
    {"MPS backend out of memory (MPS allocated: 17.00 GB, other allocations: 1.02 GB, max allowed: 18.13 GB).",
     Status::Memory, false},
    // faults plugin's generic throw.
    {"planted failure: the kernel raised an unexpected error", Status::Error, false},

    // -- sticky device errors: error, and the worker is replaced --
    // c10/cuda/CUDAException.h (C10_CUDA_CHECK) with cudaGetErrorString's words.
    {"CUDA error: an illegal memory access was encountered\nCUDA kernel errors might be asynchronously reported at "
     "some other API call, so the stacktrace below might be incorrect.", Status::Error, true},
    {"CUDA error: device-side assert triggered\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side "
     "assertions.", Status::Error, true},
    {"CUDA error: unspecified launch failure", Status::Error, true},
    {"CUDA error: misaligned address", Status::Error, true},
    {"CUDA error: an illegal instruction was encountered", Status::Error, true},
    {"CUDA error: the launch timed out and was terminated", Status::Error, true},
    // cudaErrorInvalidAddressSpace, 717: says "not supported", used to be `unsupported`.
    {"CUDA error: operation not supported on global/shared address space", Status::Error, true},
    {"CUDA error: uncorrectable ECC error encountered", Status::Error, true},
    // ATen/mps/MPSStream.mm and Metal's own reports of a failed command buffer.
    {"Command buffer 0x600003a5c000 failed with status 5", Status::Error, true},
    {"Error: command buffer exited with error status.\n\tThe Metal Performance Shaders operations encoded on it may "
     "not have completed.\n\tError: \n\t(null)\n\tInternal Error (0000000e:Internal Error)",
     Status::Error, true},
    {"Error Domain=MTLCommandBufferErrorDomain Code=2 \"Caused GPU Timeout Error "
     "(00000002:kIOGPUCommandBufferCallbackErrorTimeout)\"", Status::Error, true},
};
// clang-format on

}  // namespace

TEST(ErrorClassification, EveryRealMessageGetsItsStatus) {
  for (const Message& m : kMessages) {
    EXPECT_EQ(classify_exception(m.text), m.status) << m.text;
    EXPECT_EQ(classify_exception(tidy_exception_message(m.text)), m.status) << "tidied: " << m.text;
  }
}

TEST(ErrorClassification, StickyDeviceErrorsAreRecognisedAndNothingElseIs) {
  for (const Message& m : kMessages) EXPECT_EQ(is_sticky_device_error(m.text), m.sticky) << m.text;
}

TEST(ErrorClassification, CaseDoesNotMatter) {
  EXPECT_EQ(classify_exception("COULD NOT RUN 'aten::x' WITH ARGUMENTS FROM THE 'CUDA' BACKEND"), Status::Unsupported);
  EXPECT_TRUE(is_sticky_device_error("cuda ERROR: Device-Side Assert Triggered"));
}

TEST(ErrorClassification, ADtypeComplaintInsideATorchScriptModelIsAnError) {
  const std::string jit =
      "The following operation failed in the TorchScript interpreter.\n"
      "Traceback of TorchScript (most recent call last):\n"
      "  File \"m.py\", line 6, in forward\n"
      "        return torch.mm(x, w.double())\n"
      "               ~~~~~~~~ <--- HERE\n"
      "RuntimeError: expected m1 and m2 to have the same dtype, but got: float != double\n";
  const std::string m = tidy_exception_message(jit);
  EXPECT_EQ(m, "TorchScript: RuntimeError: expected m1 and m2 to have the same dtype, but got: float != double");
  EXPECT_EQ(classify_exception(m), Status::Error);
}

TEST(FreshWorker, StickyErrorsAlwaysAndAnyTargetFailureOnAnAccelerator) {
  const std::string sticky = "CUDA error: an illegal memory access was encountered";
  // A sticky error replaces the worker whatever the target.
  EXPECT_TRUE(needs_fresh_worker(Status::Error, sticky, false));
  EXPECT_TRUE(needs_fresh_worker(Status::Error, sticky, true));
  // On an accelerator, any target failure.
  for (Status s : {Status::Error, Status::Mismatch, Status::Nan})
    EXPECT_TRUE(needs_fresh_worker(s, "max error 0.25 at [7]", true)) << to_string(s);
  // A declared gap, a pass or a fallback leave the device as it was.
  for (Status s : {Status::Pass, Status::Unsupported, Status::Fallback, Status::Skip})
    EXPECT_FALSE(needs_fresh_worker(s, "", true)) << to_string(s);
  // The CPU keeps its worker after an ordinary error.
  for (Status s : {Status::Error, Status::Mismatch, Status::Nan, Status::Unsupported})
    EXPECT_FALSE(needs_fresh_worker(s, "expected scalar type Float but found Double", false)) << to_string(s);
}

TEST(FallbackWarnings, EveryPhrasingOfPyTorch2IsAFallbackWhateverTheCase) {
  const char* const fallbacks[] = {
      // ATen/mps/MPSFallback.mm, mps_fallback (PYTORCH_ENABLE_MPS_FALLBACK=1).
      "The operator 'aten::_linalg_eigh' is not currently supported on the MPS backend and will fall back to run on "
      "the CPU. This may have performance implications.",
      // ATen/native/mps/operations/Indexing.mm, nonzero_fallback.
      "MPS: nonzero op is supported natively starting from macOS 14.0. Falling back on CPU. This may have "
      "performance implications.",
      // ATen/native/mps/operations/ReduceOps.mm, median_mps.
      "MPS: median op is supported natively starting from macOS 13.0. Falling back on CPU. This may have "
      "performance implications.",
      // ATen/native/mps/operations/Unique.mm.
      "MPS: unique_consecutive op is supported natively starting from macOS 13.0. Falling back on CPU. This may "
      "have performance implications.",
      // ATen/native/mps/operations/GridSampler.mm.
      "MPS: grid_sampler_2d op is supported natively starting from macOS 13.2. Falling back on CPU. This may have "
      "performance implications.",
      // ATen/native/mps/operations/Pooling.mm, avg_pool with a divisor on int64.
      "MPS: passing divisor to Average Pooling op with int64 input is not supported on MPS backend. Falling back on "
      "CPU. This may have performance implications.",
      // ATen/native/mps/operations/RandomOps.mm (2.0, with its typo).
      "MPS: randperm op is supported natively starting from macOS 13.0. Falling back on CPU. This may have "
      "performace implications.",
      // Not PyTorch's own wording but the same event, as third-party backends put it: read as a fallback
      // too (the cautious side, a pass becomes `fallback`).
      "op 'aten::foo' is not supported on this device, falling back to CPU",
      "aten::bar will fall back to the CPU",
  };
  for (const char* w : fallbacks) {
    EXPECT_TRUE(is_fallback_warning(w)) << w;
    std::string upper = w, lower = w;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_TRUE(is_fallback_warning(upper)) << upper;
    EXPECT_TRUE(is_fallback_warning(lower)) << lower;
  }
  // Warnings that are no CPU fallback.
  EXPECT_FALSE(is_fallback_warning("Casting complex values to real discards the imaginary part"));
  // ATen/native/mps/operations/Pad.mm: slower, but on the device.
  EXPECT_FALSE(
      is_fallback_warning("MPS: The constant padding of more than 3 dimensions is not currently supported "
                          "natively. It uses View Ops default implementation to run. This may have "
                          "performance implications."));
}

TEST(ExceptionMessages, OneTidyLine) {
  EXPECT_EQ(tidy_exception_message("bad thing\nException raised from foo at bar.cpp:1\nframe #0"), "bad thing");
  EXPECT_EQ(tidy_exception_message(std::string(1000, 'x')), std::string(399, 'x') + "\xE2\x80\xA6");  // 400 code points
}

TEST(ExceptionMessages, TorchScriptErrorsKeepTheirCause) {
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

TEST(ExceptionMessages, ValidUtf8CutOnACharacterBoundary) {
  std::string long_message = "bad \xFF\xFE bytes ";
  for (int i = 0; i < 500; ++i) long_message += "\xE2\x82\xAC";  // "€", three bytes each
  const std::string m = tidy_exception_message(long_message);
  EXPECT_EQ(m.rfind("bad \xEF\xBF\xBD", 0), 0u) << "invalid bytes become U+FFFD";
  EXPECT_EQ(m.substr(m.size() - 3), "\xE2\x80\xA6");
  EXPECT_NO_THROW(nlohmann::json(m).dump());
  // Raw, the same text makes nlohmann's strict writer throw: what used to take the worker down.
  EXPECT_THROW(nlohmann::json(long_message).dump(), nlohmann::json::type_error);
}

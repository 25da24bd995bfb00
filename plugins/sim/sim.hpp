// The sim device's internals, shared by its runtime (sim_device.cpp), its fused RNN cells
// (sim_rnn.cpp) and its bug switchboard (sim_bugs.cpp). Test-only: a PrivateUse1 backend named "sim"
// whose memory is protected pages.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace sim {

// Makes the sim memory behind `tensors` readable and writable for the sim's own kernels while it
// lives; outside one, sim memory is PROT_NONE, so host code that skips a copy faults at once.
class Access {
 public:
  explicit Access(std::vector<at::Tensor> tensors);
  ~Access();
  Access(const Access&) = delete;
  Access& operator=(const Access&) = delete;

 private:
  std::vector<at::Tensor> tensors_;  // keeps the storages alive while open
  std::vector<void*> blocks_;
};

// The same values on the host (a copy).
at::Tensor to_host(const at::Tensor& t);
// Overwrites the sim tensor `dst` with host values `src` (same shape).
void write_back(const at::Tensor& dst, const at::Tensor& src);

// Allocator statistics: bytes allocated now and at their peak, allocations made, and the pages
// mapped for them ("reserved", the driver's figure) now and at their peak.
struct MemoryStats {
  std::size_t current = 0, peak = 0, count = 0, reserved = 0, reserved_peak = 0;
};
MemoryStats memory_stats();
// Allocations past `bytes` in all fail with an out-of-memory error (SIZE_MAX: no limit).
void set_memory_limit(std::size_t bytes);

// The bug switchboard (MPSCHECK_SIM_BUGS=class[,class...]), read once at load.
bool planted(const char* bug_class);
// Runs a planted kernel for `op` if one is switched on and applies; false: run the plain fallback.
bool run_planted(const c10::OperatorHandle& op, torch::jit::Stack* stack);
// The scalar-operand class (sim_scalar.cpp): nothing when it does not apply to `op`; false when it
// changed the stack and the plain fallback should run on it.
std::optional<bool> run_scalar_classes(const c10::OperatorHandle& op, torch::jit::Stack* stack);
// The structured-error classes (sim_structure.cpp: slice, block, magnitude), the same contract.
std::optional<bool> run_structure_classes(const c10::OperatorHandle& op, torch::jit::Stack* stack);
// The later-call class (sim_later_call.cpp): its planted matmul kernels, as run_scalar_classes; and
// whether a kernel (a convolution) reuses the packed copy of `weight` it made on an earlier call,
// which makes its result kLaterCallScale too large. The allocator forgets a freed buffer's copies.
std::optional<bool> run_later_call_class(const c10::OperatorHandle& op, torch::jit::Stack* stack);
// The in-network classes (sim_in_network.cpp: batch-row, weight-grad), the same contract.
std::optional<bool> run_in_network_classes(const c10::OperatorHandle& op, torch::jit::Stack* stack);
bool later_call_reuses(const std::string& kernel, const at::Tensor& weight);
void forget_buffer(const void* base);
constexpr double kLaterCallScale = 1.05;
// The convolution kernel (sim_device.cpp) hands its host result here for the planted classes
// that change values (scale, ulp-noise); returns it, edited in place. `exact(dtype)` reruns the
// convolution with its operands widened to `dtype`, for ulp-noise on float16/bfloat16.
at::Tensor planted_convolution(at::Tensor out, const std::function<at::Tensor(c10::ScalarType)>& exact);
// The train-step plant's parameters (sim_training.cpp). Every kernel's operands are noted while
// the plant is on (the convolution kernel notes its weight and bias: a parameter only a convolution
// uses is never an operand of the fallback); a parameter is a leaf that requires grad, or a tensor
// on the storage of one noted (SGD's `p.data()`).
void note_parameter(const c10::IValue& operand);
bool is_parameter(const at::Tensor& t);
// Batch norm (sim_training.cpp): the CPU kernel, its running statistics written back (the plain
// fallback drops them), and the bn-stats plant.
void native_batch_norm(const c10::OperatorHandle& op, torch::jit::Stack* stack);
// Called at every synchronize: raises a deferred kernel error (or hangs, with sync-hang).
void at_synchronize();
// A planted kernel error that surfaces only at the next synchronize (as on a real command queue).
void defer_error(std::string message);
// The allocator tells the switchboard of every free (the dirty-state plant counts the large ones).
void note_free(std::size_t bytes);
// Held by every sim kernel (the fallback, copies, convolution) while it runs: with the thread plant,
// a second thread entering one while another is inside aborts the process.
class KernelScope {
 public:
  KernelScope();
  ~KernelScope();
  KernelScope(const KernelScope&) = delete;
  KernelScope& operator=(const KernelScope&) = delete;

 private:
  bool entered_ = false;
};

}  // namespace sim

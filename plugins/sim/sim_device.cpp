// The sim device: a PrivateUse1 backend renamed "sim", for tests only. Its memory is anonymous
// mappings kept PROT_NONE except while its own kernels (copies, views' scalar reads, planted
// kernels) touch them, so host code that reads a device pointer without a copy faults at once.
// Ops it does not implement run on the CPU kernels through a boxed fallback, which is also where
// the bug switchboard (sim_bugs.cpp) plants its kernel bugs.
#include "sim.hpp"

#include <mpscheck/plugin.hpp>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/EmptyTensor.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/ops/_local_scalar_dense_native.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/Allocator.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/library.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>

namespace sim {

namespace {

constexpr c10::DeviceType kSim = c10::DeviceType::PrivateUse1;
const c10::Device kDevice(kSim, 0);

struct Block {
  char* base;
  std::size_t mapped, bytes;
  int open = 0;  // kernels currently touching it
};

std::mutex g_mutex;
std::map<const char*, Block*> g_blocks;  // by base address
MemoryStats g_stats;

std::size_t page_size() {
  static const std::size_t size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

// The live block holding `p` (caller holds g_mutex).
Block* block_of(const void* p) {
  const char* c = static_cast<const char*>(p);
  auto it = g_blocks.upper_bound(c);
  if (it == g_blocks.begin()) return nullptr;
  --it;
  Block* b = it->second;
  return c < b->base + b->mapped ? b : nullptr;
}

void protect(Block* b, int prot) {
  if (::mprotect(b->base, b->mapped, prot) != 0) TORCH_CHECK(false, "sim: mprotect failed: ", std::strerror(errno));
}

void release(void* ctx) {
  auto* b = static_cast<Block*>(ctx);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_blocks.erase(b->base);
    g_stats.current -= b->bytes;
    g_stats.reserved -= b->mapped;
  }
  note_free(b->bytes);
  forget_buffer(b->base);
  ::munmap(b->base, b->mapped);
  delete b;
}

// The device's memory size: MPSCHECK_SIM_MEMORY_LIMIT bytes, 0 with the oom-small plant, else unlimited.
std::size_t initial_limit() {
  if (planted("oom-small")) return 0;
  if (const char* env = std::getenv("MPSCHECK_SIM_MEMORY_LIMIT"); env && *env) return std::strtoull(env, nullptr, 10);
  return SIZE_MAX;
}
std::atomic<std::size_t> g_limit{initial_limit()};

std::size_t env_bytes(const char* name, std::size_t otherwise) {
  const char* env = std::getenv(name);
  return env && *env ? std::strtoull(env, nullptr, 10) : otherwise;
}

// What the device recommends a process keep under, as Metal's recommendedMaxWorkingSetSize does
// for MPS: MPSCHECK_SIM_RECOMMENDED_MAX bytes, else the memory limit, else a device of 8 GiB. A
// case may go past it (the limit is what refuses an allocation).
std::size_t recommended_max() {
  const std::size_t limit = g_limit.load();
  return env_bytes("MPSCHECK_SIM_RECOMMENDED_MAX", limit != SIZE_MAX ? limit : std::size_t{8} << 30);
}

// MPSCHECK_SIM_NO_PEAK=1: the allocator keeps no peak statistic (reports 0), as a device without a
// peak counter, so the host must sample.
const bool g_no_peak = env_bytes("MPSCHECK_SIM_NO_PEAK", 0) != 0;

// A DeviceAllocator, so LibTorch's accelerator API (and mpscheck) read its statistics the way they
// read MPS's and CUDA's: allocated bytes now and at their peak, and "reserved" (what it mapped).
class Allocator final : public c10::DeviceAllocator {
 public:
  bool initialized() override { return true; }
  void emptyCache(c10::MempoolId_t) override {}
  void recordStream(const c10::DataPtr&, c10::Stream) override {}
  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex) override {
    const MemoryStats s = memory_stats();
    c10::CachingDeviceAllocator::DeviceStats out;
    auto& allocated = out.allocated_bytes[static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
    allocated.current = static_cast<int64_t>(s.current);
    allocated.peak = g_no_peak ? 0 : static_cast<int64_t>(s.peak);
    auto& reserved = out.reserved_bytes[static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
    reserved.current = static_cast<int64_t>(s.reserved);
    reserved.peak = g_no_peak ? 0 : static_cast<int64_t>(s.reserved_peak);
    out.allocation[static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE)].allocated =
        static_cast<int64_t>(s.count);
    return out;
  }
  void resetAccumulatedStats(c10::DeviceIndex) override {}
  void resetPeakStats(c10::DeviceIndex) override {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_stats.peak = g_stats.current;
    g_stats.reserved_peak = g_stats.reserved;
  }
  std::pair<std::size_t, std::size_t> getMemoryInfo(c10::DeviceIndex) override {
    const std::size_t total = recommended_max();
    const std::size_t used = memory_stats().current;
    return {used < total ? total - used : 0, total};
  }

  c10::DataPtr allocate(std::size_t n) override {
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      const std::size_t limit = g_limit.load();
      TORCH_CHECK_WITH(OutOfMemoryError, n == 0 || (n <= limit && g_stats.current <= limit - n),
                       "sim backend out of memory (sim allocated: ", g_stats.current, " bytes, max allowed: ", limit,
                       " bytes). Tried to allocate ", n, " bytes on the sim device.");
    }
    if (n == 0) return {nullptr, kDevice};
    const std::size_t mapped = (n + page_size() - 1) / page_size() * page_size();
    void* p = ::mmap(nullptr, mapped, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    TORCH_CHECK_WITH(OutOfMemoryError, p != MAP_FAILED, "sim: cannot map ", n, " bytes: ", std::strerror(errno));
    auto* b = new Block{static_cast<char*>(p), mapped, n};
    std::lock_guard<std::mutex> lock(g_mutex);
    g_blocks[b->base] = b;
    g_stats.current += n;
    g_stats.peak = std::max(g_stats.peak, g_stats.current);
    g_stats.reserved += mapped;
    g_stats.reserved_peak = std::max(g_stats.reserved_peak, g_stats.reserved);
    ++g_stats.count;
    return {p, b, &release, kDevice};
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  void copy_data(void* dest, const void* src, std::size_t count) const override;
};

Allocator g_allocator;

// Opens the blocks holding `ptrs` for the lifetime of the object.
class RawAccess {
 public:
  explicit RawAccess(std::initializer_list<const void*> ptrs) {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (const void* p : ptrs) {
      Block* b = p ? block_of(p) : nullptr;
      if (!b || std::find(blocks_.begin(), blocks_.end(), b) != blocks_.end()) continue;
      if (b->open++ == 0) protect(b, PROT_READ | PROT_WRITE);
      blocks_.push_back(b);
    }
  }
  ~RawAccess() {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (Block* b : blocks_)
      if (--b->open == 0) protect(b, PROT_NONE);
  }
  RawAccess(const RawAccess&) = delete;
  RawAccess& operator=(const RawAccess&) = delete;

 private:
  std::vector<Block*> blocks_;
};

void Allocator::copy_data(void* dest, const void* src, std::size_t count) const {
  RawAccess open({dest, src});
  std::memcpy(dest, src, count);
}

// ---------------------------------------------------------------- device guard

class Guard final : public c10::impl::DeviceGuardImplInterface {
 public:
  c10::DeviceType type() const override { return kSim; }
  c10::Device exchangeDevice(c10::Device d) const override {
    check(d);
    return kDevice;
  }
  c10::Device getDevice() const override { return kDevice; }
  void setDevice(c10::Device d) const override { check(d); }
  void uncheckedSetDevice(c10::Device) const noexcept override {}
  c10::Stream getStream(c10::Device) const override { return c10::Stream(c10::Stream::DEFAULT, kDevice); }
  c10::Stream exchangeStream(c10::Stream) const override { return c10::Stream(c10::Stream::DEFAULT, kDevice); }
  c10::DeviceIndex deviceCount() const noexcept override { return 1; }
  bool queryStream(const c10::Stream&) const override { return true; }
  void synchronizeStream(const c10::Stream&) const override { at_synchronize(); }
  void synchronizeDevice(const c10::DeviceIndex) const override { at_synchronize(); }

 private:
  static void check(c10::Device d) {
    TORCH_CHECK(d.type() == kSim && d.index() <= 0, "sim: there is one sim device (sim:0), not ", d);
  }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, Guard);

// ---------------------------------------------------------------- kernels the fallback cannot do

constexpr c10::DispatchKeySet kSimKeys(c10::DispatchKey::PrivateUse1);

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout, std::optional<c10::Device>, std::optional<bool>,
                               std::optional<c10::MemoryFormat> format) {
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided, "sim: only strided tensors");
  return at::detail::empty_generic(size, &g_allocator, kSimKeys, c10::dtype_or_default(dtype), format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<c10::ScalarType> dtype,
                         std::optional<c10::Layout> layout, std::optional<c10::Device>, std::optional<bool>) {
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided, "sim: only strided tensors");
  return at::detail::empty_strided_generic(size, stride, &g_allocator, kSimKeys, c10::dtype_or_default(dtype));
}

at::Tensor as_strided(const at::Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride,
                      std::optional<c10::SymInt> offset) {
  return at::native::as_strided_tensorimpl(self, C10_AS_INTARRAYREF_SLOW(size), C10_AS_INTARRAYREF_SLOW(stride),
                                           offset ? std::optional<int64_t>(offset->expect_int()) : std::nullopt);
}

at::Tensor view(const at::Tensor& self, c10::SymIntArrayRef size) {
  return at::native::view(self, C10_AS_INTARRAYREF_SLOW(size));
}

at::Tensor reshape_alias(const at::Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride) {
  return at::native::_reshape_alias(self, C10_AS_INTARRAYREF_SLOW(size), C10_AS_INTARRAYREF_SLOW(stride));
}

at::Tensor unfold(const at::Tensor& self, int64_t dim, int64_t size, int64_t step) {
  return at::native::unfold(self, dim, size, step);
}

at::Tensor view_as_real(const at::Tensor& self) { return at::native::view_as_real(self); }
at::Tensor view_as_complex(const at::Tensor& self) { return at::native::view_as_complex(self); }

at::Tensor& set_storage(at::Tensor& self, at::Storage source) { return at::native::set_(self, source); }
at::Tensor& set_tensor(at::Tensor& self, const at::Tensor& source) { return at::native::set_tensor_(self, source); }
at::Tensor& set_storage_offset(at::Tensor& self, at::Storage source, c10::SymInt offset, c10::SymIntArrayRef size,
                               c10::SymIntArrayRef stride) {
  return at::native::set_storage_cpu_(self, source, offset.expect_int(), C10_AS_INTARRAYREF_SLOW(size),
                                      C10_AS_INTARRAYREF_SLOW(stride));
}

const at::Tensor& resize(const at::Tensor& self, c10::SymIntArrayRef size, std::optional<c10::MemoryFormat> format) {
  auto* impl = self.unsafeGetTensorImpl();
  impl->set_sizes_contiguous(C10_AS_INTARRAYREF_SLOW(size));
  const std::size_t needed = static_cast<std::size_t>(impl->numel() + self.storage_offset()) * self.dtype().itemsize();
  if (impl->numel() > 0 && needed > self.storage().nbytes()) {
    c10::StorageImpl* storage = self.storage().unsafeGetStorageImpl();
    c10::DataPtr fresh = g_allocator.allocate(needed);
    if (storage->nbytes() > 0) g_allocator.copy_data(fresh.get(), storage->data(), storage->nbytes());
    storage->set_data_ptr_noswap(std::move(fresh));
    storage->set_nbytes(needed);
  }
  if (format) impl->empty_tensor_restride(*format);
  return self;
}

// The host's view of a sim tensor's memory (valid only inside an Access).
at::Tensor host_alias(const at::Tensor& t) {
  if (t.device().type() != kSim) return t;
  return at::from_blob(t.data_ptr(), t.sizes(), t.strides(), t.options().device(at::kCPU));
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool) {
  if (self.numel() == 0) return dst;
  KernelScope kernel;
  Access open({self, dst});
  at::Tensor host_dst = host_alias(dst);
  // The conjugate and negative bits travel with the copy (see the fallthrough below).
  at::Tensor host_src = host_alias(self);
  if (self.device().type() == kSim && self.is_conj()) host_src = at::_conj(host_src);
  if (self.device().type() == kSim && self.is_neg()) host_src = at::_neg_view(host_src);
  host_dst.copy_(host_src);
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  if (dst.sizes() != self.sizes()) dst.resize_(self.sizes());
  return copy_from(self, dst, false);
}

c10::Scalar local_scalar_dense(const at::Tensor& self) {
  Access open({self});
  return at::native::_local_scalar_dense_cpu(host_alias(self));
}

// Convolution dispatches an out-of-tree device to these two by name; the sim computes on the CPU.
// The "slow" plant makes this kernel ten times slower than the CPU's.
template <class Fn>
auto timed_kernel(Fn fn) {
  const auto t0 = std::chrono::steady_clock::now();
  auto out = fn();
  if (planted("slow")) std::this_thread::sleep_for(9 * (std::chrono::steady_clock::now() - t0));
  return out;
}

at::Tensor convolution(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                       c10::SymIntArrayRef stride, c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation,
                       bool transposed, c10::SymIntArrayRef output_padding, c10::SymInt groups) {
  KernelScope kernel;
  note_parameter(weight);
  if (bias) note_parameter(*bias);
  const std::optional<at::Tensor> host_bias =
      bias && bias->defined() ? std::optional<at::Tensor>(to_host(*bias)) : std::nullopt;
  const at::Tensor in = to_host(input), w = to_host(weight);
  at::Tensor out = timed_kernel([&] {
    return at::convolution_symint(in, w, host_bias, stride, padding, dilation, transposed, output_padding, groups);
  });
  if (later_call_reuses("convolution", weight)) out.mul_(kLaterCallScale);
  auto exact = [&](c10::ScalarType dtype) {
    const std::optional<at::Tensor> wide_bias =
        host_bias ? std::optional<at::Tensor>(host_bias->to(dtype)) : std::nullopt;
    return at::convolution_symint(in.to(dtype), w.to(dtype), wide_bias, stride, padding, dilation, transposed,
                                  output_padding, groups);
  };
  return planted_convolution(out, exact).to(input.device());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, c10::SymIntArrayRef stride,
    c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation, bool transposed, c10::SymIntArrayRef output_padding,
    c10::SymInt groups, std::array<bool, 3> mask) {
  const at::Tensor g = to_host(grad_output), in = to_host(input), w = to_host(weight);
  const int64_t channels = transposed ? w.size(1) * groups.expect_int() : w.size(0);
  auto [gi, gw, gb] = timed_kernel([&] {
    return at::convolution_backward(g, in, w, std::vector<int64_t>{channels}, C10_AS_INTARRAYREF_SLOW(stride),
                                    C10_AS_INTARRAYREF_SLOW(padding), C10_AS_INTARRAYREF_SLOW(dilation), transposed,
                                    C10_AS_INTARRAYREF_SLOW(output_padding), groups.expect_int(), mask);
  });
  auto back = [&](const at::Tensor& t) { return t.defined() ? t.to(input.device()) : t; };
  return {back(gi), back(gw), back(gb)};
}

// Module::to(sim) swaps each parameter's data for a sim tensor: dense strided tensors may trade.
bool compatible_shallow_copy(const at::Tensor& self, const at::Tensor& from) {
  return self.layout() == c10::Layout::Strided && from.layout() == c10::Layout::Strided;
}

// Attention picks a fused kernel per device; the sim has none, so the math path (plain ops) runs.
int64_t fused_sdp_choice(const at::Tensor&, const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                         double, bool, std::optional<double>, bool) {
  return 0;  // sdp::SDPBackend::math
}

// aten::index takes its indices as a list of optional tensors, which the boxed CPU fallback leaves
// on the device (the CPU kernel then refuses them: "indices should be either on cpu or on the same
// device as the indexed tensor"); Hugging Face's attention masks index so. The sim moves them.
at::Tensor index(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices) {
  c10::List<std::optional<at::Tensor>> host;
  for (size_t k = 0; k < indices.size(); ++k) {
    const std::optional<at::Tensor> i = indices.get(k);
    host.push_back(i && i->defined() ? std::optional<at::Tensor>(i->cpu()) : i);
  }
  return at::index(self.cpu(), host).to(self.device());
}

// A device kernel writes only tensors on its device: a CPU tensor the op would write into (an out=
// or in-place argument, such as the CPU 0-dim `self` of masked_fill_ or the CPU output at::complex
// allocates after its first input) beside sim tensors is refused with PyTorch's own device check, as
// a real device refuses it. The CPU fallback would otherwise try to copy its result back into that
// CPU tensor through _copy_from_and_resize, which the CPU has no kernel for.
void check_written_devices(const c10::OperatorHandle& op, const torch::jit::Stack& stack) {
  const auto& args = op.schema().arguments();
  const size_t first = stack.size() - args.size();
  bool on_sim = false, written_on_cpu = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::IValue& v = stack[first + i];
    if (!v.isTensor() || !v.toTensor().defined()) continue;
    const c10::DeviceType type = v.toTensor().device().type();
    on_sim |= type == kSim;
    written_on_cpu |= type == c10::kCPU && args[i].alias_info() && args[i].alias_info()->isWrite();
  }
  TORCH_CHECK(!(on_sim && written_on_cpu),
              "Expected all tensors to be on the same device, but found at least two devices, sim:0 and cpu! (",
              op.schema().name(), " would write into a CPU tensor)");
}

void fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  KernelScope kernel;
  check_written_devices(op, *stack);
  if (run_planted(op, stack)) return;
  at::native::cpu_fallback(op, stack);
}

// What LibTorch asks of any PrivateUse1 device outside the dispatcher (autograd, storages, generators).
struct Hooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  c10::DeviceIndex deviceCount() const override { return 1; }
  c10::DeviceIndex getCurrentDevice() const override { return 0; }
  at::Device getDeviceFromPtr(void*) const override { return kDevice; }
  bool isPinnedPtr(const void*) const override { return false; }
  // Random ops run on the CPU kernels (the fallback), which draw from the CPU generator.
  const at::Generator& getDefaultGenerator(c10::DeviceIndex) const override {
    return at::detail::getDefaultCPUGenerator();
  }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t bytes) const override {
    c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
    c10::DataPtr fresh = g_allocator.allocate(bytes);
    const size_t keep = std::min(bytes, impl->nbytes());
    if (keep > 0) g_allocator.copy_data(fresh.get(), impl->data(), keep);
    impl->set_data_ptr_noswap(std::move(fresh));
    impl->set_nbytes(bytes);
  }
};

struct Registration {
  Registration() {
    c10::register_privateuse1_backend("sim");
    c10::SetAllocator(kSim, &g_allocator);
    at::RegisterPrivateUse1HooksInterface(new Hooks());
  }
};
const Registration g_registration;

}  // namespace

Access::Access(std::vector<at::Tensor> tensors) : tensors_(std::move(tensors)) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (const auto& t : tensors_) {
    if (!t.defined() || t.device().type() != kSim || !t.has_storage()) continue;
    Block* b = block_of(t.storage().data());
    if (!b || std::find(blocks_.begin(), blocks_.end(), b) != blocks_.end()) continue;
    if (static_cast<Block*>(b)->open++ == 0) protect(b, PROT_READ | PROT_WRITE);
    blocks_.push_back(b);
  }
}

Access::~Access() {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (void* p : blocks_) {
    auto* b = static_cast<Block*>(p);
    if (--b->open == 0) protect(b, PROT_NONE);
  }
}

at::Tensor to_host(const at::Tensor& t) { return t.to(at::kCPU); }

void write_back(const at::Tensor& dst, const at::Tensor& src) { dst.copy_(src); }

void set_memory_limit(std::size_t bytes) { g_limit = bytes; }

MemoryStats memory_stats() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_stats;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", empty_memory_format);
  m.impl("empty_strided", empty_strided);
  m.impl("as_strided", as_strided);
  m.impl("view", view);
  m.impl("_reshape_alias", reshape_alias);
  m.impl("unfold", unfold);
  m.impl("view_as_real", view_as_real);
  m.impl("view_as_complex", view_as_complex);
  m.impl("set_.source_Storage", set_storage);
  m.impl("set_.source_Tensor", set_tensor);
  m.impl("set_.source_Storage_storage_offset", set_storage_offset);
  m.impl("resize_", resize);
  m.impl("_copy_from", copy_from);
  m.impl("_copy_from_and_resize", copy_from_and_resize);
  m.impl("_local_scalar_dense", local_scalar_dense);
  m.impl("convolution_overrideable", convolution);
  m.impl("convolution_backward_overrideable", convolution_backward);
  m.impl("_has_compatible_shallow_copy_type", compatible_shallow_copy);
  m.impl("_fused_sdp_choice", fused_sdp_choice);
  m.impl("index.Tensor", index);
  m.impl("native_batch_norm", torch::CppFunction::makeFromBoxedFunction<&native_batch_norm>());
  // native_group_norm has a CompositeExplicitAutograd kernel (math_group_norm) that a device without
  // its own kernel gets ahead of the fallback, and it views its input as [N, group, -1], which fails
  // on a channels_last input. The sim runs the CPU kernel, which takes any memory format.
  m.impl("native_group_norm", torch::CppFunction::makeFromBoxedFunction<&fallback>());
  // MPS and CUDA have fused kernels for these two backwards. A device without them gets PyTorch's
  // composite formula ahead of the fallback (tanh(softplus(x)) + x * sigmoid(x) * (1 - tanh^2) for
  // mish), whose float16/bfloat16 intermediates cancel where the derivative crosses zero: an error
  // of the device the sim stands for would not be. The sim runs the CPU's fused kernels.
  m.impl("mish_backward", torch::CppFunction::makeFromBoxedFunction<&fallback>());
  m.impl("silu_backward", torch::CppFunction::makeFromBoxedFunction<&fallback>());
}

// Materialising a lazy conjugate clones, and a clone copies: without these, a copy of a conjugated
// sim tensor recurses until the stack overflows. The sim's copy applies the bits itself.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) { m.impl("_copy_from", torch::CppFunction::makeFallthrough()); }
TORCH_LIBRARY_IMPL(aten, Negative, m) { m.impl("_copy_from", torch::CppFunction::makeFallthrough()); }

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) { m.fallback(torch::CppFunction::makeFromBoxedFunction<&fallback>()); }

}  // namespace sim

// For the sim's own unit tests (looked up with dlsym): allocator statistics and the memory size.
extern "C" __attribute__((visibility("default"))) void mpscheck_sim_memory_stats(std::size_t out[3]) {
  const sim::MemoryStats s = sim::memory_stats();
  out[0] = s.current, out[1] = s.peak, out[2] = s.count;
}
extern "C" __attribute__((visibility("default"))) void mpscheck_sim_set_memory_limit(std::size_t bytes) {
  sim::set_memory_limit(bytes);
}

// The device's name, as Metal names an MPS device: MPSCHECK_SIM_DEVICE_NAME, so a test can make the
// sim a hosted runner's "Apple Paravirtual device".
extern "C" __attribute__((visibility("default"))) const char* mpscheck_device_name() {
  static const std::string name = [] {
    const char* env = std::getenv("MPSCHECK_SIM_DEVICE_NAME");
    return std::string(env && *env ? env : "mpscheck sim device");
  }();
  return name.c_str();
}

// A plugin with no cases: loading it is what registers the device.
MPSCHECK_PLUGIN("sim-device", "0.1.0")

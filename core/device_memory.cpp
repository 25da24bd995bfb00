#include "core/device_memory.hpp"

#include <ATen/detail/MPSHooksInterface.h>
#include <c10/core/Allocator.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <string>

#include "core/plugin_host.hpp"

#include <dlfcn.h>

#if defined(__APPLE__)
#include <mach/mach.h>
#endif

namespace mpscheck {

namespace {

constexpr std::size_t kAggregate = static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);

// Any device whose allocator is a c10::DeviceAllocator (CUDA's caching allocator, MPS's, a plugin
// device's): allocated bytes now and at their peak, reserved bytes (what the allocator holds from
// the driver, its cache included) now and at their peak, and the device's total as its maximum.
class AllocatorMemory : public DeviceMemory {
 public:
  AllocatorMemory(c10::DeviceAllocator* allocator, c10::DeviceIndex index) : allocator_(allocator), index_(index) {}
  std::optional<std::int64_t> allocated() override { return stats().allocated_bytes[kAggregate].current; }
  std::optional<std::int64_t> peak_allocated() override { return stats().allocated_bytes[kAggregate].peak; }
  std::optional<std::int64_t> driver_allocated() override { return stats().reserved_bytes[kAggregate].current; }
  std::optional<std::int64_t> driver_peak() override { return stats().reserved_bytes[kAggregate].peak; }
  std::optional<std::int64_t> recommended_max() override {
    try {
      const auto [free, total] = allocator_->getMemoryInfo(index_);
      (void)free;
      // An allocator without a bound may say SIZE_MAX: that is no figure.
      if (total > 0 && total < (std::size_t{1} << 62)) return static_cast<std::int64_t>(total);
    } catch (const c10::Error&) {
      // getMemoryInfo is optional for a DeviceAllocator ("not implemented for this allocator yet").
    }
    return std::nullopt;
  }
  void reset_peak() override { allocator_->resetPeakStats(index_); }

 protected:
  c10::CachingDeviceAllocator::DeviceStats stats() { return allocator_->getDeviceStats(index_); }

 private:
  c10::DeviceAllocator* allocator_;
  c10::DeviceIndex index_;
};

// MPS: its allocator's statistics, and from LibTorch's MPS hooks the driver's figure (Metal's
// currentAllocatedSize, the allocator's pool included) and Metal's recommendedMaxWorkingSetSize.
// The driver figure has no peak counter: the watch samples it. Never run on a Mac here.
class MpsMemory final : public AllocatorMemory {
 public:
  using AllocatorMemory::AllocatorMemory;
  std::optional<std::int64_t> driver_allocated() override {
    return static_cast<std::int64_t>(at::detail::getMPSHooks().getDriverAllocatedMemory());
  }
  std::optional<std::int64_t> driver_peak() override { return std::nullopt; }
  std::optional<std::int64_t> recommended_max() override {
    return static_cast<std::int64_t>(at::detail::getMPSHooks().getRecommendedMaxMemory());
  }
};

c10::DeviceAllocator* device_allocator(c10::Allocator* a) { return dynamic_cast<c10::DeviceAllocator*>(a); }

// The kernel's figure for this process, in bytes: "VmHWM" (resident peak) or "VmRSS" (now).
std::optional<std::int64_t> proc_status_bytes(const char* field) {
#if defined(__linux__)
  std::ifstream in("/proc/self/status");
  const std::string prefix = std::string(field) + ":";
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) != 0) continue;
    long long kb = -1;
    if (std::sscanf(line.c_str() + prefix.size(), "%lld", &kb) == 1 && kb >= 0) return kb * 1024;
  }
#else
  (void)field;
#endif
  return std::nullopt;
}

// The process's memory now: macOS's physical footprint (what Activity Monitor shows), Linux's RSS.
std::optional<std::int64_t> process_now() {
#if defined(__APPLE__)
  task_vm_info_data_t info{};
  mach_msg_type_number_t count = TASK_VM_INFO_COUNT;
  if (task_info(mach_task_self(), TASK_VM_INFO, reinterpret_cast<task_info_t>(&info), &count) != KERN_SUCCESS)
    return std::nullopt;
  return static_cast<std::int64_t>(info.phys_footprint);
#else
  return proc_status_bytes("VmRSS");
#endif
}

std::int64_t or_none(std::optional<std::int64_t> v) { return v && *v >= 0 ? *v : -1; }

#if defined(__APPLE__)
// MTLCreateSystemDefaultDevice().name.UTF8String, through the Objective-C runtime's C entry points,
// looked up at run time (LibTorch's MPS backend has loaded Metal by then), so nothing links Metal.
// Never run on a Mac here.
std::string metal_device_name() {
  using Create = void* (*)();
  using Send = void* (*)(void*, void*);
  using Selector = void* (*)(const char*);
  auto create = reinterpret_cast<Create>(::dlsym(RTLD_DEFAULT, "MTLCreateSystemDefaultDevice"));
  auto send = reinterpret_cast<Send>(::dlsym(RTLD_DEFAULT, "objc_msgSend"));
  auto selector = reinterpret_cast<Selector>(::dlsym(RTLD_DEFAULT, "sel_registerName"));
  if (!create || !send || !selector) return {};
  void* device = create();
  void* name = device ? send(device, selector("name")) : nullptr;
  const char* text = name ? static_cast<const char*>(send(name, selector("UTF8String"))) : nullptr;
  return text ? text : "";
}
#endif

}  // namespace

std::string device_name(const c10::Device& device) {
#if defined(__APPLE__)
  if (device.is_mps()) return metal_device_name();
#endif
  if (device.is_privateuseone()) {
    using Name = const char* (*)();
    if (auto fn = reinterpret_cast<Name>(find_plugin_function("mpscheck_device_name"))) {
      const char* name = fn();
      return name ? name : "";
    }
  }
  return {};
}

std::unique_ptr<DeviceMemory> device_memory(const c10::Device& device) {
  if (device.is_cpu()) return nullptr;
  const c10::DeviceIndex index = device.has_index() ? device.index() : 0;
  try {
    if (device.is_mps()) {
      if (auto* a = device_allocator(at::detail::getMPSHooks().getMPSDeviceAllocator()))
        return std::make_unique<MpsMemory>(a, index);
      return nullptr;
    }
    if (auto* a = device_allocator(c10::GetAllocator(device.type())))
      return std::make_unique<AllocatorMemory>(a, index);
  } catch (const c10::Error&) {
  }
  return nullptr;
}

std::optional<std::int64_t> process_peak_bytes() {
#if defined(__linux__)
  return proc_status_bytes("VmHWM");
#else
  return process_now();  // no peak to read: MemoryWatch samples it
#endif
}

std::optional<std::int64_t> process_resident_bytes() { return process_now(); }

bool reset_process_peak() {
#if defined(__linux__)
  // "5" resets the resident high-water mark to the current RSS (Linux 4.0+).
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
#else
  return false;
#endif
}

namespace {
// Device types whose allocator has shown it keeps both peaks (allocated and driver): a watch saw
// allocations and the counters held them. A counter kept once is kept always, so later watches on
// that device need no sampling thread (whose start, wake-ups and join cost a loaded machine up to
// milliseconds per case).
std::mutex g_counting_mutex;
std::set<int> g_counting_devices;
bool keeps_peaks(c10::DeviceType t) {
  std::lock_guard<std::mutex> lock(g_counting_mutex);
  return g_counting_devices.count(static_cast<int>(t)) > 0;
}
}  // namespace

MemoryWatch::MemoryWatch(const c10::Device& device) : device_(device_memory(device)), type_(device.type()) {
  process_reset_ = reset_process_peak();
  if (device_) {
    try {
      device_->reset_peak();
    } catch (const c10::Error&) {
    }
  }
  if ((device_ && !keeps_peaks(type_)) || !process_reset_) sampler_ = std::thread([this] { sample(); });
}

MemoryWatch::~MemoryWatch() { stop(); }

void MemoryWatch::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (sampler_.joinable()) sampler_.join();
}

void MemoryWatch::sample() {
  std::int64_t process = -1;
  while (!stop_) {
    std::int64_t allocated = -1, driver = -1;
    try {
      if (device_) allocated = or_none(device_->allocated()), driver = or_none(device_->driver_allocated());
    } catch (const c10::Error&) {
    }
    if (!process_reset_) process = std::max(process, or_none(process_now()));
    std::unique_lock<std::mutex> lock(mutex_);
    sampled_ = std::max(sampled_, allocated);
    sampled_driver_ = std::max(sampled_driver_, driver);
    sampled_process_ = std::max(sampled_process_, process);
    wake_.wait_for(lock, std::chrono::milliseconds(1), [this] { return stop_.load(); });
  }
}

MemoryFigures MemoryWatch::figures() {
  if (figures_) return *figures_;
  stop();
  MemoryFigures m;
  if (device_) {
    std::int64_t counter = -1, now = -1, driver_counter = -1, driver_now = -1, max = -1;
    try {
      counter = or_none(device_->peak_allocated());
      now = or_none(device_->allocated());
      driver_counter = or_none(device_->driver_peak());
      driver_now = or_none(device_->driver_allocated());
      max = or_none(device_->recommended_max());
    } catch (const c10::Error&) {
    }
    const std::int64_t sampled = std::max(sampled_, now), driver_sampled = std::max(sampled_driver_, driver_now);
    // A counter of 0 under allocations the samples saw is no counter (an allocator that keeps none).
    if (counter > 0 && counter >= sampled) {
      m.peak_allocated = counter;
      m.peak_source = "counter";
    } else if (sampled >= 0) {
      m.peak_allocated = sampled;
      m.peak_source = "sampled";
    }
    m.driver_peak = driver_counter > 0 && driver_counter >= driver_sampled ? driver_counter : driver_sampled;
    m.recommended_max = max;
    if (sampled_ > 0 && sampled_driver_ > 0 && m.peak_source == "counter" && driver_counter >= sampled_driver_) {
      std::lock_guard<std::mutex> lock(g_counting_mutex);
      g_counting_devices.insert(static_cast<int>(type_));
    }
  }
  m.process_peak = process_reset_ ? or_none(process_peak_bytes()) : std::max(sampled_process_, or_none(process_now()));
  figures_ = m;
  return m;
}

}  // namespace mpscheck

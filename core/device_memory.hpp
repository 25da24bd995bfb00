// Memory figures of one case's target run: what the device's allocator held at its peak, the
// driver's high-water mark, the worker process's resident peak, and the device's recommended
// maximum. Each device kind answers through DeviceMemory; where its allocator keeps no peak, the
// peak is sampled while the target runs.
#pragma once

#include "checks/result.hpp"

#include <c10/core/Device.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace mpscheck {

// What one device says about its memory, in bytes; nothing where it has no such figure.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  virtual std::optional<std::int64_t> allocated() = 0;         // tensors' memory now
  virtual std::optional<std::int64_t> peak_allocated() = 0;    // since reset_peak(); 0 or none: no peak kept
  virtual std::optional<std::int64_t> driver_allocated() = 0;  // what the allocator holds from the driver now
  virtual std::optional<std::int64_t> driver_peak() = 0;       // since reset_peak(); 0 or none: no peak kept
  virtual std::optional<std::int64_t> recommended_max() = 0;
  virtual void reset_peak() = 0;
};

// The memory interface of `device`: MPS through LibTorch's MPS hooks and its allocator; CUDA and
// plugin devices (PrivateUse1) through their c10::DeviceAllocator's statistics. Null for the CPU
// and for a device whose allocator gives no statistics.
std::unique_ptr<DeviceMemory> device_memory(const c10::Device& device);

// The device's own name: Metal's for MPS (macOS only), a plugin device's through the function
// `const char* mpscheck_device_name()` it may export; empty where unknown (CUDA is not asked).
std::string device_name(const c10::Device& device);

// The process's resident high-water mark (Linux: VmHWM; macOS: the physical footprint's lifetime
// peak), and resetting it to the current figure where the OS allows (Linux: /proc/self/clear_refs).
std::optional<std::int64_t> process_peak_bytes();
bool reset_process_peak();
// The process's memory now: Linux's resident set (VmRSS), macOS's physical footprint.
std::optional<std::int64_t> process_resident_bytes();

// Measures one target run from construction to figures(): resets the peaks, and samples the
// device's allocated and driver memory every millisecond on a thread of its own, so a device
// whose allocator keeps no peak still gets one (a spike shorter than a sample is missed: the
// figure says "sampled"). Once a watch has seen a device's counters hold what it sampled, later
// watches on that device type trust the counters and start no thread.
class MemoryWatch {
 public:
  explicit MemoryWatch(const c10::Device& device);
  ~MemoryWatch();
  MemoryWatch(const MemoryWatch&) = delete;
  MemoryWatch& operator=(const MemoryWatch&) = delete;
  // Stops sampling and reads the figures; later calls return the same.
  MemoryFigures figures();

 private:
  void sample();
  void stop();
  std::unique_ptr<DeviceMemory> device_;
  c10::DeviceType type_;
  bool process_reset_ = false;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable wake_;  // ends the sampler's wait at once when the run ends
  std::int64_t sampled_ = -1, sampled_driver_ = -1, sampled_process_ = -1;
  std::thread sampler_;
  std::optional<MemoryFigures> figures_;
};

}  // namespace mpscheck

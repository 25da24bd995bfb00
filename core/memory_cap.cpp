#include "core/memory_cap.hpp"

#include "checks/memory.hpp"
#include "core/device_memory.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace mpscheck {

std::optional<std::int64_t> declared_device_bytes(const Workload& w) {
  for (const std::string& tag : w.tags()) {
    if (tag.rfind(kDeviceBytesTag, 0) != 0) continue;
    const std::string n = tag.substr(std::char_traits<char>::length(kDeviceBytesTag));
    std::size_t used = 0;
    long long bytes = 0;
    try {
      bytes = std::stoll(n, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != n.size() || n.empty() || bytes <= 0)
      throw std::invalid_argument(fmt::format("case '{}': tag '{}' needs a positive byte count", w.id(), tag));
    return bytes;
  }
  return std::nullopt;
}

std::optional<std::string> memory_cap_reason(std::int64_t need, const std::string& device,
                                             std::optional<std::int64_t> device_max,
                                             std::optional<std::int64_t> host_available, bool target_on_host) {
  if (device_max && need > *device_max)
    return fmt::format(
        "not run: it needs about {} on {}, which recommends at most {} (a huge case runs only where it fits; "
        "run it on a device with more memory)",
        bytes_text(need), device, bytes_text(*device_max));
  const std::int64_t host_need = (target_on_host ? 3 : 2) * need;
  if (host_available && host_need > *host_available)
    return fmt::format(
        "not run: it needs about {} of this machine's memory ({}the CPU reference's side), and {} is available "
        "(a huge case runs only where it fits; free memory or run it on a larger machine)",
        bytes_text(host_need), target_on_host ? "the target's and " : "", bytes_text(*host_available));
  return std::nullopt;
}

std::optional<std::int64_t> host_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    long long kib = 0;
    if (fields >> kib && kib > 0) return static_cast<std::int64_t>(kib) * 1024;
  }
  return std::nullopt;
}

std::optional<std::string> memory_cap(const Workload& w, const TargetSpec& target) {
  const std::optional<std::int64_t> need = declared_device_bytes(w);
  if (!need) return std::nullopt;
  const c10::Device device = to_device(target);
  std::optional<std::int64_t> device_max;
  if (const std::unique_ptr<DeviceMemory> memory = device_memory(device)) device_max = memory->recommended_max();
  return memory_cap_reason(*need, target.str(), device_max, host_available_bytes(), device.is_cpu());
}

}  // namespace mpscheck

#include "checks/memory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace mpscheck {

std::string bytes_text(std::int64_t bytes) {
  if (bytes < 0) return "-";
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024 && unit < 4) v /= 1024, ++unit;
  if (unit == 0) return fmt::format("{} B", bytes);
  return fmt::format("{:.{}f} {}", v, v < 10 ? 2 : v < 100 ? 1 : 0, kUnits[unit]);
}

bool is_out_of_memory(const std::string& message) {
  std::string m = message;
  std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // c10::OutOfMemoryError's texts: "MPS backend out of memory (MPS allocated: ...)", "CUDA out of
  // memory. Tried to allocate ...", the CPU allocator's "DefaultCPUAllocator: not enough memory: you
  // tried to allocate ...".
  return m.find("out of memory") != std::string::npos || m.find("not enough memory") != std::string::npos;
}

void judge_memory(CaseResult& r) {
  if (!r.memory) return;
  const MemoryFigures& m = *r.memory;
  const bool known_max = m.recommended_max > 0;
  if (r.status == Status::Memory) {
    if (known_max && r.message.find("recommends") == std::string::npos)
      r.message += fmt::format("; the device recommends at most {}", bytes_text(m.recommended_max));
    return;
  }
  if (r.status != Status::Pass && r.status != Status::Fallback) return;
  if (!known_max || m.peak_allocated <= m.recommended_max) return;
  const std::string was = r.status == Status::Pass ? "; its results agree with the reference"
                                                   : "; " + std::string(to_string(r.status)) + ": " + r.message;
  r.status = Status::Memory;
  r.message = fmt::format("needs {} of the {} the device recommends (peak allocated while the target ran, {}){}",
                          bytes_text(m.peak_allocated), bytes_text(m.recommended_max),
                          m.peak_source.empty() ? "counter" : m.peak_source, was);
}

std::string memory_text(const MemoryFigures& m) {
  std::string s;
  auto add = [&](const std::string& part) { s += (s.empty() ? "" : ", ") + part; };
  if (m.peak_allocated >= 0)
    add(fmt::format("peak {} allocated{}", bytes_text(m.peak_allocated),
                    m.peak_source.empty() ? "" : " (" + m.peak_source + ")"));
  if (m.driver_peak >= 0) add("driver " + bytes_text(m.driver_peak));
  if (m.process_peak >= 0) add("process " + bytes_text(m.process_peak));
  if (m.recommended_max >= 0) add("recommended max " + bytes_text(m.recommended_max));
  return s;
}

}  // namespace mpscheck

// Huge cases (past 2^31 elements) run only where they fit. A case declares what it needs on the
// target at its peak with the tag "device-bytes:N"; before it runs, the worker weighs that against
// what the target recommends (MPS: Metal's recommended working set; the sim: its memory limit;
// CUDA and plugin devices: their total) and against the memory this machine has available for the
// CPU reference, and a case that does not fit is a `skip` saying so, never an out-of-memory failure.
#pragma once

#include "core/target.hpp"

#include <mpscheck/workload.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace mpscheck {

inline constexpr const char* kDeviceBytesTag = "device-bytes:";

// N from a "device-bytes:N" tag; nothing when the case has none. Throws std::invalid_argument for a
// tag whose N is not a positive integer.
std::optional<std::int64_t> declared_device_bytes(const Workload& w);

// The decision on given figures: `need` bytes on `device` (which recommends `device_max`, when
// known), and twice `need` on the host for the reference side (`host_available`, when known; a
// target whose memory is the host's, the CPU, counts its own side there too). Nothing when it fits.
std::optional<std::string> memory_cap_reason(std::int64_t need, const std::string& device,
                                             std::optional<std::int64_t> device_max,
                                             std::optional<std::int64_t> host_available, bool target_on_host);

// The same for case `w` on `target`, with this process's figures; nothing for a case with no tag.
std::optional<std::string> memory_cap(const Workload& w, const TargetSpec& target);

// Linux: MemAvailable from /proc/meminfo; nothing elsewhere or when it cannot be read.
std::optional<std::int64_t> host_available_bytes();

}  // namespace mpscheck

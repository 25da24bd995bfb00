// The accelerator probe: before any case runs on an accelerator (and in `mpscheck env`), the worker
// allocates, runs a small op, synchronises, copies back and compares, under a deadline. A device
// that fails it is present but unusable (a GitHub-hosted macOS runner's MPS), not a source of findings.
#pragma once

#include "checks/result.hpp"
#include "core/device_tier.hpp"
#include "core/target.hpp"

#include <optional>
#include <string>

namespace mpscheck {

struct Config;
class Runner;

// The request id the worker answers with run_probe instead of a case.
inline constexpr const char* kProbeCaseId = "probe:accelerator";

// Worker side: the probe itself on `target`'s device. Pass, or Error quoting the device's error.
CaseResult run_probe(const TargetSpec& target);

struct ProbeFailure {
  std::string error;  // the device's own words (or the crash / the timeout)
  std::string line;   // the one line a run stops with (exit 3)
};

// Host side: probes `target` through `runner` (its worker) within `timeout_s`. Nothing when the
// device works (or is the CPU). `facts`, when given, gets what the probe learnt of the device
// (its name and recommended maximum memory), from which the run's tier is decided.
std::optional<ProbeFailure> probe_target(Runner& runner, const TargetSpec& target, double timeout_s,
                                         DeviceFacts* facts = nullptr);

// The one line for a device that failed its probe with `error`.
std::string unusable_device_line(const std::string& device, const std::string& error);

// For `mpscheck env`: every accelerator this LibTorch and the loaded plugins have, each probed in
// a short-lived worker: "mps: not available (...); sim: present but unusable (...)".
std::string probed_accelerator_status(const Config& cfg);

}  // namespace mpscheck

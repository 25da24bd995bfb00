// Target devices: parsing `--target`, what this LibTorch build can reach, synchronisation.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace mpscheck {

struct TargetSpec {
  std::string device = "auto";           // "auto" | "cpu" | "mps" | "cuda" (| "cuda:1")
  std::optional<c10::ScalarType> dtype;  // policy for float32 cases; none = float32

  // "mps", "cpu:bfloat16", "cuda:float16" — what a user types and reports show.
  std::string str() const;
  c10::ScalarType float_dtype() const { return dtype.value_or(c10::kFloat); }
};

struct BadTarget : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// Parses DEVICE[:DTYPE]; throws BadTarget naming what is wrong.
TargetSpec parse_target(const std::string& text);

// Device names this build and machine can run on, "cpu" first.
std::vector<std::string> available_devices();
// Why an accelerator is not available, for `env` and the auto-target line.
std::string accelerator_status();

struct ResolvedTarget {
  TargetSpec spec;
  std::string note;  // one line when auto fell back to a reduced-precision CPU target
};

// Resolves "auto" and checks availability. Throws TargetUnavailable listing what exists.
struct TargetUnavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};
ResolvedTarget resolve_target(const TargetSpec& requested);

c10::Device to_device(const TargetSpec& spec);

// Waits for all queued work on `device` (no-op on CPU).
void synchronize(const c10::Device& device);

}  // namespace mpscheck

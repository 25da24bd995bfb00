#include "checks/honest_runs.hpp"

#include "checks/judge.hpp"
#include "checks/rounded_ops.hpp"

namespace mpscheck {

namespace {

bool is_reduced(c10::ScalarType dtype) { return dtype == c10::kHalf || dtype == c10::kBFloat16; }

}  // namespace

HonestRuns honest_runs(CaseHost& host, c10::Device device, c10::ScalarType dtype, bool training_state) {
  HonestRuns h;
  if (!is_reduced(dtype)) return h;
  Placement rounded{c10::Device(c10::kCPU), c10::kFloat, Side::Reference};
  rounded.round_inputs_to = dtype;
  try {
    h.rounded = by_name(host.run(rounded, "rounded reference"));
  } catch (...) {
  }
  if (device.type() != c10::kCPU) {
    try {
      h.witness = by_name(host.run(Placement{c10::Device(c10::kCPU), dtype, Side::Reference}, "CPU witness"));
    } catch (...) {
    }
  }
  if (training_state && h.witness.empty()) {
    try {
      const RoundEveryResult every_result(dtype);
      h.emulated = by_name(host.run(rounded, "rounded-operation baseline"));
    } catch (...) {
    }
  }
  return h;
}

}  // namespace mpscheck

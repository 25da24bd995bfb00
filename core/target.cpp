#include "core/target.hpp"

#include <mpscheck/dtype_names.hpp>

#include <ATen/ATen.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/cuda.h>
#include <torch/mps.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>

namespace mpscheck {

namespace {
// The name a plugin gave the PrivateUse1 backend (e.g. the test-only "sim"), if one did.
std::string plugin_backend() {
  return c10::is_privateuse1_backend_registered() ? c10::get_privateuse1_backend() : std::string();
}

bool device_available(const std::string& type) {
  if (type == "cpu") return true;
  if (type == "mps") return torch::mps::is_available();
  if (type == "cuda") return at::hasCUDA();
  return !type.empty() && type == plugin_backend() && c10::impl::hasDeviceGuardImpl(c10::DeviceType::PrivateUse1);
}

bool is_device_name(const std::string& s) {
  if (s.empty() || !std::islower(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_';
  });
}
}  // namespace

std::string TargetSpec::str() const { return dtype ? device + ":" + dtype_name(*dtype) : device; }

TargetSpec parse_target(const std::string& text) {
  TargetSpec spec;
  std::string device = text, dtype;
  const auto colon = text.find(':');
  if (colon != std::string::npos) {
    device = text.substr(0, colon);
    dtype = text.substr(colon + 1);
  }
  // cuda:1 is a device index, not a dtype.
  if (device == "cuda" && !dtype.empty() && dtype.find_first_not_of("0123456789") == std::string::npos) {
    device = text;
    dtype.clear();
  }
  const std::string base = device.substr(0, device.find(':'));
  // A plugin may register a device under its own name (PrivateUse1), and plugins load after the
  // command line is read: any well-formed name passes here, resolve_target decides.
  if (!is_device_name(base))
    throw BadTarget(
        fmt::format("unknown target device '{}' in --target {}: use auto, cpu, mps or cuda (or the "
                    "name of a device a plugin registers), optionally with :float16 or :bfloat16",
                    base, text));
  spec.device = device;
  if (!dtype.empty()) {
    const std::optional<c10::ScalarType> t = dtype_from_word(dtype);
    if (!t || (*t != c10::kFloat && *t != c10::kHalf && *t != c10::kBFloat16))
      throw BadTarget(fmt::format("unknown dtype '{}' in --target {}: use float32, float16 or bfloat16", dtype, text));
    spec.dtype = *t;
  }
  if (spec.dtype == c10::kFloat) spec.dtype.reset();
  return spec;
}

std::vector<std::string> available_devices() {
  std::vector<std::string> out{"cpu"};
  for (const char* d : {"mps", "cuda"})
    if (device_available(d)) out.emplace_back(d);
  if (const std::string p = plugin_backend(); device_available(p)) out.push_back(p);
  return out;
}

std::string accelerator_status() {
  std::string s;
  s += torch::mps::is_available() ? "mps: available"
                                  : "mps: not available (this LibTorch has no MPS backend or no Metal device)";
  s += "; ";
  s += at::hasCUDA() ? fmt::format("cuda: available ({} devices)", torch::cuda::device_count())
                     : "cuda: not available (CPU-only LibTorch or no GPU)";
  if (const std::string p = plugin_backend(); device_available(p))
    s += fmt::format("; {}: available (PrivateUse1 backend from a plugin)", p);
  return s;
}

ResolvedTarget resolve_target(const TargetSpec& requested) {
  ResolvedTarget r{requested, {}};
  if (requested.device == "auto") {
    for (const char* d : {"mps", "cuda"}) {
      if (device_available(d)) {
        r.spec.device = d;
        return r;
      }
    }
    r.spec.device = "cpu";
    if (!requested.dtype) r.spec.dtype = c10::kBFloat16;
    r.note = fmt::format(
        "no accelerator in this LibTorch build ({}); checking the reduced-precision "
        "CPU target {} instead",
        accelerator_status(), r.spec.str());
    return r;
  }
  const std::string base = requested.device.substr(0, requested.device.find(':'));
  if (!device_available(base)) {
    const auto devices = available_devices();
    throw TargetUnavailable(
        fmt::format("target '{}' is not available here ({}); available targets: {} (each optionally :float16 or "
                    ":bfloat16)",
                    requested.str(), accelerator_status(), fmt::join(devices, ", ")));
  }
  return r;
}

c10::Device to_device(const TargetSpec& spec) { return c10::Device(spec.device); }

void synchronize(const c10::Device& device) {
  if (device.is_cpu()) return;
  // One path for every accelerator: MPS, CUDA and plugin devices all register a device guard
  // whose synchronizeDevice waits for the work queued on the device (and raises its errors).
  const auto* guard = c10::impl::getDeviceGuardImpl(device.type());
  guard->synchronizeDevice(device.has_index() ? device.index() : guard->getDevice().index());
}

}  // namespace mpscheck

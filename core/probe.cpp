#include "core/probe.hpp"

#include "core/config.hpp"
#include "core/device_memory.hpp"
#include "core/plugin_host.hpp"
#include "core/worker.hpp"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <unistd.h>

namespace mpscheck {

namespace {
// Long enough for a cold device to compile its first kernel; a hung one must not cost a run.
constexpr double kProbeDeadlineS = 60;

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  if (s.size() > 400) s = s.substr(0, 400) + "...";
  return s;
}
}  // namespace

CaseResult run_probe(const TargetSpec& target) {
  CaseResult r;
  r.id = kProbeCaseId;
  r.kind = CaseKind::Probe;
  r.target = target.str();
  r.status = Status::Error;
  try {
    const c10::Device device = to_device(target);
    const at::Tensor a = at::arange(16, at::kFloat).reshape({4, 4}) / 8;
    const at::Tensor expected = at::mm(a, a) + 1;
    const at::Tensor on_device = a.to(device);
    const at::Tensor result = at::mm(on_device, on_device) + 1;
    synchronize(device);
    const at::Tensor back = result.to(at::kCPU);
    if (!at::allclose(back, expected, 1e-4, 1e-5)) {
      r.message = fmt::format("a 4x4 matrix product came back wrong (max abs error {:.3g})",
                              (back - expected).abs().max().item<double>());
      return r;
    }
    r.status = Status::Pass;
    // What the tier is decided from (core/device_tier.hpp): the device's name and memory.
    r.device_name = device_name(device);
    if (const auto memory = device_memory(device)) {
      MemoryFigures m;
      if (const auto max = memory->recommended_max()) m.recommended_max = *max;
      r.memory = m;
    }
  } catch (const c10::Error& e) {
    r.message = one_line(e.what_without_backtrace());
  } catch (const std::exception& e) {
    r.message = one_line(e.what());
  }
  return r;
}

std::string unusable_device_line(const std::string& device, const std::string& error) {
  std::string line = fmt::format(
      "target '{}' is present but unusable: allocating, running a 4x4 matrix product, "
      "synchronising and copying back failed: {}",
      device, error);
  if (device == "mps")
    line +=
        "; GitHub-hosted macOS runners have no usable MPS (Apple's Virtualization Framework): run on a "
        "self-hosted Apple Silicon runner, or use --target cpu:bfloat16 there";
  else
    line += fmt::format("; check the {} device and its driver, or use --target cpu:bfloat16", device);
  return line;
}

std::optional<ProbeFailure> probe_target(Runner& runner, const TargetSpec& target, double timeout_s,
                                         DeviceFacts* facts) {
  const std::string device = target.device.substr(0, target.device.find(':'));
  if (device == "cpu") return std::nullopt;
  const CaseResult r = runner.run(kProbeCaseId, std::min(timeout_s, kProbeDeadlineS));
  if (facts) {
    facts->name = r.device_name;
    if (r.memory) facts->recommended_max = r.memory->recommended_max;
  }
  if (r.status == Status::Pass) return std::nullopt;
  std::string why = r.message;
  if (r.status == Status::Timeout)
    why = fmt::format("no answer within {:g} s (the device hangs)", std::min(timeout_s, kProbeDeadlineS));
  why = one_line(why);
  return ProbeFailure{why, unusable_device_line(device, why)};
}

std::string probed_accelerator_status(const Config& cfg) {
  // Plugins may register a device (PrivateUse1): load them as a run would.
  PluginHost host;
  std::vector<std::string> dirs;
  if (cfg.default_plugins) {
    const auto d = PluginHost::default_plugin_dir();
    if (!d.empty()) dirs.push_back(d.string());
  }
  for (const auto& d : cfg.plugin_dirs) dirs.push_back(std::filesystem::absolute(d).string());
  for (const auto& d : dirs) {
    try {
      host.load_directory(d);
    } catch (const std::exception&) {
      // A broken plugin folder is reported by a run; env still shows the devices it can.
    }
  }
  std::string status = accelerator_status();
  for (const auto& device : available_devices()) {
    if (device == "cpu") continue;
    char log[] = "/tmp/mpscheck-probe-XXXXXX";
    const int fd = ::mkstemp(log);
    if (fd >= 0) ::close(fd);
    std::vector<std::string> plugin_dirs;
    for (const auto& d : cfg.plugin_dirs) plugin_dirs.push_back(std::filesystem::absolute(d).string());
    WorkerConfig worker_config;
    worker_config.target.device = device;
    worker_config.seed = cfg.seed;
    worker_config.quick = true;
    worker_config.threads = cfg.threads;
    worker_config.plugin_dirs = plugin_dirs;
    worker_config.default_plugins = cfg.default_plugins;
    std::optional<ProbeFailure> failed;
    {
      Runner runner(worker_config, log);
      failed = probe_target(runner, TargetSpec{device, {}}, cfg.timeout_for_op());
    }
    ::unlink(log);
    // "sim: available (...)" becomes what the probe found.
    const std::string found = failed ? fmt::format("{}: present but unusable ({})", device, failed->error)
                                     : fmt::format("{}: available, the probe passed", device);
    const auto at = status.find(device + ": available");
    if (at == std::string::npos) {
      status += "; " + found;
    } else {
      const auto end = status.find("; ", at);
      status.replace(at, end == std::string::npos ? std::string::npos : end - at, found);
    }
  }
  return status;
}

}  // namespace mpscheck

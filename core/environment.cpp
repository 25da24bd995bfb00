#include "core/environment.hpp"

#include "core/target.hpp"
#include "core/version.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <torch/version.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sys/utsname.h>
#include <thread>

extern char** environ;

namespace mpscheck {

namespace {

std::string os_description() {
  std::string pretty;
  std::ifstream os("/etc/os-release");
  for (std::string line; std::getline(os, line);) {
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      pretty = line.substr(12);
      pretty.erase(std::remove(pretty.begin(), pretty.end(), '"'), pretty.end());
    }
  }
  utsname u{};
  if (uname(&u) == 0) {
    const std::string kernel = fmt::format("{} {} {}", u.sysname, u.release, u.machine);
    return pretty.empty() ? kernel : pretty + " (" + kernel + ")";
  }
  return pretty;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown";
}

}  // namespace

std::vector<std::string> loaded_blas_libraries() {
  std::set<std::string> libs;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    const std::string base = path.substr(path.rfind('/') + 1);
    if (base.find("blas") != std::string::npos || base.find("mkl") != std::string::npos ||
        base.find("lapack") != std::string::npos)
      libs.insert(path);
  }
  return {libs.begin(), libs.end()};
}

nlohmann::json collect_environment(const EnvironmentInput& in) {
  nlohmann::json env;
  env["mpscheck_version"] = kVersion;
  env["torch_version"] = TORCH_VERSION;
  env["os"] = os_description();
  env["cpu"] = cpu_model();
  env["cores"] = std::thread::hardware_concurrency();
  env["threads"] = at::get_num_threads();
  env["blas"] = loaded_blas_libraries();
  env["target"] = in.target;
  env["available_devices"] = available_devices();
  env["accelerators"] = accelerator_status();
  env["seed"] = in.seed;
  nlohmann::json vars = nlohmann::json::object();
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    if (kv.rfind("PYTORCH_", 0) == 0 || kv.rfind("OMP_NUM_THREADS", 0) == 0 || kv.rfind("MKL_NUM_THREADS", 0) == 0 ||
        kv.rfind("OPENBLAS_", 0) == 0) {
      const auto eq = kv.find('=');
      vars[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
    }
  }
  env["variables"] = vars;
  return env;
}

}  // namespace mpscheck

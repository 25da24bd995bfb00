#include "core/environment.hpp"

#include "core/host_text.hpp"
#include "core/platform.hpp"
#include "core/target.hpp"
#include "reports/version.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

extern char** environ;

namespace mpscheck {

namespace {

// The build switches that decide CPU baseline speed, from LibTorch's own configuration text.
std::string build_flags() {
  const std::string config = at::show_config();
  std::vector<std::string> keep;
  for (const char* key : {"BLAS_INFO=", "LAPACK_INFO=", "USE_MKLDNN=", "USE_OPENMP=", "USE_CUDA=", "USE_MPS="}) {
    const auto p = config.find(key);
    if (p == std::string::npos) continue;
    const auto end = config.find_first_of(", \n", p);
    keep.push_back(config.substr(p, end == std::string::npos ? std::string::npos : end - p));
  }
  return fmt::format("{}", fmt::join(keep, " "));
}

}  // namespace

std::string cpu_model_name() { return current_platform().cpu_model(); }

std::vector<std::string> loaded_blas_libraries() {
  std::vector<std::string> libs;
  for (const auto& path : current_platform().loaded_libraries()) {
    const std::string base = path.substr(path.rfind('/') + 1);
    if (base.find("blas") != std::string::npos || base.find("mkl") != std::string::npos ||
        base.find("lapack") != std::string::npos || path.find("Accelerate") != std::string::npos ||
        path.find("BLAS") != std::string::npos)
      libs.push_back(path);
  }
  return libs;
}

std::vector<std::string> openmp_runtimes_among(const std::vector<std::string>& loaded_paths) {
  std::set<std::string> runtimes;
  for (const auto& path : loaded_paths) {
    const std::string base = path.substr(path.rfind('/') + 1);
    // The name, then a version or a wheel's hash (libgomp.so.1, libgomp-a34b3233.so.1, libiomp5.so), never
    // a longer name (libompl, a motion-planning library).
    for (const std::string name : {"libgomp", "libiomp5", "libomp"})
      if (base.rfind(name, 0) == 0 && base.size() > name.size() &&
          (base[name.size()] == '.' || base[name.size()] == '-') &&
          (base.find(".so") != std::string::npos || base.find(".dylib") != std::string::npos))
        runtimes.insert(path);
  }
  return {runtimes.begin(), runtimes.end()};
}

std::vector<std::string> loaded_libraries() { return current_platform().loaded_libraries(); }

std::string blas_name(const std::string& parallel_info, const std::string& build_config,
                      const std::vector<std::string>& loaded_libraries) {
  std::vector<std::string> said;
  // What the library says of itself at run time (MKL prints its version into ATen's parallel info).
  if (const auto p = parallel_info.find("Math Kernel Library Version "); p != std::string::npos) {
    const auto begin = p + std::strlen("Math Kernel Library Version ");
    const auto end = parallel_info.find_first_of(" -\n", begin);
    said.push_back("MKL " + parallel_info.substr(begin, end == std::string::npos ? std::string::npos : end - begin) +
                   " (ATen reports it at run time)");
  }
  // What LibTorch was built with.
  if (const auto p = build_config.find("BLAS_INFO="); p != std::string::npos) {
    const auto begin = p + std::strlen("BLAS_INFO=");
    const auto end = build_config.find_first_of(", \n", begin);
    const std::string info = build_config.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    if (!info.empty()) {
      const std::string known = info == "mkl"          ? "MKL"
                                : info == "open"       ? "OpenBLAS"
                                : info == "accelerate" ? "Accelerate"
                                : info == "blis"       ? "BLIS"
                                : info == "flexi"      ? "FlexiBLAS"
                                                       : info;
      said.push_back(said.empty() ? known + " (LibTorch's build: BLAS_INFO=" + info + ")"
                                  : "LibTorch's build: BLAS_INFO=" + info);
    }
  }
  for (const auto& path : loaded_libraries) said.push_back("loaded: " + path.substr(path.rfind('/') + 1));
  if (said.empty()) return "unknown (LibTorch names no BLAS and none is loaded)";
  return fmt::format("{}", fmt::join(said, "; "));
}

std::string cuda_versions(const std::string& build_config) {
  std::vector<std::string> found;
  std::istringstream lines(build_config);
  for (std::string line; std::getline(lines, line);) {
    const auto start = line.find_first_not_of(" -");
    if (start == std::string::npos) continue;
    const std::string item = line.substr(start);
    // Only the top-level items ("  - CuDNN 8.9.2"), not the nested "    - Built with CuDNN ..." lines.
    if (start > 4) continue;
    if (item.rfind("CUDA Runtime ", 0) == 0 || item.rfind("CuDNN ", 0) == 0) found.push_back(item);
  }
  return fmt::format("{}", fmt::join(found, ", "));
}

double measured_matmul_gflops() {
  constexpr std::int64_t n = 384;
  // One thread: on a busy machine, a multi-threaded product waits for whichever of its threads
  // was descheduled, and a slow BLAS is slow per core anyway.
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const at::Tensor a = at::rand({n, n}), b = at::rand({n, n});
  double best = std::numeric_limits<double>::infinity();
  (void)at::mm(a, b);  // warm-up: BLAS initialisation
  for (int i = 0; i < 7; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    (void)at::mm(a, b);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  at::set_num_threads(threads);
  return 2.0 * n * n * n / best / 1e9;
}

nlohmann::json collect_environment(const EnvironmentInput& in) {
  nlohmann::json env;
  env["mpscheck_version"] = kVersion;
  env["torch_version"] = TORCH_VERSION;
  env["torch_build"] = build_flags();
  env["parallel"] = at::get_parallel_info().substr(0, at::get_parallel_info().find("Environment variables"));
  const Platform& platform = current_platform();
  env["os"] = platform.os_description();
  env["os_version"] = platform.os_version();
  env["os_build"] = platform.os_build();
  env["cpu"] = platform.cpu_model();
  // Which of ATen's vectorised CPU kernels run ("AVX2", "AVX512", "DEFAULT"), and the CPU's
  // float16/bfloat16 features: together they decide how a cpu:float16/bfloat16 target rounds.
  env["cpu_kernels"] = at::get_cpu_capability();
  env["cpu_reduced_precision"] = platform.cpu_reduced_precision();
  if (const std::string driver = platform.gpu_driver(); !driver.empty()) env["gpu_driver"] = driver;
  if (const std::string cuda = cuda_versions(at::show_config()); !cuda.empty()) env["cuda"] = cuda;
  // The chip, GPU and Metal a Mac reports (none on Linux), each only where the machine said it.
  for (const auto& [key, value] : platform.machine_facts()) env[key] = value;
  env["cores"] = std::thread::hardware_concurrency();
  env["threads"] = at::get_num_threads();
  const std::vector<std::string> blas_libraries = loaded_blas_libraries();
  env["blas"] = blas_name(at::get_parallel_info(), at::show_config(), blas_libraries);
  env["blas_libraries"] = blas_libraries;
  env["openmp_runtimes"] = openmp_runtimes_among(loaded_libraries());
  env["matmul_gflops"] = std::round(measured_matmul_gflops() * 10) / 10;
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
  env["warnings"] = environment_warnings(env);
  // Variables and library paths are bytes (a Latin-1 folder is ordinary); the report is UTF-8.
  return valid_utf8_json(env);
}

std::string reduced_cpu_target_note(const nlohmann::json& env, const std::string& target) {
  const auto colon = target.find(':');
  if (target.substr(0, colon) != "cpu" || colon == std::string::npos || target.substr(colon + 1) == "float32")
    return {};
  const nlohmann::json features = env.value("cpu_reduced_precision", nlohmann::json::array());
  std::string listed;
  if (features.is_array())
    for (const auto& f : features)
      listed += (listed.empty() ? "" : ", ") + (f.is_string() ? f.get<std::string>() : f.dump());
  return fmt::format(
      "{} is this CPU's own {} kernels (ATen's {} kernels; the CPU's float16/bfloat16 features: {}): another CPU "
      "or LibTorch may round differently, so a verdict here holds for this machine, and a network chaotic in the "
      "dtype can pass here and fail on another",
      target, target.substr(colon + 1), env.value("cpu_kernels", std::string("unknown")),
      listed.empty() ? "none" : listed);
}

std::vector<std::string> environment_warnings(const nlohmann::json& env) {
  std::vector<std::string> w;
  // The loaded libraries decide; reports written before `blas` became a name held them in `blas`.
  const nlohmann::json listed =
      env.contains("blas_libraries") ? env["blas_libraries"] : env.value("blas", nlohmann::json());
  const auto blas = listed.is_array() ? listed.get<std::vector<std::string>>() : std::vector<std::string>{};
  bool fast_blas = false, reference_blas = false;
  for (const auto& path : blas) {
    if (path.find("openblas") != std::string::npos || path.find("mkl") != std::string::npos ||
        path.find("Accelerate") != std::string::npos || path.find("blis") != std::string::npos ||
        path.find("atlas") != std::string::npos)
      fast_blas = true;
    else if (path.find("libblas") != std::string::npos)
      reference_blas = true;
  }
  const double gflops = env.value("matmul_gflops", -1.0);
  if (gflops >= 0 && gflops < kSlowBlasGflops)
    w.push_back(fmt::format(
        "the CPU baseline multiplies float32 matrices at {:.1f} GFLOP/s on one core (an optimised BLAS gives "
        "tens per core): this LibTorch's BLAS is not an optimised one, so every speed-up is "
        "inflated; use a LibTorch with MKL, OpenBLAS or Accelerate (pip install torch==2.13.0)",
        gflops));
  else if (reference_blas && !fast_blas)
    w.push_back("the CPU baseline uses the reference BLAS (" + blas.front() +
                "): matmul and convolution run ~60x slower than with an optimised BLAS, so every speed-up is inflated; "
                "install an optimised one (Debian: apt-get install libopenblas0-pthread)");
  const auto vars = env.value("variables", nlohmann::json::object());
  if (vars.contains("PYTORCH_ENABLE_MPS_FALLBACK") && vars["PYTORCH_ENABLE_MPS_FALLBACK"] == "1")
    w.push_back(
        "PYTORCH_ENABLE_MPS_FALLBACK=1: ops MPS lacks silently run on the CPU, so target timings and "
        "'unsupported' findings are hidden; unset it for a meaningful check");
  const int threads = env.value("threads", 0), cores = env.value("cores", 0);
  if (threads > 0 && cores > 0 && threads < cores)
    w.push_back(
        fmt::format("LibTorch uses {} of {} cores for the CPU baseline; pass --threads {} for the "
                    "fastest CPU it can be",
                    threads, cores, cores));
  const nlohmann::json omp = env.value("openmp_runtimes", nlohmann::json::array());
  if (omp.is_array() && omp.size() > 1) {
    std::string list;
    for (const auto& p : omp) list += (list.empty() ? "" : ", ") + (p.is_string() ? p.get<std::string>() : p.dump());
    w.push_back(
        fmt::format("{} OpenMP runtimes are loaded in one process ({}): their thread pools compete, which "
                    "slows the CPU baseline and can crash it; load one (e.g. the wheel's own libgomp)",
                    omp.size(), list));
  }
  return w;
}

}  // namespace mpscheck

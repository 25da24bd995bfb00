// The environment block: what the numbers were measured on. Goes into the run header, the JSON
// report and every bug report.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace mpscheck {

struct EnvironmentInput {
  std::string target;
  std::uint64_t seed = 0;
};

nlohmann::json collect_environment(const EnvironmentInput& in);

// The CPU's model name ("Intel(R) Xeon(R) ...", "Apple M2"), or "unknown".
std::string cpu_model_name();

// Warnings about the baseline: reference BLAS, fewer threads than cores, MPS CPU fallback.
// Reads the environment block, so tests can hand it simulated values.
std::vector<std::string> environment_warnings(const nlohmann::json& env);

// For a float16/bfloat16 CPU target ("cpu:bfloat16"), what its verdicts depend on: this CPU's and
// this LibTorch's kernels in that dtype (`env`'s cpu_kernels and cpu_reduced_precision). Empty for
// any other target.
std::string reduced_cpu_target_note(const nlohmann::json& env, const std::string& target);

// Loaded shared libraries whose names say BLAS (from the process's own map on Linux). Empty for a
// LibTorch that links its BLAS statically (the pip wheel's MKL): measured_matmul_gflops() is the
// check that holds whatever the linking.
std::vector<std::string> loaded_blas_libraries();

// Every shared library loaded in the process (its map on Linux, dyld's images on macOS).
std::vector<std::string> loaded_libraries();
// The OpenMP runtimes among `loaded_paths` (libgomp, libiomp5, libomp). More than one in a process
// (a wheel's libgomp beside Homebrew's libomp) is a warning: what a triager asks about first.
std::vector<std::string> openmp_runtimes_among(const std::vector<std::string>& loaded_paths);

// The BLAS the CPU baseline uses, named from what LibTorch itself reports: the library version ATen
// prints in its parallel info ("Intel(R) oneAPI Math Kernel Library Version 2024.2..."), its build
// configuration (`show_config()`'s BLAS_INFO=...) and the BLAS libraries loaded in the process. A
// statically linked MKL (the pip wheel's) shows in the first two and not in the third. "unknown"
// only when none of the three names one.
std::string blas_name(const std::string& parallel_info, const std::string& build_config,
                      const std::vector<std::string>& loaded_libraries);

// The CUDA toolkit LibTorch was built with, from its build configuration (`show_config()`): its
// "CUDA Runtime 12.1" and "CuDNN 8.9.2" lines, joined ("CUDA Runtime 12.1, CuDNN 8.9.2"). Empty for
// a build without CUDA, as the CPU wheel and macOS builds are.
std::string cuda_versions(const std::string& build_config);

// Float32 matmul throughput of the CPU baseline on one thread, best of a few runs of a 384x384x384
// product. An optimised BLAS gives tens of GFLOP/s per core; the reference BLAS one or two, which
// is the 60x that would inflate every reported speed-up.
double measured_matmul_gflops();
// Below this, the environment block warns that the CPU baseline's BLAS is not an optimised one.
inline constexpr double kSlowBlasGflops = 5.0;

}  // namespace mpscheck

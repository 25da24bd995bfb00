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

// Warnings about the baseline: reference BLAS, fewer threads than cores, MPS CPU fallback.
// Reads the environment block, so tests can hand it simulated values.
std::vector<std::string> environment_warnings(const nlohmann::json& env);

// Loaded shared libraries whose names say BLAS (from the process's own map on Linux).
std::vector<std::string> loaded_blas_libraries();

}  // namespace mpscheck

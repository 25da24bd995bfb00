// Helpers for the tests that run mpscheck on the test-only sim device (plugins/sim).
#pragma once

#include "harness.hpp"

#include <string>
#include <vector>

namespace mpscheck::testing {

// The folder holding only the sim device library (build/test-plugins/sim).
inline std::string sim_plugin_dir() { return test_plugins_dir() + "/sim"; }

// What a clean sim device is known to report: LibTorch's own CPU-kernel gaps and the sim's limits.
inline std::string sim_expectations() {
  return std::string(MPSCHECK_SOURCE_DIR) + "/expectations/sim-libtorch-2.13.expect";
}

// `args` plus the options every sim run shares: --target sim (unless given), the sim plugin, --quick.
inline std::vector<std::string> on_sim(std::vector<std::string> args) {
  bool has_target = false;
  for (const auto& a : args) has_target |= a == "--target";
  if (!has_target) args.insert(args.end(), {"--target", "sim"});
  args.insert(args.end(), {"--plugin-dir", sim_plugin_dir(), "--quick"});
  return args;
}

// The first diverging layer a model case names, or "".
inline std::string layer_of(const nlohmann::json& c) {
  return c.contains("first_diverging_layer") ? c.at("first_diverging_layer").get<std::string>() : std::string();
}

inline int count_findings(const nlohmann::json& report) {
  int n = 0;
  for (const auto& c : report.at("cases")) {
    const std::string s = c.at("status").get<std::string>();
    n += s != "pass" && s != "skip";
  }
  return n;
}

}  // namespace mpscheck::testing

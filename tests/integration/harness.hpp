// Helpers for tests that drive the built mpscheck binary.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace mpscheck::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};

// Runs the mpscheck binary with `args` in folder `cwd`; extra environment as "K=V" strings.
CommandResult run_mpscheck(const std::vector<std::string>& args, const std::string& cwd,
                           const std::vector<std::string>& env = {});
// Runs any command line through /bin/sh in `cwd`.
CommandResult run_shell(const std::string& command, const std::string& cwd);

// A fresh, empty folder for one test under the build tree.
std::string fresh_dir(const std::string& name);
nlohmann::json read_json_file(const std::string& path);
std::string read_text_file(const std::string& path);
// The cases of a JSON report, by id.
std::map<std::string, nlohmann::json> cases_by_id(const nlohmann::json& report);

std::string binary();
std::string test_plugins_dir();
std::string fixtures_dir();

}  // namespace mpscheck::testing

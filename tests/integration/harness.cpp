#include "harness.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>

namespace mpscheck::testing {

namespace fs = std::filesystem;

namespace {
std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}
}  // namespace

std::string binary() { return MPSCHECK_BINARY; }
std::string test_plugins_dir() { return MPSCHECK_TEST_PLUGINS_DIR; }
std::string fixtures_dir() { return MPSCHECK_FIXTURES_DIR; }

std::string read_text_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

CommandResult run_shell(const std::string& command, const std::string& cwd) {
  const std::string out = cwd + "/.stdout", err = cwd + "/.stderr";
  const std::string line =
      "cd " + quote(cwd) + " && (" + command + ") >" + quote(out) + " 2>" + quote(err) + " </dev/null";
  const int status = std::system(line.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_text_file(out);
  r.err = read_text_file(err);
  fs::remove(out);
  fs::remove(err);
  return r;
}

CommandResult run_mpscheck(const std::vector<std::string>& args, const std::string& cwd,
                           const std::vector<std::string>& env) {
  std::string cmd = "env NO_COLOR=1";
  for (const auto& e : env) cmd += " " + quote(e);
  cmd += " " + quote(binary());
  for (const auto& a : args) cmd += " " + quote(a);
  return run_shell(cmd, cwd);
}

std::string fresh_dir(const std::string& name) {
  const fs::path dir = fs::path(MPSCHECK_BUILD_DIR) / "test-tmp" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

nlohmann::json read_json_file(const std::string& path) { return nlohmann::json::parse(read_text_file(path)); }

std::map<std::string, nlohmann::json> cases_by_id(const nlohmann::json& report) {
  std::map<std::string, nlohmann::json> m;
  for (const auto& c : report.at("cases")) m[c.at("id").get<std::string>()] = c;
  return m;
}

}  // namespace mpscheck::testing

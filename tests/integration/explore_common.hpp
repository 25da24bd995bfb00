// What the explore tests share: one explore run on the sim under a planted class, with its budget,
// and the reports it wrote, read back.
#pragma once

#include "sim_common.hpp"

#include <chrono>
#include <iostream>
#include <map>
#include <string>
#include <vector>

namespace mpscheck::testing {

// Per class: what explore may spend on its subset, in seconds (the run's budget; every case's too).
inline constexpr const char* kBudget = "60";

struct Explored {
  CommandResult r;
  nlohmann::json report;
  double seconds = 0;
};

inline Explored explore_on_sim(const std::vector<std::string>& filters, const std::string& bugs, const std::string& dir,
                               const std::vector<std::string>& extra = {}, const std::string& run_budget = kBudget,
                               const std::string& case_budget = kBudget) {
  std::vector<std::string> args = {"explore",        "--target",         "sim",       "--plugin-dir",
                                   sim_plugin_dir(), "--explore-budget", case_budget, "--explore-run-budget",
                                   run_budget};
  args.insert(args.end(), extra.begin(), extra.end());
  for (const auto& f : filters) args.insert(args.end(), {"--filter", f});
  const auto start = std::chrono::steady_clock::now();
  Explored e;
  e.r = run_mpscheck(args, dir,
                     bugs.empty() ? std::vector<std::string>{} : std::vector<std::string>{"MPSCHECK_SIM_BUGS=" + bugs});
  e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  e.report = read_json_file(dir + "/mpscheck-report/explore.json");
  std::cout << "explore " << (bugs.empty() ? "(no plant)" : bugs) << ": " << e.seconds << " s\n" << e.r.out;
  return e;
}

// The cases of the regular JSON report by id.
inline std::map<std::string, nlohmann::json> report_cases(const std::string& dir) {
  std::map<std::string, nlohmann::json> out;
  const nlohmann::json report = read_json_file(dir + "/mpscheck-report/report.json");
  for (const auto& c : report.at("cases")) out[c.at("id").get<std::string>()] = c;
  return out;
}

// The <testcase> element of a JUnit file whose name is `name`, or "" when there is none.
inline std::string junit_case(const std::string& xml, const std::string& name) {
  const size_t at = xml.find("<testcase name=\"" + name + "\"");
  if (at == std::string::npos) return "";
  return xml.substr(at, xml.find("</testcase>", at) - at);
}

// The findings of a report by their declared case.
inline std::map<std::string, nlohmann::json> by_base(const nlohmann::json& report) {
  std::map<std::string, nlohmann::json> out;
  for (const auto& f : report.at("findings")) out[f.at("base").get<std::string>()] = f;
  return out;
}

}  // namespace mpscheck::testing

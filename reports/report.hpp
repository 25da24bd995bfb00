// A whole run as reports see it: environment, run settings, every case.
#pragma once

#include "reports/fingerprint.hpp"
#include "checks/result.hpp"
#include "util/atomic_file.hpp"  // ReportError

#include <nlohmann/json.hpp>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace mpscheck {

struct RunReport {
  nlohmann::json environment = nlohmann::json::object();
  nlohmann::json run = nlohmann::json::object();  // target, seed, quick, timing budget, wall time
  std::vector<CaseResult> cases;
  // The known-issue table findings are matched against (--known-issues; reports/fingerprint.hpp).
  std::vector<KnownIssue> known_issues;
};

std::map<Status, int> count_by_status(const std::vector<CaseResult>& cases);

nlohmann::json report_to_json(const RunReport& report);
// The JSON report's text: report_to_json indented by two, ending in a newline.
std::string render_json_report(const RunReport& report);
// Writes atomically (temporary file, then rename). Throws ReportError naming the path.
void write_json_report(const std::string& path, const RunReport& report);
// Throws ReportError naming the file and what is wrong with it.
RunReport read_json_report(const std::string& path);

}  // namespace mpscheck

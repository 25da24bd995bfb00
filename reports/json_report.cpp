#include "reports/report.hpp"

#include "reports/reporter.hpp"
#include "reports/writers.hpp"

#include "checks/result_json.hpp"
#include "reports/version.hpp"

#include <fmt/format.h>

#include <fstream>

namespace mpscheck {

std::map<Status, int> count_by_status(const std::vector<CaseResult>& cases) {
  std::map<Status, int> counts;
  for (const auto& c : cases) ++counts[c.status];
  return counts;
}

nlohmann::json report_to_json(const RunReport& report) {
  nlohmann::json summary = nlohmann::json::object();
  for (const auto& [status, n] : count_by_status(report.cases)) summary[to_string(status)] = n;
  summary["total"] = report.cases.size();
  return {{"schema_version", kReportSchemaVersion},
          {"tool", "mpscheck"},
          {"environment", report.environment},
          {"run", report.run},
          {"summary", summary},
          {"fingerprints", fingerprints_json(findings_by_fingerprint(report.cases, report.known_issues))},
          {"cases", report.cases}};
}

std::string render_json_report(const RunReport& report) { return report_to_json(report).dump(2) + "\n"; }

void write_json_report(const std::string& path, const RunReport& report) {
  write_text_report(path, render_json_report(report));
}

RunReport read_json_report(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ReportError(fmt::format("cannot read report {}: no such file", path));
  nlohmann::json j;
  try {
    in >> j;
  } catch (const std::exception& e) {
    throw ReportError(fmt::format("{} is not valid JSON ({})", path, e.what()));
  }
  if (!j.is_object() || !j.contains("schema_version") || !j.contains("cases"))
    throw ReportError(fmt::format("{} is not an mpscheck report (no schema_version or cases)", path));
  if (!j.at("schema_version").is_number_integer())
    throw ReportError(fmt::format("{}: schema_version is not a number; is it an mpscheck report?", path));
  if (j.at("schema_version").get<long long>() > kReportSchemaVersion)
    throw ReportError(fmt::format("{} has report schema {}, newer than this mpscheck reads ({}); upgrade mpscheck",
                                  path, j.at("schema_version").dump(), kReportSchemaVersion));
  for (const char* key : {"environment", "run"})
    if (j.contains(key) && !j.at(key).is_object())
      throw ReportError(fmt::format("{}: '{}' is not an object; is it an mpscheck report?", path, key));
  // Read as strings by merge, compare and --expect.
  for (const auto& [object, key] :
       {std::pair{"run", "target"}, {"environment", "torch_version"}, {"environment", "os"}})
    if (j.contains(object) && j.at(object).contains(key) && !j.at(object).at(key).is_string())
      throw ReportError(fmt::format("{}: {}.{} is not a string; is it an mpscheck report?", path, object, key));
  if (const std::string bad = bad_result_integer_field(j); !bad.empty())
    throw ReportError(fmt::format("{}: a case entry is malformed ('{}' is not an integer in range)", path, bad));
  RunReport r;
  try {
    r.environment = j.value("environment", nlohmann::json::object());
    r.run = j.value("run", nlohmann::json::object());
    r.cases = j.at("cases").get<std::vector<CaseResult>>();
  } catch (const std::exception& e) {
    throw ReportError(fmt::format("{}: a case entry is malformed ({})", path, e.what()));
  }
  return r;
}

// The record of the run: every case with its figures. Always written, by default into the
// report folder; compare, merge, --baseline and repro --from read it back.
const Reporter& json_reporter() {
  static const Reporter reporter({.flag = "json",
                                  .help = "write the JSON report to FILE (default REPORT-DIR/report.json)",
                                  .default_file = "report.json"},
                                 render_json_report);
  return reporter;
}

}  // namespace mpscheck

#include "reports/escape.hpp"
#include "reports/reporter.hpp"
#include "reports/writers.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

namespace mpscheck {

std::string render_junit(const RunReport& report) {
  // Suites in name order so two runs of the same selection diff cleanly.
  std::map<std::string, std::vector<const CaseResult*>> suites;
  for (const auto& c : report.cases) suites[split_case_id(c).suite].push_back(&c);

  int total = 0, failures = 0, skipped = 0;
  double case_time = 0;
  std::string body;
  for (const auto& [suite, cases] : suites) {
    int s_failures = 0, s_skipped = 0;
    double s_time = 0;
    std::string cases_xml;
    for (const CaseResult* c : cases) {
      const bool skip = c->status == Status::Skip;
      const bool failed = is_finding(c->status);
      s_failures += failed;
      s_skipped += skip;
      s_time += c->wall_s;
      cases_xml +=
          fmt::format(R"(    <testcase name="{}" status="run" result="{}" time="{:.3f}" classname="{}")",
                      xml_escape(split_case_id(*c).name), skip ? "skipped" : "completed", c->wall_s, xml_escape(suite));
      cases_xml += ">\n";
      cases_xml += fmt::format(R"(      <properties><property name="verdict" value="{}"/>)", to_string(c->status));
      if (c->speedup > 0)
        cases_xml +=
            fmt::format(R"(<property name="speedup" value="{:.3f}"/><property name="speed_class" value="{}"/>)",
                        c->speedup, to_string(c->speed_class));
      cases_xml += "</properties>\n";
      if (failed) {
        const std::string first_line = c->message.substr(0, c->message.find('\n'));
        cases_xml += fmt::format(R"(      <failure message="{}" type="{}">{}</failure>)",
                                 xml_escape(shorten(first_line.empty() ? to_string(c->status) : first_line, 300)),
                                 to_string(c->status), xml_escape(finding_detail(*c)));
        cases_xml += "\n";
      } else if (skip) {
        cases_xml += fmt::format(R"(      <skipped message="{}"/>)", xml_escape(shorten(c->message, 300)));
        cases_xml += "\n";
      }
      cases_xml += "    </testcase>\n";
    }
    const int s_tests = static_cast<int>(cases.size());
    body += fmt::format(
        R"(  <testsuite name="{}" tests="{}" failures="{}" disabled="0" skipped="{}" errors="0" time="{:.3f}">)",
        xml_escape(suite), s_tests, s_failures, s_skipped, s_time);
    body += "\n" + cases_xml + "  </testsuite>\n";
    total += s_tests;
    failures += s_failures;
    skipped += s_skipped;
    case_time += s_time;
  }
  // The run's own wall time when known (it includes worker start-up), else the cases' sum.
  double run_time = case_time;
  if (report.run.contains("wall_s") && report.run.at("wall_s").is_number())
    run_time = report.run.at("wall_s").get<double>();

  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml += fmt::format(
      R"(<testsuites tests="{}" failures="{}" disabled="0" skipped="{}" errors="0" time="{:.3f}" name="mpscheck">)",
      total, failures, skipped, run_time);
  xml += "\n" + body + "</testsuites>\n";
  return xml;
}

const Reporter& junit_reporter() {
  static const Reporter reporter({.flag = "junit", .help = "write JUnit XML (GoogleTest's shape) to FILE"},
                                 render_junit);
  return reporter;
}

}  // namespace mpscheck

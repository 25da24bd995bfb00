// CSV: one row per case, for a spreadsheet or pandas. RFC 4180 quoting; numbers in full
// precision; an empty cell where a figure does not apply (not timed, no outputs).
#include "reports/escape.hpp"
#include "reports/reporter.hpp"
#include "reports/writers.hpp"

#include <fmt/format.h>

#include <cmath>

namespace mpscheck {

namespace {

std::string cell(const std::string& text) {
  const std::string clean = valid_utf8(text);
  if (clean.find_first_of(",\"\r\n") == std::string::npos) return clean;
  std::string quoted = "\"";
  for (char ch : clean) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return quoted + "\"";
}

std::string number(double v, bool applies) {
  if (!applies) return "";
  return std::isfinite(v) ? fmt::format("{:.9g}", v) : (std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
}

std::string render_csv(const RunReport& report) {
  std::string out =
      "id,status,recommendation,dtype,max_abs_error,max_rel_error,reference_median_s,target_median_s,speedup,"
      "speed_class,expected,peak_allocated_bytes,driver_peak_bytes,process_peak_bytes,recommended_max_bytes,tier,"
      "message\r\n";
  for (const auto& c : report.cases) {
    const double abs_err = max_abs_error(c), rel_err = max_rel_error(c);
    const bool timed = c.reference_time && c.target_time;
    const MemoryFigures m = c.memory.value_or(MemoryFigures{});
    auto bytes = [](std::int64_t n) { return n >= 0 ? std::to_string(n) : std::string(); };
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\r\n", cell(c.id), to_string(c.status),
                       cell(to_string(c.recommendation)), cell(c.dtype), number(abs_err, abs_err >= 0),
                       number(rel_err, rel_err >= 0), number(timed ? c.reference_time->median_s : 0, timed),
                       number(timed ? c.target_time->median_s : 0, timed), number(c.speedup, c.speedup > 0),
                       cell(to_string(c.speed_class)), c.expected ? "yes" : "", bytes(m.peak_allocated),
                       bytes(m.driver_peak), bytes(m.process_peak), bytes(m.recommended_max), cell(c.tier),
                       cell(c.message));
  }
  return out;
}

}  // namespace

const Reporter& csv_reporter() {
  static const Reporter reporter({.flag = "csv", .help = "write one CSV row per case to FILE"}, render_csv);
  return reporter;
}

}  // namespace mpscheck

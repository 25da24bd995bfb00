// Console output: a live progress line on a terminal, plain lines otherwise, then a summary.
#pragma once

#include "reports/report.hpp"
#include "reports/run_listener.hpp"

#include <ostream>
#include <string>

namespace mpscheck {

// A run's listener for the lines printed while it runs; the summary at its end is written with the
// other reports (console_reporter, in reports/reporters.cpp's order).
class ConsoleReporter final : public RunListener {
 public:
  // `tty` enables the rewriting progress line; `color` enables ANSI colours.
  ConsoleReporter(std::ostream& out, bool tty, bool color) : out_(out), tty_(tty), color_(color) {}

  // On a terminal, the case in flight on a line the next event rewrites; nothing otherwise.
  void case_started(size_t index, size_t total, const std::string& id) override;
  // One line per case, and its message under a finding.
  void case_finished(size_t index, size_t total, const CaseResult& result) override;
  void summary(const RunReport& report, const std::string& report_path);

 private:
  std::string paint(const std::string& text, Status status) const;
  std::ostream& out_;
  bool tty_, color_;
  bool line_open_ = false;
};

// Whether colours are allowed: a terminal, and NO_COLOR unset (https://no-color.org).
bool use_color(int fd);

}  // namespace mpscheck

// Console output: a live progress line on a terminal, plain lines otherwise, then a summary.
#pragma once

#include "reports/report.hpp"

#include <ostream>
#include <string>

namespace mpscheck {

class ConsoleReporter {
 public:
  // `tty` enables the rewriting progress line; `color` enables ANSI colours.
  ConsoleReporter(std::ostream& out, bool tty, bool color) : out_(out), tty_(tty), color_(color) {}

  void case_started(size_t index, size_t total, const std::string& id);
  void case_finished(size_t index, size_t total, const CaseResult& result);
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

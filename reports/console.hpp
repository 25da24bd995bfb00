// Console output: a live progress line on a terminal, plain lines otherwise, then a summary.
#pragma once

#include "reports/report.hpp"
#include "reports/run_listener.hpp"

#include <cstddef>
#include <functional>
#include <ostream>
#include <string>

namespace mpscheck {

// How the lines printed while a run goes look.
struct ConsoleOptions {
  // A terminal: one progress line (count, cases per second, time left, findings so far, the case
  // running) redrawn in place, and a line of its own for each finding as its case finishes. Not a
  // terminal (a CI log, a pipe): every case's line, and nothing redrawn.
  bool tty = false;
  bool color = false;           // ANSI colours
  bool verbose = false;         // on a terminal too, every case's line above the progress line
  std::size_t columns = 100;    // the terminal's width: the progress line never wraps
  std::function<double()> now;  // seconds on a steady clock; empty: std::chrono::steady_clock
};

// A run's listener for the lines printed while it runs; the summary at its end is written with the
// other reports (console_reporter, in reports/reporters.cpp's order).
class ConsoleReporter final : public RunListener {
 public:
  ConsoleReporter(std::ostream& out, ConsoleOptions options);
  ConsoleReporter(std::ostream& out, bool tty, bool color) : ConsoleReporter(out, ConsoleOptions{tty, color}) {}

  // Starts the clock the rate and the time left are measured on.
  void run_started(const RunStart& start) override;
  // On a terminal, the progress line names the case in flight; nothing otherwise.
  void case_started(std::size_t index, std::size_t total, const std::string& id) override;
  // A line for the case (every case off a terminal or with --verbose, a finding always) and its
  // message under a finding; on a terminal the progress line is drawn again below.
  void case_finished(std::size_t index, std::size_t total, const CaseResult& result) override;
  // On a terminal, the progress line becomes the run's last line: how many cases in how long.
  void run_ended(const ReportContext& report) override;
  // Clears the progress line, so a line printed after it (the reason a run stopped) starts clean.
  void end_progress();

  void summary(const RunReport& report, const std::string& report_path);

 private:
  std::string paint(const std::string& text, Status status) const;
  void print_case(std::size_t index, std::size_t total, const CaseResult& r);
  void draw_progress();
  std::string progress_text() const;
  double seconds() const;

  std::ostream& out_;
  ConsoleOptions options_;
  bool line_open_ = false;  // the progress line is on screen, the cursor at its end
  double started_at_ = 0;
  std::size_t first_position_ = 0;  // resumed cases come first and are not this run's work
  std::size_t finished_ = 0, total_ = 0, findings_ = 0;
  std::string running_;  // the id of the case last started
};

// Whether colours are allowed: a terminal, and NO_COLOR unset (https://no-color.org).
bool use_color(int fd);

// The width of the terminal on `fd`, or 100 where it says none.
std::size_t terminal_columns(int fd);

// "42s", "3m05s", "1h02m": a time left or taken, rounded to what a reader needs; "?" if unknown.
std::string duration_text(double seconds);

}  // namespace mpscheck

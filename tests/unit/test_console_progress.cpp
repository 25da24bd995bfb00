// The console while a run goes (reports/console.hpp): off a terminal every case's line and nothing
// redrawn; on a terminal one progress line redrawn in place (count, rate, time left, findings, the
// case running), a line of its own per finding, every case's line under --verbose, and the run's
// last line. The clock is a fake one the test moves.
#include "reports/console.hpp"
#include "reports/reporter.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

using namespace mpscheck;

namespace {

CaseResult result(const std::string& id, Status status, const std::string& message = "") {
  CaseResult r;
  r.id = id;
  r.status = status;
  r.message = message;
  return r;
}

// A console on a fake terminal whose clock reads `clock`.
struct Terminal {
  std::ostringstream out;
  double clock = 100;
  ConsoleReporter console;
  explicit Terminal(bool verbose = false, std::size_t columns = 200)
      : console(out,
                ConsoleOptions{.tty = true, .verbose = verbose, .columns = columns, .now = [this] { return clock; }}) {}
};

// The terminal's control sequence that clears from the cursor to the line's end.
const std::string kClear = "\x1b[K";

std::string without_clears(std::string text) {
  for (auto at = text.find(kClear); at != std::string::npos; at = text.find(kClear)) text.erase(at, kClear.size());
  return text;
}

// The text after the last carriage return: what the progress line shows now.
std::string shown(const std::string& text) {
  const auto cr = text.rfind('\r');
  return without_clears(cr == std::string::npos ? text : text.substr(cr + 1));
}

// The lines that stay on screen: everything printed and ended with a newline, redraws removed.
std::vector<std::string> kept_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::string line;
  for (char c : without_clears(text)) {
    if (c == '\r') {
      line.clear();
    } else if (c == '\n') {
      lines.push_back(line);
      line.clear();
    } else {
      line += c;
    }
  }
  return lines;
}

}  // namespace

TEST(ConsoleProgress, OffATerminalEveryCaseHasItsLineAndNothingIsRedrawn) {
  std::ostringstream out;
  ConsoleReporter console(out, ConsoleOptions{.tty = false});
  console.run_started({"cpu", 3, 0});
  console.case_started(0, 3, "op/a");
  console.case_finished(0, 3, result("op/a", Status::Pass));
  console.case_started(1, 3, "op/b");
  console.case_finished(1, 3, result("op/b", Status::Mismatch, "out: 1 of 4 elements outside tolerance"));
  console.case_started(2, 3, "op/c");
  console.case_finished(2, 3, result("op/c", Status::Pass));
  console.end_progress();
  EXPECT_EQ(out.str(),
            "[1/3] pass        op/a\n"
            "[2/3] mismatch    op/b\n"
            "      out: 1 of 4 elements outside tolerance\n"
            "[3/3] pass        op/c\n");
}

TEST(ConsoleProgress, OnATerminalOnlyFindingsKeepALineAndTheProgressLineCountsThem) {
  Terminal t;
  t.console.run_started({"cpu:bfloat16", 4, 0});
  t.console.case_started(0, 4, "op/a");
  EXPECT_EQ(shown(t.out.str()), "[0/4] -- cases/s, ? left, 0 findings | op/a");
  t.clock += 1;
  t.console.case_finished(0, 4, result("op/a", Status::Pass));
  t.console.case_started(1, 4, "op/b");
  t.clock += 1;
  t.console.case_finished(1, 4, result("op/b", Status::Nan, "loss: NaN at step 2"));
  // Two cases in two seconds: one a second, two left.
  EXPECT_EQ(shown(t.out.str()), "[2/4] 1.0 cases/s, 2s left, 1 finding | op/b");
  t.clock += 0.5;
  t.console.case_started(2, 4, "op/c");  // the rate is read when the line is drawn: 2 in 2.5 s
  EXPECT_EQ(shown(t.out.str()), "[2/4] 0.8 cases/s, 3s left, 1 finding | op/c");
  t.clock += 0.5;
  t.console.case_finished(2, 4, result("op/c", Status::Pass));
  t.console.case_started(3, 4, "op/d");
  t.clock += 1;
  t.console.case_finished(3, 4, result("op/d", Status::Crash, "the worker died from SIGSEGV"));
  const RunReport report;
  std::ostringstream ignored;
  t.console.run_ended(ReportContext{report, "r.json", nullptr, nullptr, ignored, false});
  // What stays on screen: the findings, each as it happened, and the run's last line; no pass.
  EXPECT_EQ(
      kept_lines(t.out.str()),
      (std::vector<std::string>{"[2/4] nan         op/b", "      loss: NaN at step 2", "[4/4] crash       op/d",
                                "      the worker died from SIGSEGV", "4 of 4 cases in 4s (1.0 cases/s), 2 findings"}));
  EXPECT_EQ(t.out.str().back(), '\n');  // the progress line is gone: the summary starts on a clean line
}

TEST(ConsoleProgress, VerboseKeepsEveryCaseLineOnATerminal) {
  Terminal t(/*verbose=*/true);
  t.console.run_started({"cpu", 2, 0});
  t.console.case_started(0, 2, "op/a");
  t.console.case_finished(0, 2, result("op/a", Status::Pass));
  t.console.case_started(1, 2, "op/b");
  t.console.case_finished(1, 2, result("op/b", Status::Unsupported, "no kernel"));
  t.console.end_progress();
  EXPECT_EQ(kept_lines(t.out.str()),
            (std::vector<std::string>{"[1/2] pass        op/a", "[2/2] unsupported op/b", "      no kernel"}));
}

TEST(ConsoleProgress, ResumedCasesCountButAreNotThisRunsRate) {
  Terminal t;
  t.console.run_started({"cpu", 100, 90});  // 90 from the journal
  t.console.case_started(90, 100, "op/x");
  t.clock += 4;
  t.console.case_finished(90, 100, result("op/x", Status::Pass));
  t.console.case_started(91, 100, "op/y");
  // One case in four seconds, not 91: nine left at a quarter a second.
  EXPECT_EQ(shown(t.out.str()), "[91/100] 0.2 cases/s, 36s left, 0 findings | op/y");
}

TEST(ConsoleProgress, TheLineNamesTheCaseLastStartedAndCountsEachFinish) {
  Terminal t;
  t.console.run_started({"cpu", 50, 0});
  t.console.case_started(0, 50, "op/a");
  t.console.case_started(1, 50, "op/b");  // --jobs 2: two in flight
  t.clock += 2;
  t.console.case_finished(0, 50, result("op/a", Status::Pass));
  EXPECT_EQ(shown(t.out.str()), "[1/50] 0.5 cases/s, 1m38s left, 0 findings | op/b");
  t.console.case_started(2, 50, "op/c");
  EXPECT_EQ(shown(t.out.str()), "[1/50] 0.5 cases/s, 1m38s left, 0 findings | op/c");
  EXPECT_EQ(kept_lines(t.out.str()), std::vector<std::string>{});  // nothing but the one line
}

TEST(ConsoleProgress, TheProgressLineNeverWrapsTheTerminal) {
  Terminal t(false, 40);
  t.console.run_started({"cpu", 6045, 0});
  t.console.case_started(0, 6045, "op/activation/gelu/bf16/contiguous/backward");
  const std::string line = shown(t.out.str());
  EXPECT_EQ(line.size(), 39u);  // one column short of the width: the cursor never wraps
  EXPECT_EQ(line.substr(line.size() - 3), "...");
  EXPECT_EQ(line.rfind("[0/6045] ", 0), 0u);
}

TEST(ConsoleProgress, EndProgressClearsTheLineForWhatFollows) {
  Terminal t;
  t.console.run_started({"cpu", 2, 0});
  t.console.case_started(0, 2, "op/a");
  t.console.end_progress();
  t.out << "mpscheck: the journal cannot be written\n";
  EXPECT_EQ(kept_lines(t.out.str()), std::vector<std::string>{"mpscheck: the journal cannot be written"});
  const auto size = t.out.str().size();
  t.console.end_progress();  // nothing open: nothing printed
  EXPECT_EQ(t.out.str().size(), size);
}

TEST(ConsoleProgress, DurationText) {
  EXPECT_EQ(duration_text(0), "0s");
  EXPECT_EQ(duration_text(42.4), "42s");
  EXPECT_EQ(duration_text(185), "3m05s");
  EXPECT_EQ(duration_text(3725), "1h02m");
  EXPECT_EQ(duration_text(-1), "?");
  EXPECT_EQ(duration_text(1.0 / 0.0), "?");
}

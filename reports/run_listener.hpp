// The events of a run, and what receives them. A run sends four kinds: the run starts, a case
// starts, a case finishes, the run ends. The journal (core/journal.hpp), the live console lines
// (ConsoleReporter, reports/console.hpp) and the report files (ReportFiles,
// core/report_outputs.hpp) each take the ones they need, and the run loop (core/run_loop.hpp)
// sends each event once to one RunListeners, which passes it on to every listener in the order
// they were added.
#pragma once

#include "checks/result.hpp"

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace mpscheck {

struct ReportContext;

// What is known as the run starts, before its first case.
struct RunStart {
  std::string target;  // as the report names it: "cpu:bfloat16"
  size_t planned = 0;  // cases in the plan, the resumed ones included
  size_t resumed = 0;  // of those, the results --resume found in the journal: they do not run again
};

// Thrown by a listener that the run cannot go on without (the journal, when it cannot write): the
// run stops before its next case, keeps what it has, and prints what() as its one line. A listener
// that throws it from case_finished has not taken that case, and the listeners after it are not
// sent it.
struct RunStopped : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One receiver of a run's events; each event does nothing unless overridden. `position` counts
// from 0 over the whole plan, resumed cases first, in the order cases finish; `total` is the plan's
// size. The run loop sends one event at a time, never two at once, even with --jobs.
class RunListener {
 public:
  virtual ~RunListener() = default;
  virtual void run_started(const RunStart& /*start*/) {}
  virtual void case_started(size_t /*position*/, size_t /*total*/, const std::string& /*id*/) {}
  virtual void case_finished(size_t /*position*/, size_t /*total*/, const CaseResult& /*result*/) {}
  // The report is complete: the run's results with tiers and expectations applied. Not sent when
  // the run stopped (the journal holds its results then, and no report is written).
  virtual void run_ended(const ReportContext& /*report*/) {}
};

// Every listener of a run, sent each event in the order they were added. It does not own them.
// An exception from one listener leaves the later ones unsent and goes on to the caller.
class RunListeners final : public RunListener {
 public:
  void add(RunListener& listener) { listeners_.push_back(&listener); }

  void run_started(const RunStart& start) override;
  void case_started(size_t position, size_t total, const std::string& id) override;
  void case_finished(size_t position, size_t total, const CaseResult& result) override;
  void run_ended(const ReportContext& report) override;

 private:
  std::vector<RunListener*> listeners_;
};

}  // namespace mpscheck

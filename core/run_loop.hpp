// Executes a run's plan: the timed cases one at a time on one worker, so nothing disturbs their
// clocks, then the verdict-only cases on `jobs` workers at once. Every result goes to the run's
// listeners (reports/run_listener.hpp) the moment it exists: the journal first, then the console.
#pragma once

#include "core/registry.hpp"
#include "checks/result.hpp"
#include "core/target.hpp"
#include "core/worker.hpp"
#include "reports/run_listener.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mpscheck {

struct PlannedCase {
  RegisteredWorkload workload;
  bool timed = false;
};

struct RunLoopOptions {
  WorkerConfig worker;  // for the timed worker; verdict workers get verdict_threads instead
  int verdict_threads = 0;
  int jobs = 1;
  RunnerOptions runner;
  std::string report_dir;    // worker logs go here
  std::string journal_path;  // named when the run stops early
  TargetSpec target;
  double timeout_op_s = 60, timeout_model_s = 300;
};

struct RunOutcome {
  std::vector<CaseResult> cases;  // in plan order: resumed results, then what ran
  bool interrupted = false;
  // Set when the run could not go on (no worker would start, a listener threw RunStopped because
  // the journal could not be written): the one line to print; every finished case is in the journal.
  std::optional<std::string> stopped;
};

// Jobs when --jobs is 0: the cores on a cpu target; 1 on an accelerator, where every worker
// shares one device (its queues and memory), so a second process could turn one case's memory
// pressure into another case's finding.
int default_jobs(const TargetSpec& target);
// Intra-op threads for each verdict worker: --threads if given, else the cores shared out.
int verdict_threads_for(int jobs, int threads);
// The intra-op threads every verdict is computed on, whatever --jobs and --threads are: the cores
// shared out among the target's default jobs (one thread on a cpu target with several cores;
// LibTorch's default, 0, on an accelerator). The CPU's own float16/bfloat16 kernels give other
// answers on other thread counts (layer_norm's backward), so a verdict computed on the threads
// --jobs or --threads happened to leave would change with them. Timing runs on --threads.
int canonical_verdict_threads(const TargetSpec& target);

// `timed_runner` already answered the device probe; it runs the timed cases. `done` holds the
// results a --resume found in the journal. `listeners` are sent run_started, then case_started and
// case_finished for each case that runs; run_ended is the caller's to send, once the report is made.
RunOutcome execute_plan(const std::vector<PlannedCase>& plan, const std::map<std::string, CaseResult>& done,
                        const RunLoopOptions& options, Runner& timed_runner, RunListener& listeners);

}  // namespace mpscheck

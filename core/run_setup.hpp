#pragma once
// The steps of a run before its first case, each one call from core/app.cpp and the subcommands
// (core/commands.cpp): load the catalog, select, read the run's inputs, open the journal, plan,
// set the run loop's options. A step that cannot go on prints its one line and throws Exit.
#include "core/case_catalog.hpp"
#include "core/config.hpp"
#include "core/journal.hpp"
#include "core/run_loop.hpp"
#include "core/target.hpp"
#include "core/workflow.hpp"
#include "reports/fingerprint.hpp"
#include "reports/report.hpp"
#include <mpscheck/workload.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mpscheck::app {

// 4: the run could not go on (no worker would start, the journal could not be written); every
// finished case is kept in the journal and --resume continues.
constexpr int kExitOk = 0, kExitFindings = 1, kExitUsage = 2, kExitNoTarget = 3, kExitCannotRun = 4,
              kExitModelDtype = 5, kExitInterrupted = 130;

// A step that cannot go on returns the exit code, having printed its one line.
struct Exit {
  int code;
};

// SIGINT and SIGTERM set g_interrupted (the run stops after the case in flight); SIGPIPE and
// SIGXFSZ are ignored, so a failed write is reported as one.
void install_signal_handlers();

// What a reproducer rebuilds: the target's device and float dtype, the seed and the size.
ReproTarget repro_target(const TargetSpec& spec, std::uint64_t seed, bool quick);

// The run's target, or nothing after one line on stderr saying why it is unavailable.
std::optional<ResolvedTarget> resolve_target_or_say(const Config& cfg);

// Load: the plugins and the user's model, as every worker will load them.
std::unique_ptr<CaseCatalog> load_catalog(const Config& cfg);

// Select: kinds and filters, then the shard.
std::vector<RegisteredWorkload> select_cases(const Config& cfg, const Registry& registry);

// A --model file checked before anything runs: every model of a .pt2 package loads on the target,
// and a TorchScript graph traced in float32 is refused on a reduced-precision target.
void check_user_model(const Config& cfg, const ResolvedTarget& target);

// Everything a run reads besides plugins, checked before anything runs: a broken file must not
// cost a long run, and neither must an unwritable report at its very end.
struct RunInputs {
  std::vector<Expectation> expectations;
  std::vector<KnownIssue> known_issues;
  std::optional<RunReport> baseline;
};
// The run's input files (--expect, --known-issues, --baseline), each refused with one line and exit
// 2 when broken; then, unless `listing` (a --list writes nothing), every report output is checked
// writable before the first case runs.
RunInputs read_run_inputs(const Config& cfg, bool listing = false);

// The journal, and with --resume what it already holds (same target, seed and quick, or refused).
struct OpenedJournal {
  std::unique_ptr<Journal> journal;
  std::map<std::string, CaseResult> done;  // each marked resumed
  int damaged_lines = 0;
  size_t rerun = 0;  // journal results dropped because their case's source changed
};
// The journal of the run: with --resume, the earlier run's results, refused (exit 2, one line
// naming what changed) when the run's identity differs (target, seed, --quick, LibTorch build,
// threads, `jobs`), and without the results of cases whose source changed (they run again).
OpenedJournal open_journal(const Config& cfg, const TargetSpec& target, const std::vector<PlannedCase>& plan, int jobs);

// What each case id computes in on a target with a dtype policy, for the run header and report.json.
std::string dtype_policy_text(const TargetSpec& target, size_t twins);

// Plan: which cases run (an f32 case that is the same computation as its reduced-precision twin
// runs once, under the twin's id: run_plan.hpp), and which are timed. `twins` counts those left out.
std::vector<PlannedCase> plan_cases(const Config& cfg, const std::vector<RegisteredWorkload>& all,
                                    const TargetSpec& target, size_t* twins);

// The worker's and the run loop's options for this run on `target`.
RunLoopOptions run_loop_options(const Config& cfg, const TargetSpec& target);

}  // namespace mpscheck::app

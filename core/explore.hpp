// `mpscheck explore`: what the catalog's fixed shapes miss. For each selected op case it makes
// seeded, reproducible variants from the case's own declared inputs (core/case_variant.hpp): each
// size the inputs declare, wherever it occurs (so an inner dimension K of mm changes in both
// operands), set to 1, 2, 3, its neighbours, a prime, the powers of two around it and ±1, a few
// seeded draws, then grown by powers of two. Every variant runs as an ordinary case does, through a
// worker and the same verdict rules. A failing variant is shrunk (every other size made as small
// as it still fails) and the failing size bisected against the largest passing one, so the finding
// says exactly where it starts ("wrong from a[1]=b[0] = 10000; 9999 passes") under a case id that
// `--filter` accepts in a later explore run. A case whose layouts and sizes pass is then timed at
// its growing sizes on both sides for a speed cliff (explore_speed.hpp), and run in other states
// (core/explore_probes.hpp): after its device's memory was dirtied, from two threads at once, and
// twenty times over with the process's memory measured.
#pragma once

#include "core/case_variant.hpp"
#include "core/explore_speed.hpp"
#include "checks/result.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace mpscheck {

// Runs one case id (a declared case or a variant) to its verdict: the worker path of a run. With
// `limit_s` > 0 the variant may take that long at most (what is left of the case's budget, or the
// run's): one that overruns it is stopped and given back as a skip in phase kBudgetPhase, never a
// timeout of the target's.
using RunCase = std::function<CaseResult(const std::string& id, double limit_s)>;
inline constexpr const char* kBudgetPhase = "budget";

struct ExploreOptions {
  double case_budget_s = 60;                          // per declared case
  double run_budget_s = 600;                          // for the whole run
  std::uint64_t seed = 0;                             // the seeded sizes (and, through the workers, the inputs)
  std::int64_t max_elements = std::int64_t{1} << 22;  // per input: a variant past it is not made
  // The same runner with both sides timed, for the speed search (core/explore_speed.hpp): once a
  // case's sizes all pass, the growing sizes of each dimension are timed for a cliff. Empty: no
  // speed search (--min-time 0).
  RunCase timed;
  double cliff_factor = kCliffFactor;
};

struct ExploreFinding {
  std::string base;  // the declared case
  std::string id;    // the minimal failing variant (the declared id when the case itself fails)
  Status status = Status::Pass;
  std::string message;  // the verdict's message for `id`
  // The size that decides it, named by where it occurs ("a[1]=b[0]"), and the threshold: the first
  // failing size and its passing neighbour (below it for "from", above for "up-to"). "at": only
  // that size fails, both neighbours pass; "powers-of-two": so, and twice it fails too; "cliff": the
  // results are right (status pass) but the target's time over the CPU's jumps past first_failing
  // (explore_speed.hpp), last_passing the size below it. Empty for
  // a replayed id or a declared case that fails as declared.
  std::string dimension;
  std::int64_t first_failing = 0, last_passing = 0;
  std::string pattern;
  std::string summary;  // one line for the console
  std::string layout;   // pattern "layout": the input and the layout that fails ("x channels_last at storage offset 1")
  CaseResult result;    // the verdict of `id` as the worker gave it (outputs, phase, figures)
  std::string probe{};  // pattern "state": the state probe that fails ("dirty", "threads2", "repeat20")
};

struct ExploredCase {
  std::string id;
  int variants = 0;  // run through a worker
  double seconds = 0;
  std::string note;  // why it was not explored, or stopped early
  // The declared case passed and its variants ran (a replayed id: it ran); false when it was not
  // explored at all (no input sizes, the budget, a declared case that does not pass).
  bool explored = false;
  double probe_seconds = 0;  // of `seconds`, the state probes' (core/explore_probes.hpp)
};

struct ExploreOutcome {
  std::vector<ExploreFinding> findings;
  std::vector<ExploredCase> cases;
  int variants = 0;
  bool run_budget_spent = false;
};

// Explores `cases`, then replays `replay` (variant ids given to --filter: each is run as it is and
// reported under its own id). Progress lines go to `log`. Stops early when `stop` returns true.
ExploreOutcome explore_cases(const std::vector<RegisteredWorkload>& cases, const std::vector<std::string>& replay,
                             const RunCase& run, const ExploreOptions& options, std::ostream& log,
                             const std::function<bool()>& stop = {});

// Whether a result is a finding of the target's: not a variant the CPU reference cannot run, nor a
// CPU 0-dim operand (+cpu) that PyTorch's device checks refuse on the target (an error saying the
// tensors are not on the "same device": an op that takes no CPU scalar there).
bool explore_failure(const CaseResult& r);

// The run as case results, for the regular reports (JSON, JUnit, Markdown, HTML): each finding
// under its minimal variant's id, its message the pattern and threshold then the verdict's own;
// each explored case without a finding as a pass under its own id (its variants all passed); a
// case that was not explored as a skip saying why.
std::vector<CaseResult> explore_case_results(const ExploreOutcome& outcome);

nlohmann::json explore_to_json(const ExploreOutcome& outcome, const ExploreOptions& options);

}  // namespace mpscheck

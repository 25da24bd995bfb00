// CI workflow pieces: expectations (known failures), baselines (compare two runs), shards, merge.
#pragma once

#include "reports/cells.hpp"
#include "reports/report.hpp"

#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

namespace mpscheck {

// ---- expectations ------------------------------------------------------------------------
// A line-based, human-edited file; one known failure per line:
//   PATTERN  STATUS[|STATUS...]  [target=DEVICE[:DTYPE]] [torch>=X.Y] [torch<X.Y] [os=TEXT] [os>=X.Y] [os<X.Y]
//            [chip=TEXT] [gpu=TEXT] [tier=NAME] [cause=CAUSE] [max_abs<=X] [max_rel<=X] [count<=N]
//            [outputs=NAME,NAME...]  [# reason]
// PATTERN is a regex matched against the whole case id; STATUS is a finding status or '*' for any
// finding. Blank lines and lines starting with '#' are ignored. Keyed like PyTorch's own MPS
// xfail lists: by OS version range, chip or GPU family, tier and cause.
struct Expectation {
  int line = 0;
  std::string pattern_text;
  std::regex pattern;
  std::vector<std::string> statuses;  // empty = any finding
  std::string target, os, torch_min, torch_below;
  std::string os_min, os_below;  // against the environment's os_version ("15.3" on macOS, "12" on Debian)
  std::string chip, gpu;         // text within the chip (else CPU) name, within the GPU family; any case
  std::string tier;              // the device's tier (environment "tier"; "native" where none is named)
  std::string cause;             // unimplemented, accuracy, crash or performance (cause_of)
  // Figure bounds (`max_abs<=1e-2`, `max_rel<=0.5`, `count<=32`): a matching finding whose figures
  // exceed one is unexpected, so a known failure that gets worse fails the run. Negative: no bound.
  // An output that differs in shape or dtype, is missing or extra, or has a non-finite element the
  // other side does not share, has no such figure: it exceeds every one of these three bounds.
  double max_abs = -1, max_rel = -1;
  std::int64_t count = -1;
  // `outputs=out,grad/x`: the outputs that fail, exactly; a case that fails in another set is
  // unexpected. Empty with has_outputs false: not checked.
  std::vector<std::string> outputs;
  bool has_outputs = false;
  std::string reason;
};

struct ExpectationError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws ExpectationError "FILE:LINE: what is wrong".
std::vector<Expectation> parse_expectations(const std::string& text, const std::string& file_name);
std::vector<Expectation> load_expectations(const std::string& path);

// Marks expected findings and unexpected passes on every case; `environment` gives the torch
// version and OS the conditions are checked against.
void apply_expectations(const std::vector<Expectation>& expectations, const nlohmann::json& environment,
                        const std::string& target, std::vector<CaseResult>& cases);

// What a case's finding is, in the words of PyTorch's xfail lists: "unimplemented" (unsupported,
// fallback), "accuracy" (mismatch, nan), "crash" (crash, timeout, error), "performance" (a pass
// confirmed slower than the reference); empty for anything else.
std::string cause_of(const CaseResult& c);

// The OS version expectations compare with: the environment's os_version, else the first number
// in its os text ("macOS 15.3" gives 15.3).
std::string os_version_of(const nlohmann::json& environment);

// A starting expectations file for a report: one line per finding, keyed to the report's target,
// LibTorch major.minor and OS, with its cause, bounds a little above today's figures, and its reason.
std::string expectations_from_report(const RunReport& report, const std::string& report_name);

// Whether a finished run (or a merge of shard reports) should fail: an unexpected finding or an
// unexpected pass. The one exit-code rule for both.
bool has_unexpected(const std::vector<CaseResult>& cases);

// "1.13.0" < "2.1" etc.; missing parts count as zero.
int compare_versions(const std::string& a, const std::string& b);

// ---- baselines ---------------------------------------------------------------------------
// A finding that became a skip is `no_longer_judged`, never fixed: nothing showed it right.
struct Comparison {
  std::vector<std::string> newly_failing, newly_fixed, no_longer_judged, still_failing, speed_regressions,
      speed_improvements;
  std::vector<std::string> added, removed;
  bool regressed() const { return !newly_failing.empty() || !no_longer_judged.empty() || !speed_regressions.empty(); }
};

// Speed regressions: both runs passed and timed the case, the target got slower by more than
// `threshold` (0.10 = 10%), and the interquartile ranges do not overlap.
Comparison compare_reports(const RunReport& before, const RunReport& after, double threshold = 0.10);
std::string format_comparison(const Comparison& c, const std::string& before_name, const std::string& after_name);

// ---- shards and merge --------------------------------------------------------------------
struct Shard {
  int index = 0;  // 0-based
  int total = 1;
};
// "I/N" with 1 <= I <= N (as CI matrices count); throws std::invalid_argument.
Shard parse_shard(const std::string& text);
// Keeps every total-th case starting at index (GoogleTest's rule), in id order.
template <class T>
std::vector<T> take_shard(const std::vector<T>& sorted, const Shard& s) {
  std::vector<T> out;
  for (size_t i = 0; i < sorted.size(); ++i)
    if (static_cast<int>(i % static_cast<size_t>(s.total)) == s.index) out.push_back(sorted[i]);
  return out;
}

// The options of a run's command that say where it writes or how it was split, not what it runs
// (--shard, --report-dir, --resume and every report format's flag): two shards of one run differ
// in these and in nothing else.
bool is_placement_flag(const std::string& flag);

// One report from shard reports; a case id in two inputs is an error naming both files.
RunReport merge_reports(const std::vector<std::string>& paths);

// The reports of several runners ("cells") side by side, each argument `[NAME=]REPORT.json` (the
// name defaults to the report's target), each finding labelled by where it appears
// (reports/cells.hpp). `unexpected` is set when any cell has a finding its run did not expect, or
// an unexpected pass: the rule a run exits 1 by. Throws ReportError naming a bad file.
CellMatrix merge_cells(const std::vector<std::string>& arguments, bool& unexpected);

}  // namespace mpscheck

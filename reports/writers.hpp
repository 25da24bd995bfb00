// The file reports' renderers (JUnit XML, Markdown, HTML), each rendered from the one result
// model (RunReport), and the helpers they share (reports/common.cpp). Rendering is pure (report
// in, text out); write_text_report puts the text on disk. Each format's Reporter is in its file.
#pragma once

#include "reports/report.hpp"
#include "util/atomic_file.hpp"  // write_text_report, the one atomic writer

#include "checks/recommend.hpp"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace mpscheck {

// JUnit XML in GoogleTest's shape: one <testsuite> per op family ("op/<family>") and one for
// models ("model"). Every finding, unsupported included, is a <failure>; skip is <skipped>.
std::string render_junit(const RunReport& report);

// A summary to paste into a PR or issue: totals, findings, speed of passing cases, environment.
std::string render_markdown(const RunReport& report);

// One self-contained HTML page (inline CSS, JS and SVG; nothing fetched): findings first,
// sortable tables, speedup and error charts, an operator x dtype coverage matrix.
std::string render_html(const RunReport& report);

// Shared by the writers (reports/common.cpp).

// Where a case sits in JUnit and in charts: suite "op/<family>" or "model", name the rest of the id.
struct CaseName {
  std::string suite, name;
};
CaseName split_case_id(const CaseResult& c);

// Rank for "worst status" (higher is worse): crash, timeout, nan, mismatch, error, unsupported,
// pass, skip. A silent wrong result ranks above a loud error: it is the one users miss.
int severity(Status s);
// The run's findings (is_finding), the worst status first, then by id: the order the Markdown and
// HTML reports list them in.
std::vector<const CaseResult*> findings_worst_first(const RunReport& report);

// The findings of one op (`op/<family>/<op>`) or model (`model/<name>`), with every case of that
// op in the run laid out as a matrix: a row per dtype (`model` for models), a column per layout and
// direction (`contiguous/forward`; `infer`, `train`). One upstream report covers such a group; a
// reader sees one op's dtype x layout x direction variants together instead of scattered rows.
struct OpGroup {
  std::string key;
  Status worst = Status::Pass;
  std::vector<const CaseResult*> findings;                                 // worst first, then by id
  int cases = 0;                                                           // every case of the op in the run
  std::vector<std::string> rows, columns;                                  // in first-seen order
  std::map<std::pair<std::string, std::string>, const CaseResult*> cells;  // (row, column) -> case
};
// Groups with at least one finding, the worst status first, then by the number of findings, then by key.
std::vector<OpGroup> findings_by_op(const RunReport& report);

// The workload classes (checks/recommend.hpp) with their summaries, blocked first, then reduce
// memory, accelerate, keep on CPU and not checked; `rank` of each is that order's index (0 = blocked).
struct RankedClass {
  std::string name;
  ClassSummary summary;
  int rank = 4;
};
std::vector<RankedClass> classes_blocked_first(const RunReport& report);

// The device's tier from a report's environment block: "native" where none is named (core/device_tier.hpp).
std::string tier_name(const nlohmann::json& environment);
// One sentence about a tier other than native ("Tier: paravirtual: the device is ...; its findings
// say more about that device than about the hardware."); empty for native.
std::string tier_sentence(const nlohmann::json& environment);

// One sentence for a report whose run did not finish (interrupted, or a merge missing shards:
// "Incomplete: shard 2/2 is missing; these cases are not the whole run"); empty for a complete one
// and for a report that does not say.
std::string incomplete_sentence(const RunReport& report);

// Largest max-abs (max-rel) error over the case's outputs; infinity when the target produced
// NaN/Inf the reference did not; a negative value when the case has no outputs.
double max_abs_error(const CaseResult& c);
double max_rel_error(const CaseResult& c);
// "-" for negative (no outputs), "NaN/Inf" for non-finite, else 3 significant digits.
std::string error_text(double error);

// Several lines describing a finding: message, target and dtype, tolerance, each failing
// output's errors and first mismatch, NaN/Inf counts, the crash signal, how to reproduce.
std::string finding_detail(const CaseResult& c);

// An environment value as one line of plain text: arrays joined with ", ", objects as "k=v; ...".
std::string json_value_text(const nlohmann::json& value);

// Environment keys in the order a reader wants them (torch, target, OS, chip first), then the rest.
std::vector<std::string> environment_keys(const nlohmann::json& environment);

// The speed class as a reader should take it: "faster", "slower", "similar", or, where a
// `similar` sits beside a ratio that reads like a claim (1.2x or more either way), why it is none:
// "similar (noisy: not a claim)", "(not confirmed: ...)" or "(machine busy: ...)". "-" when untimed.
std::string speed_text(const CaseResult& c);

// "12.3 us", "1.23 ms", "4.50 s"; "-" for zero or negative.
std::string format_seconds(double s);

// A shape as "[2, 3]".
std::string shape_text(const std::vector<std::int64_t>& shape);

}  // namespace mpscheck

// The rule book (issue 47 item 5): every number that decides a verdict, in one table, each with the
// rule it belongs to and the reason for its value. The numbers stay defined beside the code that
// reads them (compare.hpp, structure.hpp, tolerance.cpp, ...), where their longer arguments are;
// the table reads each one from there, so it cannot drift from the code. docs/verdicts.md ("The
// rule book") holds the table as Markdown, and a unit test (test_rule_book.cpp) keeps that page
// equal to rule_book_markdown().
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mpscheck {

// Where float32's own error against float64 is at least this share (RMS) of the target's, and only
// there, float32 is "the fragile side" of a mismatch (checks/verdict.cpp).
inline constexpr double kFloat32Comparable = 0.5;

// A CPU reference whose two runs differ by more than this many times the case's tolerance is no
// reference: an `error`, never a widened tolerance (checks/judge.cpp).
inline constexpr double kNondeterministicReferenceMultiple = 100;

// A training trajectory (a loss, a final parameter or buffer: Tolerance::trajectory) in float16/bfloat16
// is judged by the plain tolerance at least this wide, and by float64's rules beside it: steps
// compound every rounding, and the trajectory's verdict is its own comparison, not an element's
// (checks/tolerance.cpp, as_trajectory).
inline constexpr double kTrajectoryRtol = 0.1;
inline constexpr double kTrajectoryAtol = 0.05;

struct RuleBookRow {
  std::string rule;  // the rule it decides: "float64 judge, per element", "structure", ...
  std::string name;  // its name in the code: "kElementMultiplier", "kStructure.alpha"
  double value = 0;
  std::string reason;
};

// Every number, grouped by rule, in the order docs/verdicts.md shows them.
const std::vector<RuleBookRow>& rule_book();

// The table as Markdown: a header row, then one row per number.
std::string rule_book_markdown();

// The reason tolerance.cpp gives for float32's plain tolerance of `family` ("" for none).
std::string_view float32_tolerance_reason(std::string_view family);

}  // namespace mpscheck

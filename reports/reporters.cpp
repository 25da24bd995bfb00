#include "reports/reporter.hpp"

namespace mpscheck {

// Adding a report format: a file under reports/ that defines `const Reporter& NAME_reporter()`,
// and its line here. Order is the order a run writes them in.
#define MPSCHECK_REPORTERS(X) \
  X(json)                     \
  X(junit)                    \
  X(markdown)                 \
  X(html)                     \
  X(bug_reports)              \
  X(csv)                      \
  X(console)

#define MPSCHECK_DECLARE_REPORTER(name) const Reporter& name##_reporter();
MPSCHECK_REPORTERS(MPSCHECK_DECLARE_REPORTER)
#undef MPSCHECK_DECLARE_REPORTER

const std::vector<const Reporter*>& reporters() {
#define MPSCHECK_LIST_REPORTER(name) &name##_reporter(),
  static const std::vector<const Reporter*> all{MPSCHECK_REPORTERS(MPSCHECK_LIST_REPORTER)};
#undef MPSCHECK_LIST_REPORTER
  return all;
}

}  // namespace mpscheck

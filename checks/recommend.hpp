// The recommendation per case: accelerate, keep on CPU, or blocked — with the reason in words.
#pragma once

#include "checks/result.hpp"

#include <map>
#include <string>
#include <vector>

namespace mpscheck {

// Fills r.recommendation and r.reason from the status and the speed class.
void recommend(CaseResult& r);

// The workload class of a case: "op/<family>" or "model/<name>".
std::string workload_class(const std::string& id);

struct ClassSummary {
  int accelerate = 0, keep_on_cpu = 0, blocked = 0, skipped = 0, reduce_memory = 0;
  // blocked if any case is; else reduce memory if any case does not fit; accelerate if most timed cases are
  std::string recommendation() const;
};
std::map<std::string, ClassSummary> summarize_classes(const std::vector<CaseResult>& cases);

}  // namespace mpscheck

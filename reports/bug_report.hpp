// A Markdown issue body in the shape PyTorch's bug template asks for: summary, a minimal
// self-contained reproducer, observed vs expected values, and the environment ("Versions").
#pragma once

#include "reports/reporter.hpp"

#include "checks/result.hpp"

#include <mpscheck/workload.hpp>
#include <nlohmann/json.hpp>

#include <string>

namespace mpscheck {

// `result` may be null (no run yet: the report says so); `workload` may be null (case no longer
// loaded: no reproducer, the case id and figures only); `layer` may be null (not a model finding,
// or not asked for).
std::string render_bug_report(const std::string& case_id, const CaseResult* result, const Workload* workload,
                              const nlohmann::json& environment, const ReproTarget& target,
                              const LayerScript* layer = nullptr);

// A file name for a case id: '/' and other unsafe characters become '_'.
std::string case_file_name(const std::string& case_id);

}  // namespace mpscheck

// An op-level reproducer for a model finding that localisation pinned to one layer: that layer's
// op, with its input and parameters as the CPU float32 reference held them, saved where Python's
// torch.load reads them, and a script (only `torch`) that runs the op alone on the CPU in float32
// and float64 and on the target, and says whether the target is the side that is wrong.
#pragma once

#include "reports/bug_report.hpp"

#include "checks/result.hpp"
#include <mpscheck/workload.hpp>

#include <string>

namespace mpscheck {

// Captures the call of `r`'s first diverging layer on a CPU float32 reference instance of `w`
// (same seed and size as the run), saves its tensors to DIR/<case>.layer.pt and writes
// DIR/<case>.layer.py. When there is no such layer, or it is not one module mpscheck can spell
// in Python, nothing is written and `missing` says why. Throws ReportError naming a file that
// cannot be written.
LayerScript write_layer_reproducer(const Workload& w, const CaseResult& r, const ReproTarget& target,
                                   const std::string& dir);

// Saves a captured call's tensors to DIR/<case>.layer.pt and writes its script DIR/<case>.layer.py.
LayerScript write_layer_files(const CaseResult& r, const LayerCall& call, const ReproTarget& target,
                              const std::string& dir);

// The part of the script after its constants and its `saved` tensors: each side's run of `op`, the
// figures against float64 and the verdict (exit 1 when the target is the wrong side). A one-op
// reproducer of a model's recorded call (core/op_call_workload.hpp) ends with it too.
const char* layer_script_judge();

}  // namespace mpscheck

// The honest sides a float16/bfloat16 case is judged against, run through the host.
#pragma once

#include "checks/case_host.hpp"

#include <map>
#include <string>

namespace mpscheck {

// The honest sides of a float16/bfloat16 case: float32 from inputs and weights rounded to the
// dtype; on an accelerator the CPU's own run in the dtype (the witness, checks/compare.hpp; on a CPU
// target it would be the target itself, and a CPU without a kernel for the dtype gives none); and
// for a network's training state with no witness the rounded-operation baseline, which measures
// what honest rounding between operators does (checks/rounded_ops.hpp). A side that cannot run is
// left empty, and the rules stand on the others.
struct HonestRuns {
  std::map<std::string, at::Tensor> rounded, witness, emulated;
};
// `training_state`: some failing output of the case is a network's training state
// (Tolerance::training_state), which the rounded-operation baseline is for.
HonestRuns honest_runs(CaseHost& host, c10::Device device, c10::ScalarType dtype, bool training_state);

}  // namespace mpscheck

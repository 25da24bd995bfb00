// The verdict rules: how comparisons, float64 attribution, nondeterminism, warnings and layer
// traces become one status per case. core/execute.cpp runs the workloads and core/judge_case.cpp asks these.
#pragma once

#include "checks/compare.hpp"
#include "checks/tolerance.hpp"
#include "checks/result.hpp"

#include <map>
#include <string>
#include <vector>

namespace mpscheck {

struct Verdict {
  Status status = Status::Pass;
  std::string message;
  std::string output{};  // the output the message leads with; empty for a pass
};

// pass / mismatch / nan over all outputs of a case (DESIGN.md §4).
Verdict judge_outputs(const std::vector<OutputReport>& outputs);

// The float64 attribution of one failing output; `attribution` is unmeasured when there was no
// gold (or no target) output to set beside it.
struct OutputAttribution {
  OutputReport* output = nullptr;
  Attribution attribution;
};

// Decides a mismatch/nan verdict with the float64 figures: it becomes a pass ("float32 is the
// fragile side") only when every failing output passes both attribution rules. A finding every
// failing output of which is NaN/Inf where the witness is too (Attribution::witness_nonfinite) is
// the dtype's (Fragile::Dtype): the status stands and the message says so. Otherwise the target is
// blamed and the message quotes the output `v` names (else the first that fails) — the element the
// per-element rule caught, or the RMSEs. Fills each output's RMSE figures and `attribution`.
void decide_attribution(std::vector<OutputAttribution>& failing, Verdict& v, Fragile& attribution);

// Whether `output` of a network's training case is training state: a gradient ("grad/..." of a
// TorchScript model's backward, "grad0/..." of a training case's first step), a parameter's update
// over all steps ("update/...") or a state update ("buffer_update/...", "arg_update/...").
bool is_training_state(const std::string& output);
// A gradient of either kind: the family whose scale judge_training_family reads.
bool is_gradient(const std::string& output);
// The family of a training-state output, whose RMS sets its unit floor (Tolerance::unit_floor):
// "grad" for every gradient, else the output's prefix ("update", "buffer_update", "arg_update").
std::string training_family(const std::string& output);

// A training case on a witnessed float16/bfloat16 target (`witness` non-empty: the CPU's own run in
// the dtype): each failing gradient and update has been judged by its own rules (the training-state
// rule, Tolerance::training_state); here the family's scale is read. Where the target's gradients
// or updates as a whole are scaled against the witness's by more than kFamilyScale, its failing
// outputs are a systematic error (Attribution::systematic, which mark_chaotic never excuses),
// unless the nudged witness (`nudged`, may be empty; see mark_chaotic) is scaled within
// kChaosMultiplier of as far, which is chaos. The updates' scale is read where the dtype resolves
// them (resolved_update_scale), and a scaled update family also takes back what the updates' own
// rules passed: a step the dtype rounds away is lost to the witness too. Returns what the verdict
// message adds when that scale is a finding, naming the dtype as `dtype_named` (the result's
// CaseResult::dtype). Nothing here forgives an output its own rules failed.
using TensorsByName = std::map<std::string, at::Tensor>;
std::string judge_training_family(std::vector<OutputAttribution>& failing, const TensorsByName& witness,
                                  const TensorsByName& nudged, const TensorsByName& target,
                                  const std::map<std::string, Tolerance>& tols, c10::ScalarType dtype,
                                  const std::string& dtype_named);

// A float32 (or float64) training case's parameter updates as a family: the train family's atol
// (1e-4) is more than a small-step network's whole update (BERT's AdamW at 2e-5 moves a weight by
// 4e-5 in two steps), so each update passes by itself however short the step. Where the RMS of the
// target's updates, over the elements the dtype resolves (resolved_update_scale, with the
// reference as the witness), is off the reference's by more than kFamilyScale, the update of
// largest RMS fails with a note that names the scale: a systematic error. An honest device moves
// single updates both ways (Adam turns the sign of a near-zero gradient into a whole step of the
// other sign), never their RMS.
void judge_update_scale(const TensorsByName& reference, const TensorsByName& target, c10::ScalarType dtype,
                        std::vector<OutputReport>& outputs);

// Chaos. A deep network's first training step in float16/bfloat16 can be chaotic: the CPU's own run
// in the dtype, with every parameter and every tapped layer's output moved by one unit (the nudged
// witness, Placement::nudge_parameters), lands as far from the witness as a device rounding a few
// intermediates the other way does, and no rule can tell an honest device from a wrong one there. A failing output
// (not already forgiven) whose RMS difference from the witness is at most kChaosMultiplier times
// the nudged witness's, and whose scale against the witness (its projection on it) is off 1 by no
// more than kFamilyScale or kChaosMultiplier times the nudged witness's, is marked chaotic: not
// judged. Chaos scatters elements; a step short by a factor is a scale, and stays a finding.
// decide_attribution makes a case whose failing outputs are all forgiven or chaotic, and one at
// least chaotic, a skip that says so: never a pass. Returns whether any output was marked.
constexpr double kChaosMultiplier = 2;
// `nudged_from` (on a CPU target, whose nudged run is the target's own code: the target itself) is
// what the nudged run is nudged from, when it is not the witness: chaos is how far it moves from
// there, so an error of the target's code, in the nudged run too, cancels out of it.
bool mark_chaotic(std::vector<OutputAttribution>& failing, const TensorsByName& witness, const TensorsByName& nudged,
                  const TensorsByName& target, const TensorsByName* nudged_from = nullptr);

// Localisation: a traced layer diverges when it fails the plain tolerance and float64 does not
// show float32 to be the fragile side there (`attribution` unmeasured: no gold for the layer).
bool layer_diverges(const OutputReport& layer, const Attribution* attribution);

// Random statistics: how many standard errors (of the difference of two independent samples) a
// statistic may be off by. At 6 sigmas a healthy statistic fails about once in 5e8.
constexpr double kStatisticSigmas = 6;

// Applies the warnings captured on the target side: a pass with a fallback warning becomes
// `fallback` (not a target pass, not timed as the accelerator); any other finding keeps its
// status and its message says the op fell back.
void apply_fallback(const std::vector<std::string>& target_warnings, Verdict& v);

}  // namespace mpscheck

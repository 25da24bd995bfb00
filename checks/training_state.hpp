// The tolerance of a network's training state on a float16/bfloat16 target (Tolerance::training_state):
// its family's unit floor, and the plain fast path in units of it.
#pragma once

#include "checks/tolerance.hpp"

#include <mpscheck/workload.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mpscheck {

// The unit floor of each training-state family of a network's outputs (checks/verdict.hpp,
// training_family): kStructure.family_floor_fraction of the RMS of the family's reference elements,
// pooled over its outputs.
std::map<std::string, double> training_floors(const Outputs& reference);

// Makes `tol` the tolerance of training-state output `output`: judged by the training-state rule,
// with its family's floor from `floors`, and a plain atol of kScaleRoundingUnits units of the dtype
// at that floor (never below `base_atol`, a nondeterministic reference's widening), never of the
// output's own scale.
void as_training_state(Tolerance& tol, const std::map<std::string, double>& floors, const std::string& output,
                       c10::ScalarType dtype, double base_atol);

// An update whose parameter's first-step gradient is undetermined in sign at some elements
// (kStructure.undetermined_margin): `target` with those elements replaced by `honest`'s (the
// witness's or a baseline's update), and their count in `count`. `gold0` and `target0` are the
// first-step gradients of the parameter, `honest0` the honest sides' (any may be undefined).
at::Tensor excuse_undetermined(const at::Tensor& target, const at::Tensor& honest, const at::Tensor& gold0,
                               const at::Tensor& target0, const std::vector<at::Tensor>& honest0, std::int64_t& count);

// The target's update `name` ("update/fc.weight") as the training-state rule judges it: with the
// elements whose parameter's first-step gradient ("grad0/fc.weight") is undetermined in sign taken
// from the first of `honest` (the witness, the rounded-operation baseline, the rounded-input
// baseline: maps of outputs by name, any empty) that has it. Any other output is `target` itself.
at::Tensor update_as_judged(const std::string& name, const at::Tensor& target,
                            const std::map<std::string, at::Tensor>& gold,
                            const std::map<std::string, at::Tensor>& target_outputs,
                            const std::vector<const std::map<std::string, at::Tensor>*>& honest, std::int64_t& count);

// Chaos scatters a network's training state; it gives it no shape it does not give the nudged run
// (the CPU's own run in the dtype with its parameters and layers one unit away, checks/verdict.hpp).
// A failing training-state output whose structure or scatter fails where the nudged run's, judged
// by the same rule against the same honest side (`witness`: the witness, or on a CPU target the
// rounded-operation baseline), holds is a systematic error (Attribution::systematic), which
// mark_chaotic never excuses: a gradient row 3% low in a network whose nudged witness moves every
// element by a unit was a chaos skip, its RMS difference diluted by the other 63 rows.
struct OutputAttribution;
void systematic_unless_nudged_too(std::vector<OutputAttribution>& failing,
                                  const std::map<std::string, at::Tensor>& gold,
                                  const std::map<std::string, at::Tensor>& reference,
                                  const std::map<std::string, at::Tensor>& rounded,
                                  const std::map<std::string, at::Tensor>& witness,
                                  const std::map<std::string, at::Tensor>& nudged,
                                  const std::map<std::string, Tolerance>& tols, c10::ScalarType dtype);

}  // namespace mpscheck

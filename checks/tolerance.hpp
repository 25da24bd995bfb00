// The one table of comparison tolerances: per dtype, widened per family.
#pragma once

#include <c10/core/ScalarType.h>

#include <string>

namespace mpscheck {

struct Tolerance {
  double rtol = 0;
  double atol = 0;
  // The float64 judge's rounding term, in multiples of one rounding chain (checks/compare.hpp,
  // kRoundingUnits): 2 for the gradients of a float16/bfloat16 target, which round the saved
  // forward output and the incoming gradient before the product is rounded again.
  double chains = 1;
  // A training trajectory's output (a loss after optimizer steps, a parameter after them) on a
  // float16/bfloat16 target: rounding compounds through the steps, and neither float32 nor the
  // rounded-input baseline follows the dtype's trajectory, so these keep the family's old plain
  // tolerance and the float64 judge's whole-output spread, with no bias rule. Parameter updates and
  // first-step gradients are judged as outputs in their own right by the reduced-precision rule.
  bool trajectory = false;
  // A network's output (a Model case): each element carries the rounding of every layer before it,
  // shared with the rest of the output, so its elements' errors are not independent draws, and the
  // paired bias rule (checks/compare.hpp), whose standard error assumes they are, does not apply.
  bool network = false;
  // Whether the output is judged by its structure (checks/structure.hpp): an op's output an honest
  // kernel rounds once, from float32 accumulation (rounds_once), or a network's forward output on an
  // accelerator, where the witness shows what the layers' roundings do. A kernel that rounds a
  // shared intermediate shifts a whole channel, row or run by many units, honestly: the CPU's own
  // batch norm over data offset by 100 rounds each channel's mean (11 to 13 units of the output on
  // a channel), and the sim's honest control, rounding a row's logsumexp one unit the other way,
  // moves its softmax gradient by 4 units. The witness shows the first (its own rounding), never
  // the second (another honest rounding), and without a witness neither shows. A network's
  // training state is not judged so: the honest control at sim:bfloat16 moved a block of dcgan's
  // first discriminator gradients by 11 units where the witness showed 0.06 (a chaotic first step).
  bool structure = false;
  // A network's training state (its gradients, "grad/" and "grad0/", its parameters' and buffers'
  // updates) on a float16/bfloat16 target: judged by the training-state rule (checks/compare.hpp,
  // Attribution::training_state) in units of the dtype's rounding against the honest error the
  // witness or the rounded-operation baseline measures, never against the output's own scale.
  bool training_state = false;
  // The magnitude below which such an output's elements are judged at the spacing there, in
  // absolute units: kStructure.family_floor_fraction of its family's RMS (judge.cpp).
  double unit_floor = 0;
};

// Tolerance for comparing a target computing in `dtype` against the CPU float32 reference, for a
// workload of tolerance family `family` (Workload::family()). Integer and bool dtypes are exact.
// float16/bfloat16 get one rule for every family but "random" (docs/verdicts.md, "Reduced precision"): the
// plain tolerance is only a fast path in front of the float64 judge, so its rtol is
// kPlainRoundingUnits units of the dtype's rounding and its atol is left for
// `scaled_to_output` to set from the output's own scale (here it is 0).
Tolerance tolerance_for(const std::string& family, c10::ScalarType dtype);

// The fast path's rtol for float16/bfloat16, in units of the dtype's unit roundoff: an element
// within it is within the float64 rule's kRoundingUnits * u * |g| + 3 * |r - g| (checks/compare.hpp).
constexpr double kPlainRoundingUnits = 4;
// The fast path's atol for float16/bfloat16 outputs that accumulate (dot products, reductions,
// networks, and every gradient, which backward kernels scatter-add): this many rounding units of
// the output's RMS, because an element that sums many terms carries the rounding of its terms, not
// of itself. An output of scale 1e-3 (a parameter update) is judged at 1e-3, never under a fixed
// atol. The forward outputs of families of one rounding per element (elementwise, activation,
// softmax, pool, indexing, shape) keep atol 0: their honest error is relative to the element, and
// a small element 2x off must reach the float64 judge, which also allows this atol (no more).
constexpr double kScaleRoundingUnits = 8;

// Whether output `output` (a name such as "out" or "grad/x") of a case of tolerance family
// `family` accumulates, in the sense above. The gradients of pool, indexing, shape and softmax ops
// do (windows, gathers, pads and the softmax's row sum are scatter-added or reduced); those of
// elementwise and activation ops are products of rounded factors, judged element by element.
bool accumulates(const std::string& family, const std::string& output);

// `tol` for one output of a float16/bfloat16 target whose reference has RMS `scale` (finite
// elements): atol becomes kScaleRoundingUnits * u * scale when the output accumulates, and stays
// otherwise; never below tol.atol (a reference that differs from itself). A gradient ("grad/...")
// gets two rounding chains (Tolerance::chains). Other dtypes keep `tol`.
Tolerance scaled_to_output(const Tolerance& tol, c10::ScalarType dtype, double scale, const std::string& family,
                           const std::string& output);

// Whether output `output` of a case of tolerance family `family` is one an honest float16/bfloat16
// kernel rounds once, from float32 accumulation (Tolerance::structure): the forward outputs of
// elementwise, activation, pool, indexing and shape ops, and every output of matmul and conv ops
// (a matmul's gradient is a matmul). Not a network, a reduction, a normalisation, a softmax, a loss,
// a recurrent cell, attention, an fft, or another family's gradient (two rounding chains).
bool rounds_once(const std::string& family, const std::string& output);

// `tol` as a training trajectory's (Tolerance::trajectory): the train family's plain tolerance
// before issue 22 and the float64 judge's whole-output spread, with no bias rule.
Tolerance as_trajectory(const Tolerance& tol);

// Whether `output` of a case of tolerance family `family` is a training trajectory (Tolerance::trajectory):
// "loss/...", "param/..." and "buffer/..." outputs of "train" cases.
bool is_trajectory(const std::string& family, const std::string& output);

}  // namespace mpscheck

// The one tensor-comparison routine, and attribution against a float64 gold run.
#pragma once

#include "checks/structure.hpp"
#include "checks/tolerance.hpp"
#include "checks/result.hpp"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace mpscheck {

// Compares one target output against the reference output, elementwise with `tol`
// (|t - r| <= atol + rtol * |r|); non-finite values must agree exactly (NaN with NaN, +inf with
// +inf). Integer and bool outputs compare exactly whatever `tol` says; complex outputs compare
// on both parts (|t - r| is the modulus). The dtype is part of the result: a target dtype other
// than the reference's is a finding, except that a floating (complex) output may come back in
// `reduced`, the floating dtype a reduced-precision target computes in. Either tensor may live on
// any device. One pass over the elements, no whole-tensor temporaries for float32/float64.
OutputReport compare_tensors(const std::string& name, const at::Tensor& reference, const at::Tensor& target,
                             const Tolerance& tol, c10::ScalarType reduced = c10::ScalarType::Undefined);

// An index output (argmax, sort's indices, topk, kthvalue, mode) checked by what it means: the
// target's index must be in range, and must select, from the target's own `source` along `dim`
// (dim < 0 after flattening when `flat`), a value equal to the one the reference's index selects
// there. Two indices of tied values both pass; an index off by one onto a different value fails.
OutputReport compare_index(const std::string& name, const at::Tensor& reference, const at::Tensor& target,
                           const at::Tensor& source, std::int64_t dim, bool flat);

// Random statistics, judged by the reference's sampling error: element i passes when
// |t - r| <= sigmas * sqrt(2) * se_r + unit * |r|. sqrt(2) * se_r is the standard error of the
// difference of two samples of the same distribution; the target's own standard error `se_target`
// is not used, so a generator whose outliers inflate its own variance cannot widen its allowance.
// `unit` (twice the unit roundoff of the dtype the samples were drawn in) is relative to the
// statistic's own size: rounding moves a mean or a variance by a few units of its value, and a
// fraction (a histogram bin, P(x < 0)) by no more than a few units of that fraction.
OutputReport compare_statistics(const std::string& name, const at::Tensor& reference, const at::Tensor& target,
                                const at::Tensor& se_reference, const at::Tensor& se_target, double sigmas,
                                double unit);

// Overflow-safe root mean square: sum of squares kept as scale^2 * ssq (LAPACK's nrm2), so no
// square of a value near the top of the double range becomes inf.
struct ScaledSquares {
  double scale = 0, ssq = 1;
  std::int64_t n = 0;
  void add(double x) {
    ++n;
    const double ax = std::abs(x);
    if (ax == 0 || !std::isfinite(ax)) return;
    if (scale < ax) {
      ssq = 1 + ssq * (scale / ax) * (scale / ax);
      scale = ax;
    } else {
      ssq += (ax / scale) * (ax / scale);
    }
  }
  void merge(const ScaledSquares& o) {
    n += o.n;
    if (o.scale == 0) return;
    if (scale < o.scale) {
      ssq = o.ssq + ssq * (scale / o.scale) * (scale / o.scale);
      scale = o.scale;
    } else {
      ssq += o.ssq * (o.scale / scale) * (o.scale / scale);
    }
  }
  double root_sum() const { return scale == 0 ? 0.0 : scale * std::sqrt(ssq); }
  double rms() const { return n == 0 || scale == 0 ? 0.0 : scale * std::sqrt(ssq / static_cast<double>(n)); }
};

// The RMS of a tensor's finite elements (0 when it has none): the scale of an output.
double finite_rms(const at::Tensor& x);

// The signed, magnitude-weighted mean relative error of `target` against `reference` over the
// elements where both are finite: mean = sum((t - r) * sign(r)) / sum(|r|), with the standard error
// of that mean from the spread of the per-element errors. "Every element 3% too large" is +0.03.
struct SignedBias {
  double mean = 0, se = 0;
  std::int64_t n = 0;
};
SignedBias signed_bias(const at::Tensor& reference, const at::Tensor& target);

// The cheap screen in front of the float64 judge for float16/bfloat16 outputs that pass the plain
// tolerance: a signed bias beyond this many rounding units sends the output to float64. The float64
// bias rule below never allows less than kBiasUnits (> this), so nothing it would flag is screened out.
constexpr double kBiasScreenUnits = 0.5;

// Attribution with a float64 gold run (DESIGN.md §5). For float32 targets two rules, for
// float16/bfloat16 three; all must hold. g is gold, r the float32 reference, t the target, u the
// target dtype's unit roundoff, and b the baseline: for float16/bfloat16 the float32 result from
// inputs and weights rounded to that dtype, itself rounded to it (or gold rounded, when `rounded`
// is undefined). On accelerator targets a witness w joins them for float16/bfloat16: the CPU's own
// run in the target dtype, where every intermediate result is rounded as an honest device rounds
// it (what PyTorch's MPS consistency tests compare against; a backward that chains several ops,
// erf's exp(-x^2) say, compounds roundings that b, rounded once, does not show). No witness on CPU
// targets, where it would be the target itself. "local" at an element is max(|r - g|, |b - g|,
// |w - g|), b and w left out where non-finite.
//  - RMSE (PyTorch's dynamo accuracy checker): the target's RMSE against gold is within
//    `multiplier` times the baseline RMSE (float32's own RMSE, and for float16/bfloat16 at least
//    b's and w's) plus tol.atol (for float16/bfloat16 the fast path's scale-relative atol), plus for
//    float16/bfloat16 tol.chains * kRoundingUnits * (u * RMS(g) + the smallest subnormal, as in the band
//    rule): the per-element rounding term below,
//    in aggregate.
//  - Per element, so that one wrong element is never diluted by sqrt(n): an element outside the
//    plain tolerance `tol` must have |t - g| <= kElementMultiplier * local + spread
//    + kRoundingUnits * u * |g|. The magnitude's spread is local to the element's magnitude:
//    the larger of kSpreadMultiplier times the RMS of `local` and kPeakMultiplier times its largest
//    value, over the elements with |g| in the same binade or below (taking binades above only until
//    kMinMagnitudePool elements are pooled), plus tol.atol, so small elements are judged by the
//    errors small elements honestly have, and an element where terms cancel by the largest honest
//    error there. For float16/bfloat16, spread is the magnitude's spread, never the whole output's,
//    except under a noise floor: where at least kMinMagnitudePool elements have an honest error
//    (`local`) at least as large as |g| itself, honest errors there are set by the terms, not the
//    value, and every element with |g| at or below the floor (kSpreadMultiplier times their RMS or
//    kPeakMultiplier times their largest, the larger) takes at least the floor as its spread.
//    For float32 targets it is the larger of the magnitude's spread and kSpreadMultiplier *
//    baseline + tol.atol: where terms cancel (logcumsumexp's backward subtracts two exponentials),
//    float32's honest errors are heavy-tailed, its largest error at a magnitude tens of times its
//    RMSE, and another honest float32 kernel's error at one element is bounded by that largest
//    error, not by float32's own error there or by a multiple of its RMSE. Trajectory outputs
//    (training state) keep kSpreadMultiplier * baseline + tol.atol in every dtype.
//  - Band (float16/bfloat16): over each band of magnitudes (binades of |g| grouped from the
//    smallest until kMinMagnitudePool elements), the target's RMS error is within kBandMultiplier
//    times the RMS of `local` there plus tol.chains * kRoundingUnits * (u * RMS(g) there + the
//    smallest subnormal of the target's storage or, where the target computed in float16/bfloat16,
//    of that dtype if coarser, as per element) plus
//    tol.atol (the fast path's scale-relative atol, as everywhere in this judge): a device
//    that rounds each op faithfully stays inside it, a band of elements wrong by half does not.
//  - Bias (float16/bfloat16): the target's signed mean relative error against gold (signed_bias)
//    must be within kBiasMultiplier times that of float32 and of b, plus kBiasSigmas standard errors
//    of the honest baseline's errors (sqrt(sum local^2) / sum |g|), plus kBiasUnits * u * (1 +
//    kRoundingUnits / sqrt(n)). Every element 3% too large, or a loss 10% off, fails it even when
//    each element is within a few rounding units. With a witness, the bias is judged once more
//    against b instead of gold (the paired bias): the rounding of the inputs, which b, the witness
//    and the target share, drops out of both the bias and its standard error, which is then the
//    witness's scatter about b (at least a unit of each element). A softmax over coarsely rounded
//    logits moves by up to a quarter between float64 and b, and hid a bias of 3% there. That
//    standard error treats elements as independent, which one op's outputs are and a network's
//    are not (Tolerance::network): honest bfloat16 training failed it on 9 of 21 networks.
//  - Structure (float16/bfloat16, checks/structure.hpp, outputs that are not trajectories): the
//    target's signed errors in units of the dtype's spacing at each element, paired with the
//    witness (or, without one, the rounded baseline), show no group (a slice along any dimension,
//    a block in row-major order, a band of magnitudes, the whole output) biased beyond what the
//    honest side shows there, by kStructure's effect size, significance and honest multiple. A row
//    4% low or the small elements of exp 1.5x too large pass every rule above in bfloat16.
// Where gold is non-finite, or finite but beyond the largest finite value of the target dtype
// (float32 for float32 targets), the position is non-finite: the target must hold gold's value, the
// same value as float32, or an infinity or the dtype's extreme of gold's sign; such elements take
// no part in any RMSE or bias. Where gold is representable, a non-finite target element is
// acceptable only when float32 holds the same value there (both overflowed). rmse_target is then
// infinite, as a figure. Every aggregate is an overflow-safe sum (ScaledSquares): a baseline is
// never inf.
struct Attribution {
  bool target_ok = false;
  // False when the three cannot be set side by side (an output missing, or shapes that differ):
  // then nothing was computed and the figures below mean nothing.
  bool measured = false;
  bool rmse_ok = false;
  double rmse_reference = 0, rmse_target = 0, baseline = 0, multiplier = 2;
  // Elements that fail the per-element rule: how many, the first, and the figures there.
  std::int64_t bad_elements = 0, first_bad = -1;
  double gold_value = 0, target_value = 0, allowed = 0;
  // The bias rule (float16/bfloat16 only): the target's signed mean relative error against gold,
  // the largest honest one (float32's or the rounded baseline's), what is allowed, and the dtype.
  bool bias_ok = true;
  double bias_target = 0, bias_honest = 0, bias_allowed = 0;
  // The paired bias (witnessed float16/bfloat16 only): the same against b, the float32 result from
  // the same rounded inputs and weights, which every side shares, with the witness's own bias
  // against b as the honest one; set when it is what failed the bias rule.
  bool paired_failed = false;
  double paired_target = 0, paired_honest = 0, paired_allowed = 0;
  // The band rule (float16/bfloat16 only): the worst band of magnitudes [band_low, band_high) of
  // |g|, its element count, the target's RMS error there and what was allowed.
  bool band_ok = true;
  double band_low = 0, band_high = 0, band_target_rms = 0, band_allowed = 0, band_excess = 0;
  std::int64_t band_count = 0;
  // The structure rule (float16/bfloat16 only): its worst group and whether it holds. For training
  // state (Tolerance::training_state) it holds only if the scatter test does too.
  bool structure_ok = true;
  StructureTest structure;
  // Whether the CPU's own run in the target dtype took part (the witness).
  bool witnessed = false;
  std::string dtype;
  // The positions where the target is NaN/Inf and float32 finite, and how many of them the witness
  // is NaN/Inf at too (witnessed only). When it is at most of them, the dtype itself breaks there
  // on the CPU as well (float16 Adam dividing by an underflowed eps), and decide_attribution says
  // so: the finding stands, but it is the dtype's, not the target's.
  std::int64_t target_nonfinite = 0, witness_nonfinite = 0;
  // Each rule's figure over what it allows, worst case (a rule holds at <= 1): the RMSE over its
  // allowance, the worst element over its own allowance (elements inside the plain tolerance take
  // no part; a non-finite target where one is not allowed is infinite), the worst band, and the
  // bias. Measured whether or not the rule holds.
  struct Excess {
    double rmse = 0, element = 0, band = 0, bias = 0;
  } excess;
  // Judged by the training-state rule (Tolerance::training_state): the per-element rule in units
  // of the dtype's rounding, the structure rule and its scatter test against `honest`, the side
  // that measured what honest rounding gives ("the CPU's own bfloat16 run", "float32 with every
  // operation's result rounded to bfloat16"). The RMSE, band and bias rules take no part.
  bool training_state = false;
  std::string honest;
  // The update elements judged as the honest side's, their first-step gradient undetermined in sign
  // (kStructure.undetermined_margin).
  std::int64_t undetermined = 0;
  // Set by mark_chaotic (checks/verdict.hpp): the target differs from the witness by no more than
  // kChaosMultiplier times what the witness differs from itself with its parameters and layers one
  // unit away.
  // Not judged: neither a pass nor a finding. The two RMS differences, for the message.
  bool chaotic = false;
  double chaos_target = 0, chaos_honest = 0;
  // Set when chaos was measured on a CPU target: from the rounded-operation baseline, with the
  // target's own run nudged (mark_chaotic's `nudged_from`).
  bool chaos_from_target = false;
  // Set by judge_training_family when the output's family is scaled against the witness beyond
  // what chaos explains: a systematic error, which mark_chaotic never excuses.
  bool systematic = false;
  // Set by judge_training_family when the output passed its own rules but its family (the updates)
  // is scaled as far as the nudged witness's: only its scale was left to judge, and chaos explains
  // it, so mark_chaotic marks it without the per-output figures' tests.
  bool scaled_by_chaos = false;
};
constexpr double kElementMultiplier = 3;
constexpr double kSpreadMultiplier = 8;
constexpr double kPeakMultiplier = 5;
constexpr double kBandMultiplier = 8;
constexpr double kRoundingUnits = 4;
constexpr std::int64_t kMinMagnitudePool = 16;
constexpr double kBiasMultiplier = 3;
constexpr double kBiasSigmas = 6;
constexpr double kBiasUnits = 1;
constexpr std::int64_t kBiasBatches = 32;
// Training state (Tolerance::training_state: a network's gradients and updates in float16/bfloat16)
// takes two more honest sides: `emulated`, the rounded-operation baseline (checks/rounded_ops.hpp),
// whose error joins `local` like the witness's, and which is the honest side of its structure rule
// where there is no witness; and `magnitude`, for an update its parameter, at whose magnitude the
// update's elements are rounded. Elements below Tolerance::unit_floor are judged at the floor.
Attribution attribute_with_gold(const at::Tensor& gold, const at::Tensor& reference, const at::Tensor& target,
                                c10::ScalarType target_dtype, const Tolerance& tol, const at::Tensor& rounded = {},
                                const at::Tensor& witness = {}, const at::Tensor& emulated = {},
                                const at::Tensor& magnitude = {});

// A family's scale: a training case's first-step gradients, and its updates, on a witnessed
// float16/bfloat16 target. Each output is judged by its own rules; the family by one more. Over all
// first-step gradients, and over all updates, the RMS of the target's elements must be within
// kFamilyScale of the witness's. Honest rounding moves single elements both ways and leaves the
// whole family's size alone (measured on the sim's ulp-noise control: within 0.43% for the
// gradients of resnet18, gpt2_tiny, mnist_cnn and mlp), where a backward or optimizer step that is
// off by a factor moves all of it (the sim's train-step plant: updates 7% to 9.5% smaller).
constexpr double kFamilyScale = 0.02;
// The RMS of all the second tensors' finite elements over that of all the first's, pooled over the
// pairs (witness, target); NaN when there is nothing to measure.
double pooled_scale(const std::vector<std::pair<at::Tensor, at::Tensor>>& witness_target);

// Parameter updates in float16/bfloat16 are differences of two rounded parameters: an update
// smaller than a few spacings of the dtype at the parameter's magnitude is mostly rounding (Adam's
// first steps move a bfloat16 weight of 0.02 by 1.6 spacings), and there a step 10% short and an
// honest one round alike, while an honest device that rounds the other way moves it by a whole
// spacing. The scale of the updates is read where the dtype resolves them: the RMS of the target's
// updates over the witness's, pooled over the elements whose witness update is at least
// kResolvedSpacings spacings at max(|parameter|, |update|) (`param` is the witness's parameter
// after the steps). NaN when fewer than kMinResolved elements qualify: nothing to read.
struct UpdateSides {
  at::Tensor witness, target, param;
};
// An update of state the optimizer does not make: a training case's floating buffer
// ("buffer_update/bn1.running_var") or an input an op writes in place ("arg_update/running_mean").
inline bool is_state_update(const std::string& name) {
  return name.rfind("buffer_update/", 0) == 0 || name.rfind("arg_update/", 0) == 0;
}
// An update, after minus before, the difference of two rounded values: a training case's update
// of a parameter ("update/fc.weight") or a state update above.
inline bool is_update(const std::string& name) { return name.rfind("update/", 0) == 0 || is_state_update(name); }
// The final value an update output belongs to: "update/fc.weight" -> "param/fc.weight",
// "buffer_update/bn1.running_var" -> "buffer/bn1.running_var", "arg_update/running_mean" ->
// "arg/running_mean".
inline std::string param_of_update(const std::string& update) {
  if (update.rfind("buffer_update/", 0) == 0) return "buffer/" + update.substr(14);
  if (update.rfind("arg_update/", 0) == 0) return "arg/" + update.substr(11);
  return "param/" + update.substr(7);
}
constexpr double kResolvedSpacings = 8;
constexpr std::int64_t kMinResolved = 64;
double resolved_update_scale(const std::vector<UpdateSides>& updates, c10::ScalarType dtype);

// The unit roundoff of a floating dtype (half the distance from 1 to the next value).
double unit_roundoff(c10::ScalarType dtype);

// The largest difference between two runs of one output, |a - b| at most (infinite when they do not
// even agree on shape, dtype or finiteness, or only one is defined): how far a computation moves
// between its runs.
double largest_difference(const at::Tensor& a, const at::Tensor& b);

// Flat index -> "[i, j, k]" for messages.
std::string index_string(std::int64_t flat, const std::vector<std::int64_t>& shape);

}  // namespace mpscheck

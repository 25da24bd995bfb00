// The structure rule (issue 47, DESIGN.md §5): an honest float16/bfloat16 error against float64 has a
// size and no shape. Each element's signed error is expressed in units of the dtype's rounding
// there (its spacing), and the mean unit error of every group of elements a kernel computes
// together (each slice along each dimension, each block in memory order, each band of magnitudes,
// the whole output) is set beside what the honest side shows over the same group. A group whose
// target is biased well beyond it is a finding that names the group.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>

namespace mpscheck {

// Every number the structure rule decides by, with its reason. This table is the rule book of
// the rule; checks/rule_book.cpp puts each in the verdict rule book (docs/verdicts.md).
struct StructureRules {
  // The chance, per output, that honest independent errors raise a finding anywhere: split evenly
  // over every group tested, each group twice (its errors as values and as magnitudes: Bonferroni),
  // so an output with 500 slices and blocks holds each to alpha / 1000 (two-sided, normal: about
  // 5.3 standard errors).
  double alpha;
  // A group's mean paired unit error must be at least this many units: honest rounding that is
  // correlated inside a group (a row's shared intermediate) moves a mean by a fraction of a unit,
  // and a significance test alone would call a tenth of a unit on a million elements structure.
  double min_effect_units;
  // ... and this many times the honest side's own mean over the same group (or, if larger, the RMS
  // of the honest group means over the partition): where honest rounding itself is structured
  // (inputs rounded beside a cancellation), a target rounding the other way is as structured.
  double honest_multiplier;
  // Per-element unit errors are clipped to +-this: where terms cancel, an honest element can be
  // thousands of its own units off, and one such element must not make a group's mean. A planted
  // error of a factor still reads as the clip on every element of its group.
  double clip_units;
  // The floor, as a fraction of the output's RMS, below which an element's unit is the floor's
  // spacing: an exactly-zero or nearly-zero element is judged in absolute units, never relative to
  // its own magnitude (a 1e-9 error at gold 0 is no finding).
  double floor_fraction;
  // The smallest group tested: a mean over fewer elements says little and its spread is unknown.
  std::int64_t min_group;
  // The smallest block in memory order; blocks double from it while two fit in the output.
  std::int64_t min_block;
  // The least within-group spread (units) a group's standard error is computed from: a group of
  // identical errors (every element rounded the same way) has a standard error of zero otherwise.
  double min_spread_units;
  // The screen in front of the float64 judge (judge.cpp): outputs inside the plain tolerance are
  // tested against the float32 reference rounded to the dtype, with the effect and significance
  // thresholds scaled by this, and sent to float64 when a group stands out.
  double screen_leniency;
  // Training state (a network's gradients and updates, StructureOptions::training_state) is judged by the
  // size of its errors as well as their shape: the RMS unit error of the whole output, and of each
  // band of magnitudes, may be at most this many times the honest side's over the same group. An
  // honest bfloat16 CPU backward lands within 1.73x the rounded-operation baseline in every band of
  // a log-softmax MLP's gradients; the same gradient 10% off element by element lands 5.8x there,
  // in its largest elements, where honest errors are smallest in units (tests/fixtures/
  // export_training_state.py).
  double scatter_multiplier;
  // ... and never less than this RMS: two honest runs that round each element once differ by about
  // one unit, and a group where the honest side happens to be exact must not hold the target to zero.
  double scatter_min_units;
  // The floor of a training-state output, as a fraction of its family's RMS (every gradient of the
  // network, or every update): an output that is zero in exact arithmetic (an attention key bias's
  // gradient, 1e-17 in float64) is judged in units of its family's magnitudes, where its honest
  // bfloat16 residue (1e-3, from a sum that cancels) is a few units, never as a multiple of itself.
  double family_floor_fraction;
  // A gradient's elements share intermediates (a weight gradient's row is one pre-activation
  // gradient times many inputs), and two honest runs round each shared intermediate independently:
  // an honest bfloat16 row mean lies anywhere in the spread of the honest side's own row means, in
  // either direction. A training-state group's paired mean may reach z (the Bonferroni threshold)
  // times this times the RMS of the honest side's group means over the partition: sqrt(1 + 1.35^2)
  // for two independent honest runs of which the target's errors are up to 1.35x the honest
  // side's (LibTorch's CPU bfloat16 backward against the rounded-operation baseline, a log-softmax
  // MLP's gradients: 1.3x typical). Without it an honest row of that MLP, 11 units low where the
  // baseline's rows spread 4 units RMS, was a finding.
  double state_paired_spread;
  // ... and must be at least this many units: an honest LibTorch bfloat16 weight gradient (alexnet's
  // classifier.1) holds its elements of magnitude 5e-7 to 1e-6 1.7 units low on average, 2.4 beyond
  // the rounded-operation baseline. A channel 3% low is 3.8 to 7.7 units of bfloat16, far more of
  // float16.
  double state_min_effect_units;
  // An Adam step is the sign of its gradient: where a parameter's first-step gradient is within
  // this many times an honest side's (or the target's own) error there of zero, its sign is
  // rounding's, and its update may be a whole step either way. Such update elements are judged as
  // the honest side's (judge.cpp, excuse_undetermined): bert_small's update of an attn_norm bias
  // element whose gradient is 6.8e-6 in float64 and 0 in honest bfloat16 went up where float64's went down.
  double undetermined_margin;
  // A training-state output's floor as a fraction of its own RMS (floor_fraction for an op's): a
  // gradient's elements are sums that cancel, whose honest error is set by their terms, of the
  // output's magnitude: alexnet's classifier.1 gradient holds an element of 1.1e-7 (RMS 8e-5) 3e-7
  // off in honest bfloat16, 640 units at the op floor and 5 at this one.
  double state_floor_fraction;
};
inline constexpr StructureRules kStructure{
    .alpha = 1e-4,
    .min_effect_units = 2,
    .honest_multiplier = 3,
    .clip_units = 32,
    .floor_fraction = 1.0 / 1024,
    .min_group = 16,
    .min_block = 32,
    .min_spread_units = 0.3,
    .screen_leniency = 0.5,
    .scatter_multiplier = 3,
    .scatter_min_units = 2,
    .family_floor_fraction = 1.0 / 1024,
    .state_paired_spread = 1.7,
    .state_min_effect_units = 3,
    .undetermined_margin = 2,
    .state_floor_fraction = 1.0 / 8,
};

// The group of largest excess over its allowance, and the figures of the test.
struct StructureTest {
  bool measured = false;  // false: nothing to test (not float16/bfloat16, shapes differ, too small)
  bool ok = true;
  std::int64_t groups = 0;  // groups tested over all partitions
  double z = 0;             // the Bonferroni threshold, in standard errors
  double excess = 0;        // the worst group's |paired mean| over its allowance (a finding above 1)
  // The worst group: what it is ("row 63", "elements 4096 to 4159 in memory order", "magnitude below
  // 0.125"), its size, the target's and the honest side's mean unit error there against float64,
  // the paired mean (target against the honest side) and what was allowed.
  std::string where;
  std::int64_t count = 0;
  // Whether the group's errors are signed by gold's sign (an error of scale: "too small in
  // magnitude"), or as values ("low": an error added whatever the element's sign).
  bool in_magnitude = false;
  double target_units = 0, honest_units = 0, paired_units = 0, allowed_units = 0;
  bool witnessed = false;
  // The scatter test (StructureOptions::training_state): of the whole output and each band of magnitudes,
  // the group furthest beyond its allowance: what it is, its size, the target's and the honest
  // side's RMS unit error against float64 there (clipped as above), and what was allowed.
  bool scatter_tested = false, scatter_ok = true;
  double scatter_excess = 0;
  std::string scatter_where;
  std::int64_t scatter_count = 0;
  double scatter_target_units = 0, scatter_honest_units = 0, scatter_allowed_units = 0;
  std::string honest;  // StructureOptions::honest
};

// How an output is tested, beyond the defaults for an op's output.
struct StructureOptions {
  // Scales the effect and significance thresholds (1 for the rule, kStructure.screen_leniency for
  // the screen).
  double leniency = 1.0;
  // A magnitude below which an element's unit is the spacing there (the larger of this and
  // kStructure.floor_fraction of the output's RMS): a training-state output's family floor.
  double floor = 0;
  // Where defined (same shape as gold), each element's unit is taken at max(|gold|, |magnitude|):
  // an update's rounding is its parameter's, whose difference it is.
  at::Tensor magnitude;
  // A network's training state (Tolerance::training_state): also test the size of the errors
  // (StructureTest::scatter_*), group magnitudes by the unit's magnitude (below the floor, one
  // band), and allow for shared intermediates (kStructure.state_paired_spread).
  bool training_state = false;
  // What the honest side is, for messages ("float32 with every operation's result rounded to
  // bfloat16"); empty: the witness or the rounded-input baseline, as test_structure picks.
  std::string honest;
};

// Tests `target` (a float16/bfloat16 result, any storage dtype) for structure against `gold`
// (float64 truth), with `baseline` the float32 result from inputs rounded to `dtype` (undefined:
// gold itself) and `witness` the CPU's own run in `dtype` (undefined on CPU targets). The honest
// side is the witness where there is one, else the baseline rounded to `dtype`; the paired error
// of an element is (target - honest) / spacing. `leniency` scales the effect and significance
// thresholds (1 for the rule, kStructure.screen_leniency for the screen).
StructureTest test_structure(const at::Tensor& gold, const at::Tensor& target, const at::Tensor& baseline,
                             const at::Tensor& witness, c10::ScalarType dtype, double leniency = 1.0);
StructureTest test_structure(const at::Tensor& gold, const at::Tensor& target, const at::Tensor& baseline,
                             const at::Tensor& witness, c10::ScalarType dtype, const StructureOptions& options);

// "the elements of magnitude 0.0156 to 0.0312 (8192 elements): 19 units RMS against float64, where
// the honest side shows 3.4 (allowed 10)", for a message.
std::string describe_scatter(const StructureTest& s);

// "row 63 (128 elements): 9.1 units low on average against float64; honest bfloat16 shows 0.2
// (allowed 2)", for a message.
std::string describe_structure(const StructureTest& s, const std::string& dtype);

}  // namespace mpscheck

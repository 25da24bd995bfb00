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
// the rule; the README's verdict section quotes it.
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
};

// Tests `target` (a float16/bfloat16 result, any storage dtype) for structure against `gold`
// (float64 truth), with `baseline` the float32 result from inputs rounded to `dtype` (undefined:
// gold itself) and `witness` the CPU's own run in `dtype` (undefined on CPU targets). The honest
// side is the witness where there is one, else the baseline rounded to `dtype`; the paired error
// of an element is (target - honest) / spacing. `leniency` scales the effect and significance
// thresholds (1 for the rule, kStructure.screen_leniency for the screen).
StructureTest test_structure(const at::Tensor& gold, const at::Tensor& target, const at::Tensor& baseline,
                             const at::Tensor& witness, c10::ScalarType dtype, double leniency = 1.0);

// "row 63 (128 elements): 9.1 units low on average against float64; honest bfloat16 shows 0.2
// (allowed 2)", for a message.
std::string describe_structure(const StructureTest& s, const std::string& dtype);

}  // namespace mpscheck

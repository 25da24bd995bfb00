#include "checks/rule_book.hpp"

#include "checks/compare.hpp"
#include "checks/later_call.hpp"
#include "checks/structure.hpp"
#include "checks/timing.hpp"
#include "checks/tolerance.hpp"
#include "checks/verdict.hpp"

#include <mpscheck/tolerance_families.hpp>

#include <fmt/format.h>

namespace mpscheck {

namespace {

std::vector<RuleBookRow> float32_plain_tolerances() {
  std::vector<RuleBookRow> rows;
  for (std::string_view family : kToleranceFamilies) {
    const Tolerance t = tolerance_for(std::string(family), c10::kFloat);
    const std::string reason(float32_tolerance_reason(family));
    rows.push_back({"plain tolerance, float32", fmt::format("{} rtol", family), t.rtol, reason});
    rows.push_back({"plain tolerance, float32", fmt::format("{} atol", family), t.atol, reason});
  }
  return rows;
}

std::vector<RuleBookRow> make_rule_book() {
  const StructureRules& s = kStructure;
  std::vector<RuleBookRow> rows = {
      {"plain tolerance, float16/bfloat16", "kPlainRoundingUnits", kPlainRoundingUnits,
       "the fast path's rtol, in units of the dtype's rounding: inside it an element is inside the float64 "
       "judge's own per-element allowance"},
      {"plain tolerance, float16/bfloat16", "kScaleRoundingUnits", kScaleRoundingUnits,
       "the fast path's atol for outputs that accumulate, in rounding units of the output's RMS; only a fast "
       "path: the float64 judge decides every element outside rtol"},
      {"plain tolerance, float16/bfloat16", "kBiasScreenUnits", kBiasScreenUnits,
       "a signed bias beyond this many units sends an output inside the plain tolerance to float64; below "
       "kBiasUnits, so nothing the bias rule would flag is screened out"},
      {"plain tolerance, float16/bfloat16", "kTrajectoryRtol", kTrajectoryRtol,
       "a training trajectory (loss, final parameters) compounds every step's rounding"},
      {"plain tolerance, float16/bfloat16", "kTrajectoryAtol", kTrajectoryAtol, "as kTrajectoryRtol"},
      {"float64 judge, per element", "kElementMultiplier", kElementMultiplier,
       "an element may be this many times the largest honest error there (float32's, the rounded baseline's, "
       "the witness's)"},
      {"float64 judge, per element", "kRoundingUnits", kRoundingUnits,
       "plus this many units of the target dtype's rounding of float64's value"},
      {"float64 judge, per element", "kSpreadMultiplier", kSpreadMultiplier,
       "plus this many times the RMS honest error of the elements of its magnitude and below"},
      {"float64 judge, per element", "kPeakMultiplier", kPeakMultiplier,
       "or this many times their largest honest error, if larger: where terms cancel, honest errors are "
       "heavy-tailed"},
      {"float64 judge, per element", "kMinMagnitudePool", static_cast<double>(kMinMagnitudePool),
       "a magnitude's spread pools binades upwards until this many elements"},
      {"float64 judge, band", "kBandMultiplier", kBandMultiplier,
       "each band of magnitudes: the target's RMS error within this many times the honest RMS there"},
      {"float64 judge, bias", "kBiasMultiplier", kBiasMultiplier,
       "the target's signed mean relative error within this many times float32's and the baseline's"},
      {"float64 judge, bias", "kBiasSigmas", kBiasSigmas,
       "plus this many standard errors of the honest errors: a healthy output fails about once in 5e8"},
      {"float64 judge, bias", "kBiasUnits", kBiasUnits, "plus this many units of rounding: the least bias judged"},
      {"float64 judge, bias", "kBiasBatches", static_cast<double>(kBiasBatches),
       "the witness's errors are summed over this many contiguous batches for the paired bias's spread"},
      {"structure", "kStructure.alpha", s.alpha,
       "the chance per output that honest errors raise a finding anywhere, split over every group tested "
       "(Bonferroni)"},
      {"structure", "kStructure.min_effect_units", s.min_effect_units,
       "a group's mean paired error must be at least this many units: honest rounding correlated in a group "
       "moves a mean by a fraction of a unit"},
      {"structure", "kStructure.honest_multiplier", s.honest_multiplier,
       "and this many times the honest side's own mean over the group"},
      {"structure", "kStructure.clip_units", s.clip_units,
       "per-element errors are clipped to this many units, so one cancelling element cannot make a group's "
       "mean"},
      {"structure", "kStructure.floor_fraction", s.floor_fraction,
       "below this share of the output's RMS an element is judged at the floor's spacing, never relative to "
       "itself"},
      {"structure", "kStructure.min_group", static_cast<double>(s.min_group), "the smallest group tested"},
      {"structure", "kStructure.min_block", static_cast<double>(s.min_block),
       "the smallest block in memory order; blocks double from it"},
      {"structure", "kStructure.min_spread_units", s.min_spread_units,
       "the least within-group spread a standard error is computed from"},
      {"structure", "kStructure.screen_leniency", s.screen_leniency,
       "the screen in front of float64 scales the thresholds by this"},
      {"structure, training state", "kStructure.scatter_multiplier", s.scatter_multiplier,
       "a gradient's RMS unit error, whole and per band, within this many times the honest side's (honest "
       "LibTorch bfloat16: 1.73x; 10% per element: 5.8x)"},
      {"structure, training state", "kStructure.scatter_min_units", s.scatter_min_units,
       "and never held below this RMS: two honest runs differ by about a unit"},
      {"structure, training state", "kStructure.family_floor_fraction", s.family_floor_fraction,
       "an exactly-zero gradient is judged in units of its family's magnitudes"},
      {"structure, training state", "kStructure.state_paired_spread", s.state_paired_spread,
       "a group's paired mean may reach z times this times the honest group means' RMS: shared "
       "intermediates round independently in two honest runs"},
      {"structure, training state", "kStructure.state_min_effect_units", s.state_min_effect_units,
       "the least effect for training state (an honest alexnet gradient band sits 1.7 units low)"},
      {"structure, training state", "kStructure.undetermined_margin", s.undetermined_margin,
       "an Adam update whose gradient is within this many honest errors of zero may step either way"},
      {"structure, training state", "kStructure.state_floor_fraction", s.state_floor_fraction,
       "a gradient's floor as a share of its own RMS: its elements are sums that cancel"},
      {"training family", "kFamilyScale", kFamilyScale,
       "all first-step gradients, and all updates, within this share of the witness's RMS: honest rounding "
       "leaves a family's size within 0.43%"},
      {"training family", "kResolvedSpacings", kResolvedSpacings,
       "an update's scale is read only where it is at least this many spacings of its parameter"},
      {"training family", "kMinResolved", static_cast<double>(kMinResolved),
       "and only from at least this many such elements"},
      {"chaos", "kChaosMultiplier", kChaosMultiplier,
       "a failing output within this many times what the nudged witness moves is chaotic: a skip, never a pass"},
      {"attribution", "kFloat32Comparable", kFloat32Comparable,
       "float32 is the fragile side only where its error is at least this share of the target's"},
      {"reference", "kNondeterministicReferenceMultiple", kNondeterministicReferenceMultiple,
       "a reference whose two runs differ by more than this many tolerances is an error, not a reference"},
      {"later calls", "kLaterCallSpreadMultiple", kLaterCallSpreadMultiple,
       "a later call may differ from the first by this many times the reference's own difference between "
       "calls"},
      {"random statistics", "kStatisticSigmas", kStatisticSigmas,
       "a statistic may be this many standard errors off: a healthy one fails about once in 5e8"},
      {"speed", "kMinSpeedEffect", kMinSpeedEffect, "the smallest ratio a faster or slower claim is made for"},
      {"speed", "kMinCpuShare", kMinCpuShare,
       "a reference holding less of its quiet CPU share was timed on a busy machine: no claim"},
      {"speed", "kMaxRunQueueShare", kMaxRunQueueShare,
       "a side whose threads waited runnable more than this share of their blocks was crowded: no claim"},
  };
  for (RuleBookRow& r : float32_plain_tolerances()) rows.push_back(std::move(r));
  return rows;
}

std::string cell(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

}  // namespace

const std::vector<RuleBookRow>& rule_book() {
  static const std::vector<RuleBookRow> rows = make_rule_book();
  return rows;
}

std::string rule_book_markdown() {
  std::string out = "| Rule | Number | Value | Why |\n|---|---|---|---|\n";
  for (const RuleBookRow& r : rule_book())
    out += fmt::format("| {} | `{}` | {:.6g} | {} |\n", cell(r.rule), r.name, r.value, cell(r.reason));
  return out;
}

}  // namespace mpscheck

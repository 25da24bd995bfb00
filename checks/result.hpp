// The result model every report is written from. Plain data: no LibTorch in here, so report
// writers and `compare`/`merge` work on JSON files alone. The host's own (checks/ fills it, reports/
// and core/ read it; its JSON is checks/result_json.cpp): no plugin sees it, so it is not part of
// the installed SDK, whose target provides neither nlohmann::json nor these functions' bodies.
#pragma once

#include "checks/op_calls.hpp"

#include <mpscheck/vocabulary.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mpscheck {

// A finding is anything a user must look at: every status except pass and skip (a fallback is
// one: the target did not run the op).
bool is_finding(Status s);

// What a result records: a workload of either kind, or the device probe a run starts with (a
// host record no workload has). Its words extend the SDK's Kind names.
enum class CaseKind { Op, Model, Probe };
namespace names {
inline constexpr const char* kCaseKind[] = {"op", "model", "probe"};
}  // namespace names
inline const char* to_string(CaseKind k) { return names::kCaseKind[static_cast<int>(k)]; }
inline CaseKind case_kind_from_string(const std::string& s) {
  return names::parse<CaseKind>(names::kCaseKind, s, "kind");
}
inline CaseKind case_kind(Kind k) { return k == Kind::Model ? CaseKind::Model : CaseKind::Op; }

// How an output was judged when not by the plain tolerance: exactly (integer/bool), on both
// parts (complex), by what an index selects, or by sampling error (random statistics).
enum class Rule { Tolerance, Exact, Complex, Index, Statistics };
// Which side a finding belongs to, against float64: the target, float32 itself (then the case
// passes), or the target dtype itself (the CPU's own run in that dtype breaks the same way).
enum class Fragile { Unknown, Float32, Target, Dtype };
namespace names {
// Their names in report.json; index = enum value ("" is not written).
inline constexpr const char* kRule[] = {"", "exact", "complex", "index", "statistics"};
inline constexpr const char* kFragile[] = {"", "float32", "target", "dtype"};
}  // namespace names
inline const char* to_string(Rule r) { return names::kRule[static_cast<int>(r)]; }
inline const char* to_string(Fragile f) { return names::kFragile[static_cast<int>(f)]; }

// Comparison figures for one named output.
struct OutputReport {
  std::string name;
  std::vector<std::int64_t> shape;
  std::string reference_dtype, target_dtype;
  std::int64_t numel = 0;
  double max_abs = 0, max_rel = 0;
  std::int64_t mismatches = 0;
  std::int64_t first_mismatch = -1;              // flat index into the output
  double reference_value = 0, target_value = 0;  // at the largest error
  std::int64_t nan_reference = 0, inf_reference = 0, nan_target = 0, inf_target = 0;
  bool ok = true;
  std::string note;  // shape/dtype disagreements, statistics used, ...
  // What made the two sides incomparable as values: "shape", "dtype", "missing" (on the target)
  // or "extra" (the target gave an output the reference has not); empty when they compared. No
  // figure measures such a difference, so an expectation's bounds never cover it.
  std::string differs;
  // Elements where one side is non-finite and the two do not hold the same value (NaN against
  // +inf, -inf against +inf, a finite value against either): counted in `mismatches`, with no
  // max_abs of their own.
  std::int64_t nonfinite_mismatches = 0;
  Rule rule = Rule::Tolerance;
  // The target gave a dtype the reference's output may not come back in (a finding whatever the
  // values; the note says which). Set by the comparison for the judge; not part of report.json.
  bool dtype_differs = false;
  // Statistics only, none of them judged: every one came from too few draws (SampleStats::kMinDraws).
  // Set by the comparison for the judge, which makes a case of such outputs alone a skip; the note
  // says why. Not part of report.json.
  bool not_judged = false;
  // Failed by a rule over a family of outputs (judge_update_scale: a step short as a whole), which
  // no per-output float64 figure can excuse. Set for the judge; not part of report.json.
  bool family_finding = false;
  // Attribution against a CPU float64 gold run (only where it decided something; else < 0).
  double rmse_reference = -1, rmse_target = -1;
};

struct TimingStats {
  double median_s = 0, p25_s = 0, p75_s = 0;
  int runs = 0;
  bool noisy() const { return median_s > 0 && (p75_s - p25_s) / median_s >= 0.1; }
};

// Memory of one case's target run, in bytes; -1 where the device or the OS gives no such figure.
struct MemoryFigures {
  // The target's allocated memory at its peak while the target ran (tensors, not the allocator's cache).
  std::int64_t peak_allocated = -1;
  // "counter": the allocator's own peak statistic; "sampled": polled while the target ran, for a
  // device whose allocator keeps no peak (a short spike between two samples is missed).
  std::string peak_source;
  // The driver's high-water mark: memory the device's allocator held from the driver at most
  // (its cache included, so it can be far above what the case needed).
  std::int64_t driver_peak = -1;
  // The worker process's resident high-water mark while the target ran (host memory, the
  // reference's and the target's alike).
  std::int64_t process_peak = -1;
  // What the device recommends a process keep its working set under (MPS: Metal's
  // recommendedMaxWorkingSetSize; elsewhere the device's total memory).
  std::int64_t recommended_max = -1;
  // Set only by explore's repeat probe (`~repeatN`) when memory grew with every call: how much a
  // call kept (the process's resident bytes, or the device's allocated ones). A leak, which no
  // smaller batch cures, unlike a case that needs more memory than the device has.
  std::int64_t growth_per_call = -1;
};

struct CaseResult {
  std::string id;
  CaseKind kind = CaseKind::Op;
  std::vector<std::string> tags;
  std::string plugin;
  Status status = Status::Skip;
  std::string message;
  std::string target;  // "cpu:bfloat16"
  std::string dtype;   // dtype the target computed in
  double rtol = 0, atol = 0;
  std::vector<OutputReport> outputs;
  std::optional<TimingStats> reference_time, target_time;
  double speedup = 0;  // reference median / target median; 0 when not timed
  SpeedClass speed_class = SpeedClass::None;
  // Whether the run's plan timed this case (under --quick only some are: core/run_plan.hpp). A
  // timed case that is not a pass has no times: the speed of a wrong answer means nothing.
  bool timed = false;
  // A faster/slower claim is re-timed with fresh instances on both sides and stands only if the
  // second round agrees; this says what the rounds found when they did not.
  std::string speed_note;
  // The timing rule found the machine busy with other work while the case was timed: its times
  // carry no claim, and no comparison between cases (explore's speed search) may rest on them.
  bool host_busy = false;
  // What the busy rule read over the case's timing rounds: the largest share of a side's timed
  // blocks its threads spent waiting for a CPU (-1 where the platform does not say), and the
  // smallest share of a core the reference's busiest thread held (-1 untimed).
  double run_queue_wait = -1;
  int crowded_blocks = 0;  // timed blocks set aside because other work crowded them off the cores
  double reference_thread_share = -1;
  // --reference-cache: the CPU reference came from the cache; its time too (--reuse-reference-times).
  bool reference_cached = false;
  bool reference_time_reused = false;
  double wall_s = 0;     // whole case as the host saw it, overhead included
  double worker_s = 0;   // time inside the worker for this case
  double compare_s = 0;  // of which comparing outputs
  std::string signal;    // crash: the signal's name
  // The phase a case failed in when it did not finish normally: "reference", "target", "float64",
  // "comparison", "localisation", "timing"; empty for a case that ran to its verdict. Only a
  // failure in "target" is the target's; any other is an `error` of mpscheck's own run.
  std::string phase;
  // Target when the target is the fragile side, Float32 when float32 itself is (the float64 gold
  // run agrees with the target); Unknown when no gold run was needed.
  Fragile attribution = Fragile::Unknown;
  bool nondeterministic = false;  // the reference differed from itself between two runs
  // What the target's later call showed against its first (checks/later_call.hpp): "call 2 equals
  // call 1", the call that differed, or why it was not compared. Empty when no later call was made
  // (a case that did not pass, or an older report).
  std::string later_call;
  // Every LibTorch warning raised while the case ran (reference, target, gold), deduplicated.
  std::vector<std::string> warnings;
  // Model cases that fail: the first named layer whose output diverges, with its figures, and
  // which call of it (1-based): a network may run one layer several times in a pass.
  std::string first_diverging_layer;
  int first_diverging_layer_call = 1;
  std::optional<OutputReport> layer;
  // Model cases: the model's own ATen calls, each replayed alone on the target (checks/op_calls.hpp);
  // absent for an op case, a model whose reference never ran, or an older report.
  std::optional<OpReplay> op_replay;
  // --expect: a finding listed as known (with the file's reason), or a listed case that passed.
  bool expected = false;
  bool unexpected_pass = false;
  std::string expectation;
  // --resume: this result comes from the journal of an earlier run of the same command, whose
  // identity and this case's source (plugin or model files) were unchanged.
  bool resumed = false;
  Recommendation recommendation = Recommendation::None;
  std::string reason;  // the recommendation in words
  // The target run's memory; absent for a case that never reached the target (or an older report).
  std::optional<MemoryFigures> memory;
  // A finding made on a device of a tier other than native ("paravirtual", "constrained"): it says
  // more about that device than about the hardware (core/device_tier.hpp). Empty otherwise.
  std::string tier;
  // The device probe's record only: the target device's own name (Metal's on MPS).
  std::string device_name;
};

void to_json(nlohmann::json& j, const OutputReport& o);
void from_json(const nlohmann::json& j, OutputReport& o);
void to_json(nlohmann::json& j, const TimingStats& t);
void from_json(const nlohmann::json& j, TimingStats& t);
void to_json(nlohmann::json& j, const MemoryFigures& m);
void from_json(const nlohmann::json& j, MemoryFigures& m);
void to_json(nlohmann::json& j, const CaseResult& r);
void from_json(const nlohmann::json& j, CaseResult& r);

}  // namespace mpscheck

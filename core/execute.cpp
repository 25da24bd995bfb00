#include "core/execute.hpp"

#include "core/case_steps.hpp"

#include "checks/errors.hpp"
#include "core/device_memory.hpp"
#include "core/environment.hpp"
#include "core/op_replay.hpp"
#include "core/reference_cache.hpp"
#include "core/torchscript_workload.hpp"

#include <mpscheck/dtype_names.hpp>

#include <ATen/Parallel.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mpscheck {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

c10::ScalarType target_dtype_for(const Workload& w, const TargetSpec& target) {
  return w.dtype() != c10::kFloat ? w.dtype() : target.float_dtype();
}

void identify(CaseResult& r, const RegisteredWorkload& rw, const TargetSpec& target) {
  const Workload& w = *rw.workload;
  if (r.id.empty()) r.id = w.id();
  r.kind = case_kind(w.kind());
  if (r.tags.empty()) r.tags = w.tags();
  if (r.plugin.empty() && rw.plugin) r.plugin = rw.plugin->name;
  if (r.target.empty()) r.target = target.str();
  // The dtype the case computes in on this target: a crash or a timeout, whose worker never
  // reached the judge, still says which dtype it died in.
  if (r.dtype.empty()) r.dtype = dtype_name(target_dtype_for(w, target));
}

namespace {
CaseResult execute_case_inner(const RegisteredWorkload& rw, const ExecuteOptions& options, WarningRecorder& warnings,
                              const CaseResult& identified);
}

CaseResult execute_case(const RegisteredWorkload& rw, const ExecuteOptions& options) {
  const auto start = Clock::now();
  CaseResult r;
  identify(r, rw, options.target);  // what the case is, known before anything runs
  WarningRecorder warnings;
  begin_phases(&options);
  try {
    r = execute_case_inner(rw, options, warnings, r);
  } catch (...) {
    // Nothing a case does may take the worker down: whatever escaped is this case's error.
    r.status = Status::Error;
    r.message = "mpscheck failed while checking this case: " + exception_text(std::current_exception());
    r.phase = current_phase();
  }
  r.warnings = warnings.all();
  // The model's own calls, each alone (core/op_replay.hpp): after the network's verdict, each call a
  // case of its own with its own phases and warnings.
  if (wants_op_replay(*rw.workload, r, options)) replay_model_ops(rw, options, r);
  begin_phases(nullptr);
  r.worker_s = seconds_since(start);
  return r;
}

namespace {

std::optional<CacheKey> cache_key(const RegisteredWorkload& rw, const ExecuteOptions& options) {
  if (!options.cache) return std::nullopt;
  static const std::string torch = current_torch_identity();
  static const std::string cpu = cpu_model_name();
  CacheKey k;
  k.torch = torch;
  k.cpu = cpu;
  k.threads = options.verdict_threads > 0 ? options.verdict_threads : at::get_num_threads();
  k.timing_threads = options.timing_threads > 0 ? options.timing_threads : at::get_num_threads();
  k.seed = options.setup.seed;
  k.quick = options.setup.quick;
  if (rw.plugin) k.plugin = rw.plugin->name, k.plugin_version = rw.plugin->version;
  // The model file's digest, inputs and mode; else the plugin file's digest (a plugin rebuilt
  // without a new version string computes other references). Built-in cases have no file.
  k.source = case_source(rw);
  k.case_id = rw.workload->id();
  return k;
}

// The verdict on a case whose CPU float32 reference raised `msg`. Only a clear "the CPU lacks
// this" (an unsupported-looking message that names the CPU) skips the case; anything else is a bug
// in the case or in mpscheck, and a skip would silently remove the case from every report.
void reference_failed(const Workload& w, const std::string& msg, CaseResult& r) {
  r.phase = "reference";
  std::string lower = msg;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (classify_exception(msg) == Status::Unsupported && lower.find("cpu") != std::string::npos) {
    r.status = Status::Skip;
    r.message = "the CPU float32 reference cannot run this case: " + msg;
  } else if (is_torchscript(w)) {
    // The user's model raised: its own error, with its cause, not a fault of the inputs' shape.
    r.status = Status::Error;
    r.message = "the model raised on the CPU float32 reference (its own error, not the target's): " + msg;
  } else {
    r.status = Status::Error;
    r.message = "the CPU float32 reference failed (a bug in the case or in mpscheck, not the target): " + msg;
  }
}

// The host of checks/ (checks/case_host.hpp): the case's other runs, in this worker, with what
// they measure once per reference (the gold run, the rerun, the reference time) kept with the
// cached reference. Until the reference has run there is none, and checks/ asks for nothing.
class WorkerCaseHost final : public CaseHost {
 public:
  WorkerCaseHost(const Workload& w, const ExecuteOptions& options, WarningRecorder& warnings,
                 std::optional<CachedReference>& cached, bool& cache_dirty)
      : w_(w), options_(options), warnings_(warnings), cached_(cached), cache_dirty_(cache_dirty) {}
  void enter_phase(const char* phase) override {
    mpscheck::enter_phase(phase);
    // The float64 phase runs the gold and the witnesses; localisation traces every side, each
    // trace's warnings told as the reference's. While timing, nothing is recorded.
    if (std::string(phase) == "float64")
      warnings_.set_side(Side::Gold);
    else if (std::string(phase) == "localisation" || std::string(phase) == "reference")
      warnings_.set_side(Side::Reference);
    else if (std::string(phase) == "timing")
      warnings_.pause();
    else if (std::string(phase) == "target")  // a later call of the target (checks/later_call.hpp)
      warnings_.set_side(Side::Target);
  }
  std::string current_phase() override { return mpscheck::current_phase(); }
  Outputs run(const Placement& where, const char* what) override { return owned(instantiate(where)->run(), what); }
  Outputs trace(const Placement& where) override { return instantiate(where)->trace_layers(); }
  std::map<std::string, at::Tensor> gold() override {
    if (cached_->gold.empty()) {
      cached_->gold = by_name(run(Placement{c10::Device(c10::kCPU), c10::kDouble, Side::Gold}, "gold"));
      cache_dirty_ = true;
    }
    return cached_->gold;
  }
  std::vector<std::string> target_warnings() override { return warnings_.target(); }
  const ReferenceRerun* kept_rerun() override { return cached_->determinism_checked ? &cached_->rerun : nullptr; }
  void keep_rerun(const ReferenceRerun& rerun) override {
    cached_->rerun = rerun;
    cached_->determinism_checked = true;
    cache_dirty_ = true;
  }
  std::unique_ptr<Instance> instantiate(const Placement& where) override {
    return w_.instantiate(options_.setup, where);
  }
  void synchronize(const c10::Device& device) override { mpscheck::synchronize(device); }
  const TimingStats* kept_reference_time(double budget_s) override {
    return cached_->reference_time && cached_->reference_time_budget == budget_s ? &*cached_->reference_time : nullptr;
  }
  void keep_reference_time(const TimingStats& time, double budget_s) override {
    cached_->reference_time = time;
    cached_->reference_time_budget = budget_s;
    cache_dirty_ = true;
  }

 private:
  const Workload& w_;
  const ExecuteOptions& options_;
  WarningRecorder& warnings_;
  std::optional<CachedReference>& cached_;
  bool& cache_dirty_;
};

// Both sides of the case, each run once: the CPU float32 reference (its cached outputs when there
// are some) and its determinism rerun, then the target computing in `dtype` on `device`. False when
// a side could not run; r then says why.
bool run_sides(const Workload& w, const ExecuteOptions& options, c10::Device device, c10::ScalarType dtype,
               WarningRecorder& warnings, std::optional<CachedReference>& cached, bool& cache_dirty, CaseHost& host,
               CaseSides& sides, CaseResult& r) {
  // Reference: CPU float32, the cached one when there is one.
  if (cached) {
    sides.reference = cached->outputs;
    r.reference_cached = true;
  } else {
    enter_phase("reference");
    warnings.set_side(Side::Reference);
    try {
      sides.reference_instance =
          w.instantiate(options.setup, Placement{c10::Device(c10::kCPU), c10::kFloat, Side::Reference});
      sides.reference = owned(sides.reference_instance->run(), "reference");
    } catch (...) {
      reference_failed(w, exception_text(std::current_exception()), r);
      return false;
    }
    cached.emplace();
    cached->outputs = sides.reference;
    cache_dirty = true;
  }
  // The second reference instance now, before the target runs (checks/judge.hpp rerun_reference).
  rerun_reference(w, host, sides.reference);

  // Target.
  enter_phase("target");
  warnings.set_side(Side::Target);
  MemoryWatch memory(device);
  try {
    sides.target_instance = w.instantiate(options.setup, Placement{device, dtype, Side::Target});
    sides.target = owned(sides.target_instance->run(), "target");
    synchronize(device);
  } catch (...) {
    r.message = exception_text(std::current_exception());
    r.status = classify_exception(r.message);
    r.phase = "target";
    r.memory = memory.figures();
    return false;
  }
  r.memory = memory.figures();
  return true;
}

// The case from the reference cache (when an entry with this exact key is there) through its two
// sides and checks/ (the verdict, the times, the memory finding) to the cache again, written once,
// when the case measured something the entry lacked.
CaseResult execute_case_inner(const RegisteredWorkload& rw, const ExecuteOptions& options, WarningRecorder& warnings,
                              const CaseResult& identified) {
  const std::optional<CacheKey> key = cache_key(rw, options);
  std::optional<CachedReference> cached;
  if (key) cached = options.cache->load(*key);
  bool cache_dirty = false;
  CaseResult r = identified;
  const Workload& w = *rw.workload;
  const c10::Device device = to_device(options.target);
  const c10::ScalarType dtype = target_dtype_for(w, options.target);
  CaseSides sides;
  WorkerCaseHost host(w, options, warnings, cached, cache_dirty);
  const bool ran = run_sides(w, options, device, dtype, warnings, cached, cache_dirty, host, sides, r);
  check_case(w, host, ran ? &sides : nullptr, device, dtype,
             TimingPlan{options.min_time_s, options.reuse_reference_times}, r);
  if (key && cache_dirty) options.cache->store(*key, *cached);
  return r;
}

}  // namespace

}  // namespace mpscheck

#include "core/execute.hpp"

#include <mpscheck/dtype_names.hpp>

#include "core/case_steps.hpp"

#include "checks/compare.hpp"
#include "checks/errors.hpp"
#include "checks/memory.hpp"
#include "checks/tolerance.hpp"
#include "checks/verdict.hpp"
#include "core/device_memory.hpp"
#include "core/environment.hpp"
#include "core/reference_cache.hpp"
#include "core/timed_rounds.hpp"
#include "core/torchscript_workload.hpp"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>

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
  begin_phases(nullptr);
  r.warnings = warnings.all();
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
  k.threads = at::get_num_threads();
  k.seed = options.setup.seed;
  k.quick = options.setup.quick;
  if (rw.plugin) k.plugin = rw.plugin->name, k.plugin_version = rw.plugin->version;
  // The model file's digest, inputs and mode; else the plugin file's digest (a plugin rebuilt
  // without a new version string computes other references). Built-in cases have no file.
  k.source = torchscript_identity(*rw.workload);
  std::error_code ec;
  if (k.source.empty() && rw.plugin && std::filesystem::is_regular_file(rw.plugin->path, ec))
    k.source = file_digest(rw.plugin->path);
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

// The judge's host (checks/judge.hpp): the case's other runs, in this worker, with the gold run
// kept with the cached reference.
class WorkerCaseHost final : public CaseHost {
 public:
  WorkerCaseHost(const Workload& w, const ExecuteOptions& options, WarningRecorder& warnings, CachedReference& cached,
                 bool& cache_dirty)
      : w_(w), options_(options), warnings_(warnings), cached_(cached), cache_dirty_(cache_dirty) {}
  void enter_phase(const char* phase) override {
    mpscheck::enter_phase(phase);
    // The float64 phase runs the gold and the witnesses; localisation traces every side, each
    // trace's warnings told as the reference's.
    if (std::string(phase) == "float64")
      warnings_.set_side(Side::Gold);
    else if (std::string(phase) == "localisation" || std::string(phase) == "reference")
      warnings_.set_side(Side::Reference);
  }
  Outputs run(const Placement& where, const char* what) override {
    return owned(w_.instantiate(options_.setup, where)->run(), what);
  }
  Outputs trace(const Placement& where) override { return w_.instantiate(options_.setup, where)->trace_layers(); }
  std::map<std::string, at::Tensor> gold() override {
    if (cached_.gold.empty()) {
      cached_.gold = by_name(run(Placement{c10::Device(c10::kCPU), c10::kDouble, Side::Gold}, "gold"));
      cache_dirty_ = true;
    }
    return cached_.gold;
  }
  std::vector<std::string> target_warnings() override { return warnings_.target(); }
  const std::map<std::string, double>* kept_spreads() override {
    return cached_.determinism_checked ? &cached_.spreads : nullptr;
  }
  void keep_spreads(const std::map<std::string, double>& spreads) override {
    cached_.spreads = spreads;
    cached_.determinism_checked = true;
    cache_dirty_ = true;
  }

 private:
  const Workload& w_;
  const ExecuteOptions& options_;
  WarningRecorder& warnings_;
  CachedReference& cached_;
  bool& cache_dirty_;
};

// Both sides have run: the reference's determinism (once per cached reference), then the
// judgement. What fails here is mpscheck's, not the target's.
void compare_sides(const Workload& w, const ExecuteOptions& options, const Outputs& ref_out, const Outputs& tgt_out,
                   c10::Device device, c10::ScalarType dtype, const Tolerance& tol, WarningRecorder& warnings,
                   CachedReference& cached, bool& cache_dirty, CaseResult& r) {
  try {
    WorkerCaseHost host(w, options, warnings, cached, cache_dirty);
    judge_sides(w, host, ref_out, tgt_out, device, dtype, tol, r);
  } catch (...) {
    // Comparison, gold and localisation run after the target: their failure is not the target's.
    r.status = Status::Error;
    r.phase = current_phase();
    r.message = fmt::format("mpscheck failed in its own {} phase, after the target ran (not the target's failure): {}",
                            current_phase(), exception_text(std::current_exception()));
  }
}

// Both sides run, judged and, when right, timed: everything of a case between loading its cached
// reference and keeping what it measured. Returns early when a side cannot run; the memory figures
// are judged after it returns.
void run_sides(const Workload& w, const ExecuteOptions& options, WarningRecorder& warnings,
               std::optional<CachedReference>& cached, bool& cache_dirty, CaseResult& r) {
  const c10::ScalarType dtype = target_dtype_for(w, options.target);
  const Tolerance tol = tolerance_for(w.family(), dtype);
  r.rtol = tol.rtol;
  r.atol = tol.atol;
  r.dtype = dtype_name(dtype);
  const auto make_reference = [&] {
    return w.instantiate(options.setup, Placement{c10::Device(c10::kCPU), c10::kFloat, Side::Reference});
  };

  // Reference: CPU float32, the cached one when there is one.
  std::unique_ptr<Instance> ref;
  Outputs ref_out;
  if (cached) {
    ref_out = cached->outputs;
    r.reference_cached = true;
  } else {
    enter_phase("reference");
    warnings.set_side(Side::Reference);
    try {
      ref = make_reference();
      ref_out = owned(ref->run(), "reference");
    } catch (...) {
      reference_failed(w, exception_text(std::current_exception()), r);
      return;
    }
    cached.emplace();
    cached->outputs = ref_out;
    cache_dirty = true;
  }

  // Target.
  enter_phase("target");
  const c10::Device device = to_device(options.target);
  std::unique_ptr<Instance> tgt;
  Outputs tgt_out;
  warnings.set_side(Side::Target);
  MemoryWatch memory(device);
  try {
    tgt = w.instantiate(options.setup, Placement{device, dtype, Side::Target});
    tgt_out = owned(tgt->run(), "target");
    synchronize(device);
  } catch (...) {
    r.message = exception_text(std::current_exception());
    r.status = classify_exception(r.message);
    r.phase = "target";
    r.memory = memory.figures();
    return;
  }
  r.memory = memory.figures();

  const auto compare_start = Clock::now();
  compare_sides(w, options, ref_out, tgt_out, device, dtype, tol, warnings, *cached, cache_dirty, r);
  r.compare_s = seconds_since(compare_start);
  warnings.pause();

  // Time only cases whose results are right: the speed of a wrong answer means nothing.
  r.timed = options.min_time_s > 0;
  if (r.status == Status::Pass && r.timed) {
    enter_phase("timing");
    try {
      time_case(w, options, device, dtype, *tgt, ref, make_reference, *cached, cache_dirty, r);
    } catch (...) {
      r.status = Status::Error;
      r.phase = "timing";
      r.message = "mpscheck failed while timing (not a verdict on the target's results): " +
                  exception_text(std::current_exception());
    }
  }
}

// The case from the reference cache (when an entry with this exact key is there) through run_sides
// to the cache again, written once, when the case measured something the entry lacked.
CaseResult execute_case_inner(const RegisteredWorkload& rw, const ExecuteOptions& options, WarningRecorder& warnings,
                              const CaseResult& identified) {
  const std::optional<CacheKey> key = cache_key(rw, options);
  std::optional<CachedReference> cached;
  if (key) cached = options.cache->load(*key);
  bool cache_dirty = false;
  CaseResult r = identified;
  run_sides(*rw.workload, options, warnings, cached, cache_dirty, r);
  judge_memory(r);  // the device's memory figures, whichever way the sides ended
  if (key && cache_dirty) options.cache->store(*key, *cached);
  return r;
}

}  // namespace

}  // namespace mpscheck

#include "core/execute.hpp"

#include "checks/compare.hpp"
#include "checks/tolerance.hpp"
#include "checks/verdict.hpp"
#include "core/environment.hpp"
#include "core/reference_cache.hpp"
#include "core/timed_rounds.hpp"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <optional>

namespace mpscheck {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string exception_text(std::exception_ptr p) {
  try {
    std::rethrow_exception(p);
  } catch (const c10::Error& e) {
    return tidy_exception_message(e.what_without_backtrace());
  } catch (const std::exception& e) {
    return tidy_exception_message(e.what());
  } catch (...) {
    return "unknown exception (not derived from std::exception)";
  }
}

std::map<std::string, at::Tensor> by_name(const Outputs& outs) {
  std::map<std::string, at::Tensor> m;
  for (const auto& o : outs) m[o.name] = o.value;
  return m;
}

std::map<std::string, const Output*> outputs_by_name(const Outputs& outs) {
  std::map<std::string, const Output*> m;
  for (const auto& o : outs) m[o.name] = &o;
  return m;
}

// Records every LibTorch warning raised while a case runs, with the side it came from. Kernels
// may warn from intra-op threads, hence the lock. TORCH_WARN_ONCE warnings (the MPS fallback's
// among them) would fire once per worker process; c10's warn-always flag makes them fire in every
// case, so a fallback is seen in each case it happens in, not only in the first.
class WarningRecorder final : public c10::WarningHandler {
 public:
  WarningRecorder() : guard_(this) { always_.emplace(true); }
  void process(const c10::Warning& warning) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (paused_) return;
    std::string text = tidy_exception_message(warning.msg());
    if (side_ == Side::Target && std::find(target_.begin(), target_.end(), text) == target_.end() &&
        target_.size() < kMax)
      target_.push_back(text);
    std::string tagged = std::string(side_name()) + ": " + text;
    if (std::find(tagged_.begin(), tagged_.end(), tagged) == tagged_.end() && tagged_.size() < kMax)
      tagged_.push_back(std::move(tagged));
  }
  void set_side(Side s) {
    std::lock_guard<std::mutex> lock(mutex_);
    side_ = s;
  }
  // While timing: warn-once warnings fire once again, and nothing is recorded.
  void pause() {
    std::lock_guard<std::mutex> lock(mutex_);
    paused_ = true;
    always_.reset();
  }
  std::vector<std::string> target() {
    std::lock_guard<std::mutex> lock(mutex_);
    return target_;
  }
  std::vector<std::string> all() {
    std::lock_guard<std::mutex> lock(mutex_);
    return tagged_;
  }

 private:
  static constexpr size_t kMax = 20;
  const char* side_name() const {
    switch (side_) {
      case Side::Target: return "target";
      case Side::Gold: return "float64 gold";
      default: return "reference";
    }
  }
  c10::WarningUtils::WarningHandlerGuard guard_;
  std::optional<c10::WarningUtils::WarnAlways> always_;
  std::mutex mutex_;
  bool paused_ = false;
  Side side_ = Side::Reference;
  std::vector<std::string> target_, tagged_;
};

// Runs the CPU float64 gold and decides, for every failing output, whether the target or float32
// itself is the fragile side (checks/verdict.hpp). Turns the verdict into pass when float32 is.
void attribute(const Workload& w, const ExecuteOptions& options, const Outputs& ref_out,
               const std::map<std::string, at::Tensor>& target_by_name, c10::ScalarType dtype,
               const std::map<std::string, Tolerance>& tols, CaseResult& r, Verdict& v, WarningRecorder& warnings,
               CachedReference& cached, bool& cache_dirty) {
  std::map<std::string, at::Tensor> gold = cached.gold;
  warnings.set_side(Side::Gold);
  try {
    if (gold.empty()) {
      gold = by_name(w.instantiate(options.setup, Placement{c10::Device(c10::kCPU), c10::kDouble, Side::Gold})->run());
      cached.gold = gold;
      cache_dirty = true;
    }
  } catch (...) {
    v.message += "; no float64 gold run to attribute it (" + exception_text(std::current_exception()) + ")";
    r.attribution = "target";
    return;
  }
  std::map<std::string, at::Tensor> ref_by_name = by_name(ref_out);
  // For reduced precision: the same case from inputs and weights rounded to that dtype.
  std::map<std::string, at::Tensor> rounded;
  if (dtype == c10::kHalf || dtype == c10::kBFloat16) {
    try {
      Placement p{c10::Device(c10::kCPU), c10::kFloat, Side::Reference};
      p.round_inputs_to = dtype;
      rounded = by_name(w.instantiate(options.setup, p)->run());
    } catch (...) {
    }
  }
  std::vector<OutputAttribution> failing;
  for (auto& o : r.outputs) {
    if (o.ok) continue;
    OutputAttribution f{&o, {}};
    auto g = gold.find(o.name);
    auto t = target_by_name.find(o.name);
    // Exact, index, statistics and dtype findings are contracts float64 cannot excuse. An exact
    // (integer/bool) output of a float16/bfloat16 target may only equal, exactly, what float32
    // gives from inputs rounded to that dtype: a comparison of two values that round to the same.
    const bool by_value = o.rule.empty() && o.note.rfind("dtype differs", 0) != 0;
    auto rd = rounded.find(o.name);
    if (o.rule == "exact" && rd != rounded.end() && t != target_by_name.end() &&
        compare_tensors(o.name, rd->second, t->second, Tolerance{0, 0}).ok) {
      f.attribution.target_ok = true;  // no figures: nothing to take an RMSE of
      o.note = "equal to the float32 result from inputs rounded to " + std::string(c10::toString(dtype));
    } else if (by_value && g != gold.end() && t != target_by_name.end()) {
      f.attribution = attribute_with_gold(g->second, ref_by_name[o.name], t->second, dtype, tols.at(o.name),
                                          rd == rounded.end() ? at::Tensor() : rd->second);
    }
    failing.push_back(f);
  }
  decide_attribution(failing, v, r.attribution);
}

// Names the first traced layer whose output diverges between reference and target (judged like
// the case itself: plain tolerance, then float64 attribution), so a report points at an op.
void localise(const Workload& w, const ExecuteOptions& options, c10::Device device, c10::ScalarType dtype,
              const Tolerance& tol, CaseResult& r) {
  Outputs ref_layers, tgt_layers, gold_layers;
  try {
    ref_layers = w.instantiate(options.setup, Placement{c10::Device(c10::kCPU), c10::kFloat, Side::Reference})->trace_layers();
    if (ref_layers.empty()) return;
    tgt_layers = w.instantiate(options.setup, Placement{device, dtype, Side::Target})->trace_layers();
  } catch (...) {
    r.message += "; layer tracing failed (" + exception_text(std::current_exception()) + ")";
    return;
  }
  const auto target_by_name = by_name(tgt_layers);
  for (const auto& layer : ref_layers) {
    auto t = target_by_name.find(layer.name);
    if (t == target_by_name.end()) continue;
    OutputReport rep = compare_tensors(layer.name, layer.value, t->second, tol, dtype);
    if (rep.ok) continue;
    Attribution a;
    if (w.has_gold()) {
      if (gold_layers.empty()) {
        try {
          gold_layers = w.instantiate(options.setup, Placement{c10::Device(c10::kCPU), c10::kDouble, Side::Gold})->trace_layers();
        } catch (...) {
        }
      }
      const auto gold_by_name = by_name(gold_layers);
      if (auto g = gold_by_name.find(layer.name); g != gold_by_name.end() && rep.rule.empty()) {
        a = attribute_with_gold(g->second, layer.value, t->second, dtype, tol);
        if (a.measured) rep.rmse_reference = a.rmse_reference, rep.rmse_target = a.rmse_target;
      }
    }
    if (!layer_diverges(rep, &a)) continue;  // float32 itself is what differs here
    r.first_diverging_layer = layer.name;
    r.message += fmt::format("; first diverging layer: {} ({} of {} elements, max abs error {:.3g})", layer.name,
                             rep.mismatches, rep.numel, rep.max_abs);
    r.layer = std::move(rep);
    return;
  }
  r.message += "; every traced layer agrees in the first pass from the initial weights (forward, and backward for "
               "training): the divergence builds up over training steps (the optimizer, or error that compounds)";
}

}  // namespace

c10::ScalarType target_dtype_for(const Workload& w, const TargetSpec& target) {
  return w.dtype() != c10::kFloat ? w.dtype() : target.float_dtype();
}

void identify(CaseResult& r, const RegisteredWorkload& rw, const TargetSpec& target) {
  const Workload& w = *rw.workload;
  if (r.id.empty()) r.id = w.id();
  r.kind = w.kind();
  if (r.tags.empty()) r.tags = w.tags();
  if (r.plugin.empty() && rw.plugin) r.plugin = rw.plugin->name;
  if (r.target.empty()) r.target = target.str();
}

namespace {
CaseResult execute_case_inner(const RegisteredWorkload& rw, const ExecuteOptions& options, WarningRecorder& warnings);
}

CaseResult execute_case(const RegisteredWorkload& rw, const ExecuteOptions& options) {
  const auto start = Clock::now();
  CaseResult r;
  WarningRecorder warnings;
  try {
    r = execute_case_inner(rw, options, warnings);
  } catch (...) {
    // Nothing a case does may take the worker down: whatever escaped is this case's error.
    r.status = Status::Error;
    r.message = "mpscheck failed while checking this case: " + exception_text(std::current_exception());
  }
  identify(r, rw, options.target);
  r.warnings = warnings.all();
  r.worker_s = seconds_since(start);
  return r;
}

namespace {

// Compares every reference output with the target output of the same name, each by its own rule
// (checks/compare.hpp), then attributes, applies fallback warnings and localises. May throw: the
// caller turns that into an `error`.
void judge_case(const Workload& w, const ExecuteOptions& options, const Outputs& ref_out, const Outputs& tgt_out,
                c10::Device device, c10::ScalarType dtype, const Tolerance& tol, WarningRecorder& warnings,
                CachedReference& cached, bool& cache_dirty, CaseResult& r) {
  // Determinism: a reference that differs from itself must not be blamed on the target. Only the
  // output that differed is widened, by its own spread.
  std::map<std::string, Tolerance> tols;
  for (const auto& o : ref_out) tols[o.name] = tol;
  for (const auto& [name, spread] : cached.spreads) {
    if (!tols.count(name)) continue;
    r.nondeterministic = true;
    tols[name] = widened_for_spread(tol, spread);
    r.atol = std::max(r.atol, tols[name].atol);
  }

  const auto target_outputs = outputs_by_name(tgt_out);
  auto target_by_name = by_name(tgt_out);
  const double unit = 2 * unit_roundoff(dtype);
  for (const auto& o : ref_out) {
    auto it = target_outputs.find(o.name);
    const Output* t = it == target_outputs.end() ? nullptr : it->second;
    const at::Tensor tv = t ? t->value : at::Tensor();
    OutputReport rep;
    if (o.standard_error.defined())
      rep = compare_statistics(o.name, o.value, tv, o.standard_error, t ? t->standard_error : at::Tensor(),
                               kStatisticSigmas, unit);
    else if (t && t->indexes_into.defined())
      rep = compare_index(o.name, o.value, tv, t->indexes_into, t->index_dim, t->index_flat);
    else {
      // Reduced precision: the plain tolerance's atol is a few rounding units of this output's own
      // scale, and a signed bias the elements hide is screened for and sent to float64.
      const bool reduced = dtype == c10::kHalf || dtype == c10::kBFloat16;
      if (reduced)
        tols[o.name] = scaled_to_output(tols[o.name], dtype, finite_rms(o.value), w.family(), o.name);
      rep = compare_tensors(o.name, o.value, tv, tols[o.name], dtype);
      if (reduced && rep.ok && !tols[o.name].trajectory && tv.defined() && tv.is_floating_point() &&
          o.value.is_floating_point()) {
        const SignedBias b = signed_bias(o.value, tv);
        if (std::abs(b.mean) > kBiasScreenUnits * unit_roundoff(dtype)) {
          rep.ok = false;
          rep.note = fmt::format("the target is {:.2g}% too {} on average against the float32 reference "
                                 "(standard error {:.2g}%), more than rounding in {} should give",
                                 100 * std::abs(b.mean), b.mean > 0 ? "large" : "small", 100 * b.se,
                                 dtype == c10::kHalf ? "float16" : "bfloat16");
        }
      }
    }
    if (!t) rep.note = "the target did not produce this output";
    r.outputs.push_back(std::move(rep));
  }
  Verdict v = judge_outputs(r.outputs);
  if ((v.status == Status::Mismatch || v.status == Status::Nan) && w.has_gold())
    attribute(w, options, ref_out, target_by_name, dtype, tols, r, v, warnings, cached, cache_dirty);
  apply_fallback(warnings.target(), v);
  r.status = v.status;
  r.message = v.message;
  if (r.nondeterministic)
    r.message += std::string(r.message.empty() ? "" : "; ") +
                 "the CPU reference differs from itself between runs: that output's tolerance widened to twice its spread";
  if (w.kind() == Kind::Model && (r.status == Status::Mismatch || r.status == Status::Nan)) {
    warnings.set_side(Side::Reference);
    localise(w, options, device, dtype, tol, r);
  }
}

// The spread of every output that differs between two runs of the reference (empty for random
// workloads, which are compared by statistics). A re-run that throws measures nothing.
std::map<std::string, double> reference_spreads(const Workload& w, Instance& ref, const Outputs& ref_out,
                                                WarningRecorder& warnings) {
  std::map<std::string, double> spreads;
  if (w.is_random()) return spreads;
  warnings.set_side(Side::Reference);
  try {
    const auto again = by_name(ref.run());
    for (const auto& o : ref_out) {
      auto it = again.find(o.name);
      if (it == again.end() || !o.value.defined() || !it->second.defined()) continue;
      const OutputReport d = compare_tensors(o.name, o.value, it->second, Tolerance{0, 0});
      if (!d.ok) spreads[o.name] = std::isfinite(d.max_abs) ? d.max_abs : 0.0;
    }
  } catch (...) {
  }
  return spreads;
}

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
  k.case_id = rw.workload->id();
  return k;
}

CaseResult execute_case_inner(const RegisteredWorkload& rw, const ExecuteOptions& options, WarningRecorder& warnings) {
  const Workload& w = *rw.workload;
  CaseResult r;
  identify(r, rw, options.target);
  const c10::ScalarType dtype = target_dtype_for(w, options.target);
  r.dtype = c10::toString(dtype);
  const Tolerance tol = tolerance_for(w.family(), dtype);
  r.rtol = tol.rtol;
  r.atol = tol.atol;
  const auto make_reference = [&] {
    return w.instantiate(options.setup, Placement{c10::Device(c10::kCPU), c10::kFloat, Side::Reference});
  };

  // Reference: CPU float32, from the cache when an entry with this exact key is there.
  const std::optional<CacheKey> key = cache_key(rw, options);
  std::optional<CachedReference> cached;
  if (key) cached = options.cache->load(*key);
  bool cache_dirty = false;
  std::unique_ptr<Instance> ref;
  Outputs ref_out;
  if (cached) {
    ref_out = cached->outputs;
    r.reference_cached = true;
  } else {
    warnings.set_side(Side::Reference);
    try {
      ref = make_reference();
      ref_out = ref->run();
    } catch (...) {
      const std::string msg = exception_text(std::current_exception());
      if (classify_exception(msg) == Status::Unsupported) {
        r.status = Status::Skip;
        r.message = "the CPU float32 reference cannot run this case: " + msg;
      } else {
        r.status = Status::Error;
        r.message = "the CPU float32 reference failed (a bug in the case, not the target): " + msg;
      }
      return r;
    }
    cached.emplace();
    cached->outputs = ref_out;
    cache_dirty = true;
  }

  // Target.
  const c10::Device device = to_device(options.target);
  std::unique_ptr<Instance> tgt;
  Outputs tgt_out;
  warnings.set_side(Side::Target);
  try {
    tgt = w.instantiate(options.setup, Placement{device, dtype, Side::Target});
    tgt_out = tgt->run();
    synchronize(device);
  } catch (...) {
    r.message = exception_text(std::current_exception());
    r.status = classify_exception(r.message);
    if (key && cache_dirty) options.cache->store(*key, *cached);
    return r;
  }

  const auto compare_start = Clock::now();
  try {
    if (!cached->determinism_checked) {
      if (!ref) ref = make_reference();
      cached->spreads = reference_spreads(w, *ref, ref_out, warnings);
      cached->determinism_checked = true;
      cache_dirty = true;
    }
    judge_case(w, options, ref_out, tgt_out, device, dtype, tol, warnings, *cached, cache_dirty, r);
  } catch (...) {
    // Comparison, gold and localisation run after the target: their failure is not the target's.
    r.status = Status::Error;
    r.message = "mpscheck failed while comparing the results: " + exception_text(std::current_exception());
  }
  r.compare_s = seconds_since(compare_start);
  warnings.pause();

  // Time only cases whose results are right: the speed of a wrong answer means nothing.
  r.timed = options.min_time_s > 0;
  if (r.status == Status::Pass && r.timed) {
    try {
      time_case(w, options, device, dtype, *tgt, ref, make_reference, *cached, cache_dirty, r);
    } catch (...) {
      r.status = Status::Error;
      r.message = "failed while timing: " + exception_text(std::current_exception());
    }
  }
  if (key && cache_dirty) options.cache->store(*key, *cached);
  return r;
}

}  // namespace

}  // namespace mpscheck

#include "core/execute.hpp"

#include "checks/compare.hpp"
#include "checks/timing.hpp"
#include "checks/tolerance.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <map>

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

// Times `iterate()` of both instances in interleaved blocks so drift hits both sides alike.
struct TimedSide {
  Instance* instance;
  c10::Device device;
  std::vector<double> samples;
  double total = 0;
  int block = 1;
};

double time_block(TimedSide& s, int n) {
  synchronize(s.device);
  const auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) s.instance->iterate();
  synchronize(s.device);
  return seconds_since(t0);
}

void measure(TimedSide& ref, TimedSide& tgt, double budget) {
  // Warm-up (not counted), then a block size that makes one sample about budget/10.
  for (TimedSide* s : {&ref, &tgt}) {
    time_block(*s, 1);
    const double once = std::max(time_block(*s, 1), 1e-7);
    s->block = static_cast<int>(std::clamp(std::ceil(budget / 10 / once), 1.0, 100000.0));
  }
  constexpr int kMinSamples = 5, kMaxSamples = 200;
  for (int round = 0; round < kMaxSamples; ++round) {
    // Alternate which side goes first, so neither side always inherits the other's warm caches.
    TimedSide* const order[2] = {round % 2 ? &tgt : &ref, round % 2 ? &ref : &tgt};
    for (TimedSide* s : order) {
      const double t = time_block(*s, s->block);
      s->samples.push_back(t / s->block);
      s->total += t;
    }
    const bool budget_met = ref.total >= budget && tgt.total >= budget;
    const int have = static_cast<int>(ref.samples.size());
    // Slow cases (one iteration beyond the budget) stop at three samples rather than five.
    if (budget_met && (have >= kMinSamples || (have >= 3 && ref.total + tgt.total > 10 * budget))) break;
  }
}

std::map<std::string, at::Tensor> by_name(const Outputs& outs) {
  std::map<std::string, at::Tensor> m;
  for (const auto& o : outs) m[o.name] = o.value;
  return m;
}

// Runs the CPU float64 gold and decides, for every failing output, whether the target or float32
// itself is the fragile side. Turns the verdict into pass when float32 is.
void attribute(const Workload& w, const ExecuteOptions& options, const Outputs& ref_out,
               const std::map<std::string, at::Tensor>& target_by_name, c10::ScalarType dtype, const Tolerance& tol,
               CaseResult& r, Verdict& v) {
  std::map<std::string, at::Tensor> gold;
  try {
    gold = by_name(w.instantiate(options.setup, Placement{c10::Device(c10::kCPU), c10::kDouble, Side::Gold})->run());
  } catch (...) {
    v.message += "; no float64 gold run to attribute it (" + exception_text(std::current_exception()) + ")";
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
  bool all_ok = true;
  // The figures quoted are those of the output the verdict names (a loss's non-finite step),
  // else of the first output the target fails on.
  const std::string named = v.message.substr(0, v.message.find(':'));
  const OutputReport* worst = nullptr;
  for (auto& o : r.outputs) {
    if (o.ok) continue;
    auto g = gold.find(o.name);
    auto t = target_by_name.find(o.name);
    if (g == gold.end() || t == target_by_name.end()) {
      all_ok = false;
      continue;
    }
    auto rd = rounded.find(o.name);
    const Attribution a = attribute_with_gold(g->second, ref_by_name[o.name], t->second, dtype, tol.atol,
                                              rd == rounded.end() ? at::Tensor() : rd->second);
    if (a.measured) o.rmse_reference = a.rmse_reference, o.rmse_target = a.rmse_target;
    if (!a.target_ok) {
      all_ok = false;
      if (a.measured && (!worst || (o.name == named && worst->name != named))) worst = &o;
    }
  }
  if (all_ok) {
    r.attribution = "float32";
    v.status = Status::Pass;
    v.message = "outside the plain tolerance, but as close to float64 as float32 itself is: float32 is the fragile side here";
    return;
  }
  r.attribution = "target";
  if (worst)
    v.message += fmt::format("; against float64 the target's RMSE is {:.3g}, float32's {:.3g}: the target is the fragile side",
                             worst->rmse_target, worst->rmse_reference);
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
    OutputReport rep = compare_tensors(layer.name, layer.value, t->second, tol);
    if (rep.ok) continue;
    if (w.has_gold()) {
      if (gold_layers.empty()) {
        try {
          gold_layers = w.instantiate(options.setup, Placement{c10::Device(c10::kCPU), c10::kDouble, Side::Gold})->trace_layers();
        } catch (...) {
        }
      }
      const auto gold_by_name = by_name(gold_layers);
      if (auto g = gold_by_name.find(layer.name); g != gold_by_name.end()) {
        const Attribution a = attribute_with_gold(g->second, layer.value, t->second, dtype, tol.atol);
        if (a.measured) rep.rmse_reference = a.rmse_reference, rep.rmse_target = a.rmse_target;
        if (a.target_ok) continue;  // float32 itself is what differs here
      }
    }
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

namespace {
CaseResult execute_case_inner(const RegisteredWorkload& rw, const ExecuteOptions& options);
}

CaseResult execute_case(const RegisteredWorkload& rw, const ExecuteOptions& options) {
  const auto start = Clock::now();
  CaseResult r = execute_case_inner(rw, options);
  r.worker_s = seconds_since(start);
  return r;
}

namespace {
CaseResult execute_case_inner(const RegisteredWorkload& rw, const ExecuteOptions& options) {
  const Workload& w = *rw.workload;
  CaseResult r;
  r.id = w.id();
  r.kind = w.kind() == Kind::Op ? "op" : "model";
  r.tags = w.tags();
  r.plugin = rw.plugin ? rw.plugin->name : "";
  r.target = options.target.str();
  const c10::ScalarType dtype = target_dtype_for(w, options.target);
  r.dtype = c10::toString(dtype);
  const Tolerance tol = tolerance_for(w.family(), dtype);
  r.rtol = tol.rtol;
  r.atol = tol.atol;

  // Reference: CPU float32.
  std::unique_ptr<Instance> ref;
  Outputs ref_out;
  try {
    ref = w.instantiate(options.setup, Placement{c10::Device(c10::kCPU), c10::kFloat, Side::Reference});
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

  // Target.
  const c10::Device device = to_device(options.target);
  std::unique_ptr<Instance> tgt;
  Outputs tgt_out;
  try {
    tgt = w.instantiate(options.setup, Placement{device, dtype, Side::Target});
    tgt_out = tgt->run();
    synchronize(device);
  } catch (...) {
    r.message = exception_text(std::current_exception());
    r.status = classify_exception(r.message);
    return r;
  }

  // Determinism: a reference that differs from itself must not be blamed on the target.
  Tolerance case_tol = tol;
  if (!w.is_random()) {
    try {
      const auto again = by_name(ref->run());
      double spread = 0;
      for (const auto& o : ref_out) {
        auto it = again.find(o.name);
        if (it == again.end() || !o.value.defined() || !it->second.defined()) continue;
        const OutputReport d = compare_tensors(o.name, o.value, it->second, Tolerance{0, 0});
        if (!d.ok) spread = std::max(spread, std::isfinite(d.max_abs) ? d.max_abs : 0.0);
      }
      if (spread > 0) {
        r.nondeterministic = true;
        case_tol.atol = std::max(case_tol.atol, 2 * spread);
        r.atol = case_tol.atol;
      }
    } catch (...) {
    }
  }

  // Compare every reference output with the target output of the same name.
  const auto compare_start = Clock::now();
  auto target_by_name = by_name(tgt_out);
  for (const auto& o : ref_out) {
    auto it = target_by_name.find(o.name);
    const at::Tensor t = it == target_by_name.end() ? at::Tensor() : it->second;
    OutputReport rep = compare_tensors(o.name, o.value, t, case_tol);
    if (it == target_by_name.end()) rep.note = "the target did not produce this output";
    r.outputs.push_back(std::move(rep));
  }
  Verdict v = judge_outputs(r.outputs);
  if ((v.status == Status::Mismatch || v.status == Status::Nan) && w.has_gold()) attribute(w, options, ref_out, target_by_name, dtype, case_tol, r, v);
  r.status = v.status;
  r.message = v.message;
  if (r.nondeterministic)
    r.message += std::string(r.message.empty() ? "" : "; ") +
                 "the CPU reference differs from itself between runs: tolerance widened to twice that spread";
  if (w.kind() == Kind::Model && (r.status == Status::Mismatch || r.status == Status::Nan))
    localise(w, options, device, dtype, case_tol, r);
  r.compare_s = seconds_since(compare_start);

  // Time only cases whose results are right: the speed of a wrong answer means nothing.
  if (r.status == Status::Pass && options.min_time_s > 0) {
    try {
      TimedSide ref_side{ref.get(), c10::Device(c10::kCPU), {}};
      TimedSide tgt_side{tgt.get(), device, {}};
      measure(ref_side, tgt_side, options.min_time_s);
      r.reference_time = summarize_times(ref_side.samples);
      r.target_time = summarize_times(tgt_side.samples);
      r.speedup = r.reference_time->median_s / r.target_time->median_s;
      r.speed_class = speed_class(*r.reference_time, *r.target_time);
    } catch (...) {
      r.status = Status::Error;
      r.message = "failed while timing: " + exception_text(std::current_exception());
    }
  }
  return r;
}

}  // namespace

}  // namespace mpscheck

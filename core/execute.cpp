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
    for (TimedSide* s : {&ref, &tgt}) {
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

}  // namespace

c10::ScalarType target_dtype_for(const Workload& w, const TargetSpec& target) {
  return w.dtype() != c10::kFloat ? w.dtype() : target.float_dtype();
}

CaseResult execute_case(const RegisteredWorkload& rw, const ExecuteOptions& options) {
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

  // Compare every reference output with the target output of the same name.
  auto target_by_name = by_name(tgt_out);
  for (const auto& o : ref_out) {
    auto it = target_by_name.find(o.name);
    const at::Tensor t = it == target_by_name.end() ? at::Tensor() : it->second;
    OutputReport rep = compare_tensors(o.name, o.value, t, tol);
    if (it == target_by_name.end()) rep.note = "the target did not produce this output";
    r.outputs.push_back(std::move(rep));
  }
  const Verdict v = judge_outputs(r.outputs);
  r.status = v.status;
  r.message = v.message;

  // Time only cases whose results are right: the speed of a wrong answer means nothing.
  if (r.status == Status::Pass && options.min_time_s > 0) {
    try {
      TimedSide ref_side{ref.get(), c10::Device(c10::kCPU)};
      TimedSide tgt_side{tgt.get(), device};
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

}  // namespace mpscheck

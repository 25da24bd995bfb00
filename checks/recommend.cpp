#include "checks/recommend.hpp"

#include "checks/memory.hpp"

#include <fmt/format.h>

namespace mpscheck {

void recommend(CaseResult& r) {
  if (r.status == Status::Skip) {
    r.recommendation = Recommendation::None;
    r.reason = "not checked: " + r.message;
    return;
  }
  if (r.status == Status::Fallback) {
    r.recommendation = Recommendation::KeepOnCpu;
    r.reason =
        "the target has no kernel for part of it: LibTorch ran that on the CPU, so there is no target result or time";
    return;
  }
  if (r.status == Status::Memory && r.memory && r.memory->growth_per_call >= 0) {
    r.recommendation = Recommendation::Blocked;
    r.reason = fmt::format(
        "memory grows by {} with every call and is never given back: a long run or a training loop runs out of "
        "memory whatever its batch size; keep this on CPU until it is fixed",
        bytes_text(r.memory->growth_per_call));
    return;
  }
  if (r.status == Status::Memory) {
    r.recommendation = Recommendation::ReduceMemory;
    r.reason =
        "it does not fit the target's recommended memory: run it with a smaller batch or size, or on a device "
        "with more memory; until then keep it on CPU";
    return;
  }
  if (is_finding(r.status) && r.attribution == Fragile::Dtype) {
    r.recommendation = Recommendation::Blocked;
    r.reason = fmt::format(
        "the target gives '{}' here, and so does the CPU's own {} run: keep this case in float32 (or mixed "
        "precision) on any device; moving it is not what breaks it",
        to_string(r.status), r.dtype);
    return;
  }
  if (is_finding(r.status)) {
    r.recommendation = Recommendation::Blocked;
    r.reason = fmt::format("the target gives '{}' here; keep this on CPU until it is fixed", to_string(r.status));
    return;
  }
  if (r.speed_class == SpeedClass::Faster) {
    r.recommendation = Recommendation::Accelerate;
    r.reason = fmt::format("correct and {:.2f}x faster on the target", r.speedup);
  } else if (r.speed_class == SpeedClass::Slower) {
    r.recommendation = Recommendation::KeepOnCpu;
    r.reason = fmt::format("correct but {:.2f}x slower on the target", r.speedup > 0 ? 1 / r.speedup : 0.0);
  } else if (r.speedup > 0) {
    r.recommendation = Recommendation::KeepOnCpu;
    r.reason = fmt::format("correct, but no measurable speed-up ({:.2f}x within the spread)", r.speedup);
  } else {
    r.recommendation = Recommendation::KeepOnCpu;
    r.reason = "correct; not timed (--min-time 0), so no speed-up shown";
  }
}

std::string workload_class(const std::string& id) {
  const auto first = id.find('/');
  if (first == std::string::npos) return id;
  const auto second = id.find('/', first + 1);
  return second == std::string::npos ? id : id.substr(0, second);
}

std::string ClassSummary::recommendation() const {
  if (blocked > 0) return to_string(Recommendation::Blocked);
  if (reduce_memory > 0) return to_string(Recommendation::ReduceMemory);
  if (accelerate > 0 && accelerate >= keep_on_cpu) return to_string(Recommendation::Accelerate);
  if (accelerate + keep_on_cpu > 0) return to_string(Recommendation::KeepOnCpu);
  return "not checked";
}

std::map<std::string, ClassSummary> summarize_classes(const std::vector<CaseResult>& cases) {
  std::map<std::string, ClassSummary> out;
  for (const auto& c : cases) {
    auto& s = out[workload_class(c.id)];
    switch (c.recommendation) {
      case Recommendation::Blocked: ++s.blocked; break;
      case Recommendation::ReduceMemory: ++s.reduce_memory; break;
      case Recommendation::Accelerate: ++s.accelerate; break;
      case Recommendation::KeepOnCpu: ++s.keep_on_cpu; break;
      case Recommendation::None: ++s.skipped; break;
    }
  }
  return out;
}

}  // namespace mpscheck

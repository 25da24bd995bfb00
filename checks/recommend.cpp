#include "checks/recommend.hpp"

#include <fmt/format.h>

namespace mpscheck {

void recommend(CaseResult& r) {
  if (r.status == Status::Skip) {
    r.recommendation.clear();
    r.reason = "not checked: " + r.message;
    return;
  }
  if (r.status == Status::Fallback) {
    r.recommendation = "keep on CPU";
    r.reason = "the target has no kernel for part of it: LibTorch ran that on the CPU, so there is no target result or time";
    return;
  }
  if (is_finding(r.status)) {
    r.recommendation = "blocked";
    r.reason = fmt::format("the target gives '{}' here; keep this on CPU until it is fixed", to_string(r.status));
    return;
  }
  if (r.speed_class == "faster") {
    r.recommendation = "accelerate";
    r.reason = fmt::format("correct and {:.2f}x faster on the target", r.speedup);
  } else if (r.speed_class == "slower") {
    r.recommendation = "keep on CPU";
    r.reason = fmt::format("correct but {:.2f}x slower on the target", r.speedup > 0 ? 1 / r.speedup : 0.0);
  } else if (r.speedup > 0) {
    r.recommendation = "keep on CPU";
    r.reason = fmt::format("correct, but no measurable speed-up ({:.2f}x within the spread)", r.speedup);
  } else {
    r.recommendation = "keep on CPU";
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
  if (blocked > 0) return "blocked";
  if (accelerate > 0 && accelerate >= keep_on_cpu) return "accelerate";
  if (accelerate + keep_on_cpu > 0) return "keep on CPU";
  return "not checked";
}

std::map<std::string, ClassSummary> summarize_classes(const std::vector<CaseResult>& cases) {
  std::map<std::string, ClassSummary> out;
  for (const auto& c : cases) {
    auto& s = out[workload_class(c.id)];
    if (c.recommendation == "blocked") ++s.blocked;
    else if (c.recommendation == "accelerate") ++s.accelerate;
    else if (c.recommendation == "keep on CPU") ++s.keep_on_cpu;
    else ++s.skipped;
  }
  return out;
}

}  // namespace mpscheck

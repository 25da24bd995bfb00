#include "core/explore_probes.hpp"

#include <fmt/format.h>

namespace mpscheck::explore_detail {

namespace {

// What the verdict says the case did, as a verb for the summary line.
std::string verb(Status s) {
  switch (s) {
    case Status::Mismatch: return "wrong";
    case Status::Nan: return "gives NaN or Inf";
    case Status::Crash: return "crashes";
    case Status::Timeout: return "does not finish";
    case Status::Memory: return "memory grows";
    default: return fmt::format("fails ({})", to_string(s));
  }
}

std::string sizes_of(const std::string& id) {
  const size_t at = id.find(kVariantMark);
  return at == std::string::npos ? "its declared sizes" : id.substr(at + 1) + " and its declared sizes";
}

std::string summary(const StateProbe& probe, const ProbePlan& plan, const CaseResult& r) {
  switch (probe.kind) {
    case StateProbe::Kind::Dirty:
      return fmt::format(
          "{} after the device's memory was dirtied (large blocks filled with NaN and 1e30, then freed); in a "
          "fresh worker it passes",
          verb(r.status));
    case StateProbe::Kind::Threads:
      return fmt::format("{} when {} threads run it at once; on one thread it passes", verb(r.status), probe.count);
    case StateProbe::Kind::Repeat:
      if (r.status == Status::Memory)
        return fmt::format(
            "process memory grows when it runs {} times at {}: {}", probe.count, sizes_of(plan.repeat_at),
            r.message.find(": ") == std::string::npos ? r.message : r.message.substr(r.message.find(": ") + 2));
      return fmt::format("{} after {} calls at {}; a first call passes", verb(r.status), probe.count - 1,
                         sizes_of(plan.repeat_at));
    case StateProbe::Kind::None: break;
  }
  return "";
}

}  // namespace

std::optional<ExploreFinding> explore_state_probes(const ProbePlan& plan, const TrialById& trial, bool* budget_spent) {
  std::vector<std::pair<std::string, StateProbe>> probes = {
      {plan.base, {StateProbe::Kind::Dirty, 0}},
      {plan.base, {StateProbe::Kind::Threads, kThreads}},
      {plan.repeat_at.empty() ? plan.base : plan.repeat_at, {StateProbe::Kind::Repeat, kRepeatCalls}}};
  if (!plan.threads) probes.erase(probes.begin() + 1);
  for (const auto& [at, probe] : probes) {
    const std::string id = with_probe(at, probe);
    const Trial t = trial(id);
    if (t.kind == TrialKind::Budget) {
      *budget_spent = true;
      return std::nullopt;
    }
    if (t.kind != TrialKind::Fail) continue;
    ExploreFinding f;
    f.base = plan.base;
    f.id = id;
    f.result = t.result;
    f.status = t.result.status;
    f.message = t.result.message;
    f.pattern = "state";
    f.probe = probe_text(probe);
    f.summary = summary(probe, plan, t.result);
    return f;
  }
  return std::nullopt;
}

}  // namespace mpscheck::explore_detail

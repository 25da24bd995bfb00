// Explore's state probes (private to core/explore*.cpp): once a case's layouts and sizes pass, it is
// run after its device's memory was dirtied (`~dirty`), from two threads at once (`~threads2`) and
// twenty times over with its memory measured (`~repeat20`, at the largest passing size variant that
// stays within kRepeatPeakBytes and kRepeatVariantSeconds, alternating with the declared sizes;
// core/state_probe.hpp). The
// first probe that fails is the case's finding, pattern "state".
#pragma once

#include "core/case_variant.hpp"
#include "core/explore.hpp"

#include <functional>
#include <optional>
#include <string>

namespace mpscheck::explore_detail {

enum class TrialKind { Pass, Fail, Invalid, TooBig, Budget };
struct Trial {
  TrialKind kind = TrialKind::Budget;
  CaseResult result;
};
// One variant (by id) run to its verdict, or given back as Budget when the case's budget is spent.
using TrialById = std::function<Trial(const std::string& id)>;

// The repeat probe's size variant: the largest passing one whose target peak stays within this
// (its twenty calls cost about what one variant of that size costs twenty times).
inline constexpr std::int64_t kRepeatPeakBytes = std::int64_t{8} << 20;
// ... and whose one run in the worker took at most this long, so the probe stays cheap.
inline constexpr double kRepeatVariantSeconds = 0.2;
inline constexpr int kRepeatCalls = 20;
inline constexpr int kThreads = 2;

struct ProbePlan {
  std::string base;       // the declared case
  std::string repeat_at;  // the variant the repeat probe runs at (the declared case when none)
  bool threads = true;    // false for a random case: its draws share one generator across threads
};

// Runs the probes in order; the first failure is the finding. *budget_spent when one could not run.
std::optional<ExploreFinding> explore_state_probes(const ProbePlan& plan, const TrialById& trial, bool* budget_spent);

}  // namespace mpscheck::explore_detail

// Runs one case inside the worker: reference, target, comparison, timing.
#pragma once

#include "core/plugin_host.hpp"
#include "checks/result.hpp"
#include "core/target.hpp"

#include <functional>
#include <string>

namespace mpscheck {

class ReferenceCache;

struct ExecuteOptions {
  TargetSpec target;  // resolved: no "auto"
  Setup setup;
  double min_time_s = 0.2;                // timing budget per side; 0 skips timing
  const ReferenceCache* cache = nullptr;  // --reference-cache
  bool reuse_reference_times = false;     // time the target alone against the cached reference time
  // Called as the case enters each phase ("reference", "target", "comparison", "float64",
  // "localisation", "timing"), before any of its work: the worker tells the host, so a crash or
  // a timeout is charged to the phase it happened in (only "target" is the target's).
  std::function<void(const std::string&)> on_phase;
  // Intra-op threads for the verdict's phases and for "timing" (core/run_loop.hpp
  // canonical_verdict_threads); 0: whatever the worker runs on.
  int verdict_threads = 0, timing_threads = 0;
  // Model cases: record the model's ATen calls and replay each distinct one alone on the target
  // (core/op_replay.hpp). Off for the replayed calls themselves.
  bool replay_ops = true;
};

// Never throws: whatever goes wrong after the target ran (comparison, gold, localisation) is the
// case's `error`, with the message.
CaseResult execute_case(const RegisteredWorkload& w, const ExecuteOptions& options);

// The one place a result gets its identity (id, kind, tags, plugin, target, dtype): the kind from the
// workload, the rest where empty, for results made in the worker and for those the host makes
// itself (crash, timeout).
void identify(CaseResult& r, const RegisteredWorkload& w, const TargetSpec& target);

// The dtype the target computes in for workload `w` (the case's own reduced dtype, else the
// target's dtype policy).
c10::ScalarType target_dtype_for(const Workload& w, const TargetSpec& target);

}  // namespace mpscheck

// How a case is timed: the reference and the target interleaved in blocks, a claim confirmed on
// fresh instances, the busy-machine rule, and the reference time kept for reuse. As the judge
// does, timing asks the host (checks/case_host.hpp) for what it needs: fresh instances, the
// device's synchronisation and the reference time kept with the cached reference.
#pragma once

#include "checks/result.hpp"

#include <mpscheck/workload.hpp>

#include <memory>

namespace mpscheck {

class CaseHost;

// How a run times its cases (--min-time, --reuse-reference-times).
struct TimingPlan {
  double budget_s = 0.2;  // per side; 0 times nothing
  // Time the target alone against the reference time the host kept with this budget.
  bool reuse_reference_times = false;
};

// Times a case whose results passed: fills r's reference and target times, speedup, speed class
// and speed note, and has the host keep the reference time where it may be reused. `ref` is the
// reference instance, made through the host if it is still empty; `tgt` the target's. May throw:
// the caller turns that into the case's error.
void time_case(CaseHost& host, const TimingPlan& plan, c10::Device device, c10::ScalarType dtype, Instance& tgt,
               std::unique_ptr<Instance>& ref, CaseResult& r);

}  // namespace mpscheck

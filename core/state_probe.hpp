// A case run in a state other than a fresh worker's, as explore's state probes ask for it by id
// (core/case_variant.hpp, `BASE@~dirty`, `BASE@~threads2`, `BASE@...~repeat20`). Runs in the worker:
//  - dirty: blocks of 72 MiB down to 4 KiB (odd sizes) are allocated on the target device, filled
//    with NaN and 1e30, and freed, all within an eighth of what the device says is free; then the
//    case runs to its verdict as any case does. A kernel that reads memory it did not write, or one
//    whose state a large free upsets, is wrong here and right in a fresh worker.
//  - threadsN: N threads start the case's target side together, run it again and again for 50 ms,
//    then each runs the case to its verdict (the reference cache off), in kThreadRounds rounds; each
//    verdict must pass. A crash takes the worker down in the target phase: the host reports a
//    `crash` of the target.
//  - repeatN: the target runs N - 1 times, alternating between the id's sizes and the declared ones
//    (a fresh instance each time), then once more to its verdict. The process's resident memory and
//    the device's allocated bytes are read after the first two calls and before the last; growth past
//    the allowance (kLeakAllowanceBytes and kLeakPerCallBytes per call) is a `memory` finding.
#pragma once

#include "core/case_variant.hpp"
#include "core/execute.hpp"

#include <cstdint>

namespace mpscheck {

// Process memory a repeat probe lets grow over its measured calls: allocator and page noise.
inline constexpr std::int64_t kLeakAllowanceBytes = std::int64_t{4} << 20;
inline constexpr std::int64_t kLeakPerCallBytes = std::int64_t{64} << 10;
// Rounds of the threads probe (each: every thread keeps its target side busy for
// kThreadBusySeconds, all at once, then runs the case to its verdict).
inline constexpr int kThreadRounds = 2;
inline constexpr double kThreadBusySeconds = 0.05;

// Runs `w` (the case `id` names) under the probe its id ends in, else to its verdict as it is.
// `declared` is the declared case the id varies (the repeat probe alternates with it); never throws.
CaseResult run_case_in_state(const RegisteredWorkload& w, const RegisteredWorkload* declared, const std::string& id,
                             const ExecuteOptions& options);

}  // namespace mpscheck

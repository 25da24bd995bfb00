// How a case is timed: the reference and the target interleaved in blocks, a claim confirmed on
// fresh instances, the busy-machine rule, and the reference cache's reused times.
#pragma once

#include "core/execute.hpp"
#include "core/reference_cache.hpp"

#include <functional>
#include <memory>

namespace mpscheck {

// Times a case whose results passed: fills r's reference and target times, speedup, speed class
// and speed note, and stores the reference time in `cached` where it may be reused. `ref` is the
// reference instance, made with `make_reference` if it is still empty. May throw: the caller
// turns that into the case's error.
void time_case(const Workload& w, const ExecuteOptions& options, c10::Device device, c10::ScalarType dtype,
               Instance& tgt, std::unique_ptr<Instance>& ref,
               const std::function<std::unique_ptr<Instance>()>& make_reference, CachedReference& cached,
               bool& cache_dirty, CaseResult& r);

}  // namespace mpscheck

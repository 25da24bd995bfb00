// Timing statistics and the speed class, taking the spread into account.
#pragma once

#include <mpscheck/result.hpp>

#include <vector>

namespace mpscheck {

// Median and quartiles (linear interpolation) of per-iteration times in seconds.
TimingStats summarize_times(std::vector<double> samples);

// "faster" / "slower" only when the interquartile ranges separate (with a 10% gap when either
// side is noisy) and the medians differ by at least 5%; "similar" otherwise.
const char* speed_class(const TimingStats& reference, const TimingStats& target);

}  // namespace mpscheck

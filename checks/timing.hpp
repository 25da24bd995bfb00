// Timing statistics and the speed class, taking the spread into account.
#pragma once

#include <mpscheck/result.hpp>

#include <vector>

namespace mpscheck {

// Median and quartiles (linear interpolation) of per-iteration times in seconds.
TimingStats summarize_times(std::vector<double> samples);

// The smallest ratio a speed claim is made for (either way): see speed_class.
inline constexpr double kMinSpeedEffect = 1.20;

// Faster / Slower only when the interquartile ranges separate (with a 10% gap when either side is
// noisy) and the medians differ by at least 10%; Similar otherwise.
SpeedClass speed_class(const TimingStats& reference, const TimingStats& target);

// The CPU reference is computation: while its blocks are timed, its process should hold at least
// one core. One that got less than kMinCpuShare of a core (CPU seconds over wall seconds) spent
// the rest waiting for a machine busy with other work, and then both timing rounds measure that
// load, not the op, so no speed claim may rest on them.
constexpr double kMinCpuShare = 0.8;
bool host_was_busy(double cpu_s, double wall_s);

}  // namespace mpscheck

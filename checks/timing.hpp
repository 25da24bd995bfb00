// Timing statistics and the speed class, taking the spread into account.
#pragma once

#include "checks/result.hpp"

#include <vector>

namespace mpscheck {

// Median and quartiles (linear interpolation) of per-iteration times in seconds.
TimingStats summarize_times(std::vector<double> samples);

// The smallest ratio a speed claim is made for (either way): see speed_class.
inline constexpr double kMinSpeedEffect = 1.20;

// Faster / Slower only when the interquartile ranges separate (with a 10% gap when either side is
// noisy) and the medians differ by at least 10%; Similar otherwise.
SpeedClass speed_class(const TimingStats& reference, const TimingStats& target);

// The CPU reference is computation: while its blocks are timed, each of its threads that computed
// should hold a core. A reference that got less than kMinCpuShare of its quiet share (CPU seconds
// over wall seconds, against what it holds on a quiet machine) spent the rest waiting for a machine
// busy with other work, and then both timing rounds measure that load, not the op, so no speed
// claim may rest on them. The quiet share is not one core: a reference on four intra-op threads
// that holds two cores while it runs 2x slow was a quiet round under an absolute 0.8 core, and an
// accelerator target got a false `faster` from it.
constexpr double kMinCpuShare = 0.8;

// Where the platform reports how long each thread waited, runnable, for a CPU (Linux), that is the
// rule instead: a side whose threads waited, in all, more than this share of its timed blocks was
// crowded off its cores by other work. On a quiet machine a runnable thread gets a core at once.
constexpr double kMaxRunQueueShare = 0.1;

// The cores a reference holds on a quiet machine: its threads that computed while it was timed, at
// most the intra-op threads and the cores there are, and at least one (a reference whose threads
// all got too little CPU to count as computing still had one to run on).
double quiet_cpu_share(int computing_threads, int intra_op_threads, int cores);

// `quiet_share` from quiet_cpu_share(); 1 for a single-threaded reference.
bool host_was_busy(double cpu_s, double wall_s, double quiet_share = 1);

// The run-queue rule: a side whose threads waited `wait_s` for a CPU, in all, over `wall_s` of
// timed blocks was crowded off its cores when that is more than kMaxRunQueueShare of the blocks.
bool crowded_off_cores(double wait_s, double wall_s);

}  // namespace mpscheck

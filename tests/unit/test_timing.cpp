#include "checks/timing.hpp"

#include <gtest/gtest.h>

using namespace mpscheck;

namespace {
TimingStats stats(double p25, double median, double p75) {
  TimingStats t;
  t.p25_s = p25;
  t.median_s = median;
  t.p75_s = p75;
  t.runs = 10;
  return t;
}
}  // namespace

TEST(Timing, QuartilesInterpolate) {
  const auto t = summarize_times({4, 1, 3, 2, 5});
  EXPECT_DOUBLE_EQ(t.median_s, 3);
  EXPECT_DOUBLE_EQ(t.p25_s, 2);
  EXPECT_DOUBLE_EQ(t.p75_s, 4);
  EXPECT_EQ(t.runs, 5);
  const auto even = summarize_times({1, 2, 3, 4});
  EXPECT_DOUBLE_EQ(even.median_s, 2.5);
}

TEST(Timing, NoisyWhenIqrIsATenthOfTheMedian) {
  EXPECT_TRUE(stats(0.95, 1.0, 1.05).noisy());
  EXPECT_FALSE(stats(0.98, 1.0, 1.02).noisy());
}

TEST(Timing, SeparatedRangesGiveAClass) {
  EXPECT_EQ(speed_class(stats(9.9, 10, 10.1), stats(0.99, 1, 1.01)), SpeedClass::Faster);
  EXPECT_EQ(speed_class(stats(0.99, 1, 1.01), stats(9.9, 10, 10.1)), SpeedClass::Slower);
}

TEST(Timing, OverlappingRangesAreSimilarWhateverTheMedians) {
  EXPECT_EQ(speed_class(stats(0.9, 1.2, 1.3), stats(0.95, 1.0, 1.25)), SpeedClass::Similar);
}

TEST(Timing, SmallButSeparatedDifferencesAreSimilar) {
  // 3% apart with tight, disjoint ranges: not worth calling faster.
  EXPECT_EQ(speed_class(stats(1.029, 1.03, 1.031), stats(0.999, 1.0, 1.001)), SpeedClass::Similar);
  // 8% apart, disjoint: what two identical CPU instances can differ by. 16% too: cumsum's twin
  // instances kept that much apart over three pairs. 22% is a real difference.
  EXPECT_EQ(speed_class(stats(1.079, 1.08, 1.081), stats(0.999, 1.0, 1.001)), SpeedClass::Similar);
  EXPECT_EQ(speed_class(stats(0.925, 0.926, 0.927), stats(0.999, 1.0, 1.001)), SpeedClass::Similar);
  EXPECT_EQ(speed_class(stats(1.159, 1.16, 1.161), stats(0.999, 1.0, 1.001)), SpeedClass::Similar);
  EXPECT_EQ(speed_class(stats(0.861, 0.862, 0.863), stats(0.999, 1.0, 1.001)), SpeedClass::Similar);
  EXPECT_EQ(speed_class(stats(1.219, 1.22, 1.221), stats(0.999, 1.0, 1.001)), SpeedClass::Faster);
  EXPECT_EQ(speed_class(stats(0.819, 0.82, 0.821), stats(0.999, 1.0, 1.001)), SpeedClass::Slower);
}

TEST(Timing, NoisySidesNeedAClearGap) {
  // Target 20% faster, ranges disjoint by a hair, but the reference is noisy: no class.
  EXPECT_EQ(speed_class(stats(1.08, 1.2, 1.32), stats(1.0, 1.03, 1.05)), SpeedClass::Similar);
  EXPECT_EQ(speed_class(stats(1.9, 2.0, 2.1), stats(0.95, 1.0, 1.08)), SpeedClass::Faster);
}

TEST(Timing, BusyHostIsACpuReferenceHoldingLessThanACore) {
  EXPECT_FALSE(host_was_busy(0.97, 1.0));  // one thread, an idle machine
  EXPECT_FALSE(host_was_busy(1.9, 1.0));   // two intra-op threads
  EXPECT_TRUE(host_was_busy(0.3, 1.0));    // what load 12 on two cores gave
  EXPECT_TRUE(host_was_busy(0.001, 0.2));  // waiting, not computing
  EXPECT_FALSE(host_was_busy(0, 0));       // nothing measured, nothing to say
}

// Where the run queue is read (Linux), a reference's CPU share is not the rule: a reference that
// sleeps 200 us per iteration holds 5% of a core on a quiet machine and its threads wait for no
// CPU, which the share rule called busy; the same reference beside six compilers on two cores
// waited 47% of its blocks in the run queue (measured here), and that is busy.
TEST(Timing, ARoundIsBusyWhenItsThreadsWaitedForACpu) {
  EXPECT_TRUE(host_was_busy(0.05, 1.0)) << "the share rule's false alarm";
  EXPECT_FALSE(crowded_off_cores(0.0, 1.0));
  EXPECT_FALSE(crowded_off_cores(0.09, 1.0));
  EXPECT_TRUE(crowded_off_cores(0.11, 1.0));
  EXPECT_TRUE(crowded_off_cores(0.47, 1.0));
  EXPECT_TRUE(crowded_off_cores(3.0, 1.0));  // waits are summed over threads: several may wait at once
  EXPECT_FALSE(crowded_off_cores(0.5, 0));   // nothing timed, nothing to say
}

// A reference on several intra-op threads holds several cores on a quiet machine; the rule compares
// its share with that, not with one core. Four threads holding two cores ran 2x slow: busy.
TEST(Timing, BusyHostIsJudgedAgainstTheReferencesQuietShare) {
  EXPECT_DOUBLE_EQ(quiet_cpu_share(4, 4, 16), 4);
  EXPECT_DOUBLE_EQ(quiet_cpu_share(4, 8, 2), 2);                     // no more than the cores there are
  EXPECT_DOUBLE_EQ(quiet_cpu_share(6, 4, 16), 4);                    // nor than the intra-op threads
  EXPECT_DOUBLE_EQ(quiet_cpu_share(1, 8, 16), 1);                    // an op too small to split runs on one thread
  EXPECT_DOUBLE_EQ(quiet_cpu_share(0, 8, 16), 1);                    // threads too starved to count still had one core
  EXPECT_TRUE(host_was_busy(2.0, 1.0, quiet_cpu_share(4, 4, 16)));   // the loaded many-core Mac
  EXPECT_TRUE(host_was_busy(2.5, 1.0, quiet_cpu_share(4, 4, 16)));   // 3/4 of the quiet share
  EXPECT_TRUE(host_was_busy(3.1, 1.0, quiet_cpu_share(4, 4, 16)));   // just under 0.8 of it
  EXPECT_FALSE(host_was_busy(3.3, 1.0, quiet_cpu_share(4, 4, 16)));  // just over
  EXPECT_FALSE(host_was_busy(3.9, 1.0, quiet_cpu_share(4, 4, 16)));  // quiet
  EXPECT_TRUE(host_was_busy(1.5, 1.0, quiet_cpu_share(2, 2, 2)));
  EXPECT_FALSE(host_was_busy(1.7, 1.0, quiet_cpu_share(2, 2, 2)));
  EXPECT_FALSE(host_was_busy(0.9, 1.0, quiet_cpu_share(1, 8, 16)));  // one thread, quiet
  EXPECT_FALSE(host_was_busy(0, 0, 4));                              // nothing measured
}

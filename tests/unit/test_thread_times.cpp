// What the busy rule reads: each thread's time on a CPU and in the run queue. Two threads pinned to
// one CPU take turns on it, so each waits for the other: the machine-independent way to make a
// busy machine. A sleeping thread holds no CPU and waits in no queue.
#include "util/thread_times.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

using namespace mpscheck;

#if defined(__linux__)
namespace {

void spin_for(std::chrono::milliseconds how_long) {
  const auto until = std::chrono::steady_clock::now() + how_long;
  while (std::chrono::steady_clock::now() < until) {
  }
}

// Runs `n` threads pinned to the first CPU this process may use, each spinning for `how_long` of
// its own wall time, and returns what they did.
ThreadTimes pinned_spinners(int n, std::chrono::milliseconds how_long) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  EXPECT_EQ(::sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  int cpu = 0;
  while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &allowed)) ++cpu;
  const ThreadTimes before = read_thread_times();
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i)
    threads.emplace_back([cpu, how_long] {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      ::pthread_setaffinity_np(::pthread_self(), sizeof(one), &one);
      spin_for(how_long);
    });
  // Read while they run: a thread that has ended has no /proc entry left to read.
  std::this_thread::sleep_for(how_long * 3 / 4);
  const ThreadTimes during = read_thread_times();
  for (auto& t : threads) t.join();
  return thread_times_between(before, during);
}

}  // namespace

TEST(ThreadTimes, ThreadsSharingOneCpuWaitForIt) {
  const ThreadTimes t = pinned_spinners(3, std::chrono::milliseconds(400));
  ASSERT_TRUE(t.has_wait) << "this kernel keeps no per-task schedstat";
  // Three threads on one CPU for 300 ms of wall time: 300 ms of CPU among them, and each runnable
  // the whole time, so about 600 ms of waiting. Half of that is far from a quiet machine's zero.
  EXPECT_GT(total_wait_s(t), 0.3) << total_cpu_s(t);
  EXPECT_LT(total_cpu_s(t), 0.45) << "one CPU cannot give three threads more than the wall time";
}

TEST(ThreadTimes, ASleepingThreadNeitherRunsNorWaits) {
  const ThreadTimes before = read_thread_times();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const ThreadTimes slept = thread_times_between(before, read_thread_times());
  ASSERT_TRUE(slept.has_wait);
  // This thread, and the test runner's others, were asleep: what the CPU-share rule called busy.
  EXPECT_LT(total_cpu_s(slept), 0.02);
  EXPECT_LT(total_wait_s(slept), 0.02);
}

TEST(ThreadTimes, AThreadBornBetweenTwoReadingsCountsFromZero) {
  const ThreadTimes before = read_thread_times();
  ThreadTimes during;
  std::thread t([&] {
    // 50 ms of this thread's own CPU time, however long a loaded machine takes to give it.
    timespec start{}, now{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
    do ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    while ((now.tv_sec - start.tv_sec) + 1e-9 * (now.tv_nsec - start.tv_nsec) < 0.05);
    during = read_thread_times();
  });
  t.join();
  const ThreadTimes between = thread_times_between(before, during);
  EXPECT_GT(busiest_thread_cpu_s(between), 0.045);
  EXPECT_LT(busiest_thread_cpu_s(between), 1.0);
}
#endif

TEST(ThreadTimes, AddingKeepsWhetherWaitsWereRead) {
  ThreadTimes a;
  a.has_wait = true;
  a.threads[1] = {0.5, 0.1};
  ThreadTimes b;
  b.has_wait = false;
  b.threads[1] = {0.25, 0};
  b.threads[2] = {1, 0};
  ThreadTimes sum;
  add_thread_times(sum, a);
  EXPECT_TRUE(sum.has_wait);
  add_thread_times(sum, b);
  EXPECT_FALSE(sum.has_wait) << "one reading without waits makes the sum's waits unknown";
  EXPECT_DOUBLE_EQ(total_cpu_s(sum), 1.75);
  EXPECT_DOUBLE_EQ(total_wait_s(sum), 0.1);
  EXPECT_DOUBLE_EQ(busiest_thread_cpu_s(sum), 1.0);
}

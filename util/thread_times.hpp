// What each thread of this process did with its time: how long it ran on a CPU, and how long it
// was ready to run and waited for one. The second figure is what tells a busy machine from a quiet
// one. A thread that sleeps (an intra-op worker waiting at a barrier, the main thread waiting for
// its helpers) holds less than a core on a quiet machine too, so CPU share alone cannot say whether
// other work took the machine; time spent runnable in the scheduler's queue can, since on a quiet
// machine a runnable thread gets a core at once.
#pragma once

#include <map>

namespace mpscheck {

struct ThreadTime {
  double cpu_s = 0;   // on a CPU
  double wait_s = 0;  // runnable, waiting in the run queue for a CPU; 0 where the platform does not say
};

struct ThreadTimes {
  std::map<long, ThreadTime> threads;  // by thread id
  // Whether wait_s was read (Linux's per-task schedstat). Without it only the CPU figures speak.
  bool has_wait = false;
};

// Every thread of this process now, cumulative since each thread started.
ThreadTimes read_thread_times();

// What each thread did between two readings (threads born in between count from zero).
ThreadTimes thread_times_between(const ThreadTimes& before, const ThreadTimes& after);

// Adds `more` into `into`, thread by thread.
void add_thread_times(ThreadTimes& into, const ThreadTimes& more);

// Sums over every thread.
double total_cpu_s(const ThreadTimes& t);
double total_wait_s(const ThreadTimes& t);
double busiest_thread_cpu_s(const ThreadTimes& t);

}  // namespace mpscheck

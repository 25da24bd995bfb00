#include "util/thread_times.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <time.h>

#if defined(__linux__)
#include <dirent.h>
#elif defined(__APPLE__)
#include <mach/mach.h>
#endif

namespace mpscheck {

namespace {

#if defined(__linux__)
// /proc/self/task/<tid>/schedstat holds three numbers: nanoseconds on a CPU, nanoseconds runnable
// in the run queue, and time slices. It exists where the kernel keeps scheduler statistics
// (CONFIG_SCHED_INFO, on in Debian's and most distributions' kernels).
bool read_schedstat(long tid, ThreadTime& out) {
  const std::string path = "/proc/self/task/" + std::to_string(tid) + "/schedstat";
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return false;
  unsigned long long run_ns = 0, wait_ns = 0;
  const bool ok = std::fscanf(f, "%llu %llu", &run_ns, &wait_ns) == 2;
  std::fclose(f);
  if (!ok) return false;
  out.cpu_s = 1e-9 * static_cast<double>(run_ns);
  out.wait_s = 1e-9 * static_cast<double>(wait_ns);
  return true;
}

// The thread's CPU clock, where schedstat is missing: the kernel's per-thread clock id (what
// pthread_getcpuclockid builds) is ~tid << 3 | 6.
bool read_thread_clock(long tid, ThreadTime& out) {
  const clockid_t clock = static_cast<clockid_t>((~static_cast<unsigned long>(tid) << 3) | 6);
  timespec ts{};
  if (::clock_gettime(clock, &ts) != 0) return false;
  out.cpu_s = static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  return true;
}
#endif

}  // namespace

ThreadTimes read_thread_times() {
  ThreadTimes out;
#if defined(__linux__)
  out.has_wait = true;
  if (DIR* dir = ::opendir("/proc/self/task")) {
    while (const dirent* e = ::readdir(dir)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      const long tid = std::strtol(e->d_name, nullptr, 10);
      ThreadTime t;
      if (read_schedstat(tid, t)) {
        out.threads[tid] = t;
      } else if (read_thread_clock(tid, t)) {
        out.threads[tid] = t;
        out.has_wait = false;  // one thread unread makes the process's waiting unknown
      }
    }
    ::closedir(dir);
  }
  if (out.threads.empty()) out.has_wait = false;
#elif defined(__APPLE__)
  thread_act_array_t threads = nullptr;
  mach_msg_type_number_t count = 0;
  if (::task_threads(::mach_task_self(), &threads, &count) == KERN_SUCCESS) {
    for (mach_msg_type_number_t i = 0; i < count; ++i) {
      thread_basic_info_data_t info{};
      mach_msg_type_number_t info_count = THREAD_BASIC_INFO_COUNT;
      if (::thread_info(threads[i], THREAD_BASIC_INFO, reinterpret_cast<thread_info_t>(&info), &info_count) ==
          KERN_SUCCESS)
        out.threads[static_cast<long>(threads[i])].cpu_s =
            info.user_time.seconds + info.system_time.seconds +
            1e-6 * (info.user_time.microseconds + info.system_time.microseconds);
      ::mach_port_deallocate(::mach_task_self(), threads[i]);
    }
    ::vm_deallocate(::mach_task_self(), reinterpret_cast<vm_address_t>(threads), count * sizeof(thread_act_t));
  }
#endif
  return out;
}

ThreadTimes thread_times_between(const ThreadTimes& before, const ThreadTimes& after) {
  ThreadTimes out;
  out.has_wait = before.has_wait && after.has_wait;
  for (const auto& [tid, t] : after.threads) {
    const auto b = before.threads.find(tid);
    const ThreadTime zero;
    const ThreadTime& start = b == before.threads.end() ? zero : b->second;
    out.threads[tid] = ThreadTime{std::max(0.0, t.cpu_s - start.cpu_s), std::max(0.0, t.wait_s - start.wait_s)};
  }
  return out;
}

void add_thread_times(ThreadTimes& into, const ThreadTimes& more) {
  const bool had_any = !into.threads.empty();
  for (const auto& [tid, t] : more.threads) {
    into.threads[tid].cpu_s += t.cpu_s;
    into.threads[tid].wait_s += t.wait_s;
  }
  into.has_wait = had_any ? into.has_wait && more.has_wait : more.has_wait;
}

double total_cpu_s(const ThreadTimes& t) {
  double sum = 0;
  for (const auto& [tid, x] : t.threads) sum += x.cpu_s;
  return sum;
}

double total_wait_s(const ThreadTimes& t) {
  double sum = 0;
  for (const auto& [tid, x] : t.threads) sum += x.wait_s;
  return sum;
}

double busiest_thread_cpu_s(const ThreadTimes& t) {
  double most = 0;
  for (const auto& [tid, x] : t.threads) most = std::max(most, x.cpu_s);
  return most;
}

}  // namespace mpscheck

#include "core/state_probe.hpp"

#include "checks/errors.hpp"
#include "checks/judge.hpp"
#include "checks/memory.hpp"
#include "core/device_memory.hpp"
#include "core/target.hpp"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <iostream>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>
#if defined(__GLIBC__)
#include <malloc.h>
#elif defined(__APPLE__)
#include <malloc/malloc.h>
#endif

namespace mpscheck {

namespace {

using Clock = std::chrono::steady_clock;

std::string device_word(const c10::Device& d) { return c10::DeviceTypeName(d.type(), /*lower_case=*/true); }

std::string mib(std::int64_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

// ---------------------------------------------------------------- dirty

// Odd sizes, largest first, so a caching allocator splits and keeps blocks of many sizes; the first
// is past 64 MiB, where allocators switch to their large pools.
constexpr std::int64_t kDirtyBlocks[] = {(72 << 20) + 4096, (17 << 20) - 1024, (5 << 20) + 12, (1 << 20) + 36,
                                         (300 << 10) + 4,   (64 << 10) - 8,    4096 + 20};
// At most this much at once, and never more than an eighth of what the device says is free.
constexpr std::int64_t kDirtyCap = std::int64_t{128} << 20;

// Allocates, fills and frees the blocks on `device`; says what it did ("blocks of 72.0 MiB ... ").
std::string dirty_device(const c10::Device& device) {
  std::int64_t cap = kDirtyCap;
  if (const std::unique_ptr<DeviceMemory> memory = device_memory(device)) {
    try {
      const std::optional<std::int64_t> max = memory->recommended_max(), used = memory->allocated();
      if (max && *max > 0) cap = std::min(cap, (*max - used.value_or(0)) / 8);
    } catch (const c10::Error&) {
    }
  }
  std::vector<at::Tensor> blocks;
  std::int64_t total = 0;
  std::string sizes, refused;
  for (size_t i = 0; i < std::size(kDirtyBlocks); ++i) {
    const std::int64_t bytes = kDirtyBlocks[i];
    if (total + bytes > cap) continue;
    const double pattern = i % 2 ? 1e30 : std::numeric_limits<double>::quiet_NaN();
    try {
      blocks.push_back(at::full({bytes / 4}, pattern, at::TensorOptions().device(device).dtype(at::kFloat)));
    } catch (const c10::Error&) {
      refused = fmt::format("; the device refused a block of {}", bytes_text(bytes));
      break;
    }
    total += bytes;
    sizes += (sizes.empty() ? "" : ", ") + bytes_text(bytes);
  }
  synchronize(device);
  blocks.clear();  // freed: a caching allocator keeps them for the case's own tensors
  synchronize(device);
  if (sizes.empty()) return fmt::format("no block fitted in {} of device memory{}", bytes_text(cap), refused);
  return fmt::format("blocks of {} filled with NaN and 1e30, then freed{}", sizes, refused);
}

CaseResult run_dirty(const RegisteredWorkload& w, const ExecuteOptions& options) {
  std::string what;
  try {
    if (options.on_phase) options.on_phase("target");  // a crash while dirtying is the device's
    what = dirty_device(to_device(options.target));
  } catch (...) {
    CaseResult r;
    identify(r, w, options.target);
    r.message = "dirtying the device's memory failed: " + exception_text(std::current_exception());
    r.status = classify_exception(r.message);
    r.phase = "target";
    return r;
  }
  CaseResult r = execute_case(w, options);
  r.message =
      fmt::format("run after the device's memory was dirtied ({}){}{}", what, r.message.empty() ? "" : ": ", r.message);
  return r;
}

// ---------------------------------------------------------------- threads

// The threads' phases, told to the host as one: "target" while any thread is in its target run, so
// a crash there is the target's. Each thread waits at the start of its target run until every
// thread has reached its own (or finished without one), spinning, so all start it at once.
class Phases {
 public:
  Phases(int n, std::function<void(const std::string&)> tell) : phase_(n), arrived_(n, false), tell_(std::move(tell)) {}

  void enter(int i, const std::string& phase) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      phase_[i] = phase;
      tell_locked();
      if (phase == "target") arrive_locked(i);
    }
    if (phase != "target") return;
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (waiting_.load() > 0 && Clock::now() < deadline) std::this_thread::yield();
  }
  void done(int i) {
    std::lock_guard<std::mutex> lock(mutex_);
    phase_[i].clear();
    arrive_locked(i);
    tell_locked();
  }

 private:
  void arrive_locked(int i) {
    if (arrived_[i]) return;
    arrived_[i] = true;
    waiting_.fetch_sub(1);
  }
  void tell_locked() {
    std::string now;
    for (const auto& p : phase_) {
      if (p == "target") now = p;
      if (now.empty()) now = p;
    }
    if (now.empty() || now == told_) return;
    told_ = now;
    if (tell_) tell_(now);
  }
  std::mutex mutex_;
  std::vector<std::string> phase_;
  std::vector<bool> arrived_;
  std::atomic<int> waiting_{static_cast<int>(phase_.size())};
  std::string told_;
  std::function<void(const std::string&)> tell_;
};

// The target side alone, again and again for kThreadBusySeconds (at least 3 calls, at most 2 s):
// the threads' target runs overlap for that long, also on a busy machine whose scheduler runs one
// thread at a time (it preempts one inside a kernel, and the other enters one).
void keep_target_busy(const Workload& w, const ExecuteOptions& options) {
  const c10::Device device = to_device(options.target);
  const Placement where{device, target_dtype_for(w, options.target), Side::Target};
  const auto start = Clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  for (int k = 0; (k < 3 || elapsed() < kThreadBusySeconds) && elapsed() < 2.0; ++k) {
    const Outputs outs = w.instantiate(options.setup, where)->run();
    synchronize(device);
  }
}

// One round: each of `n` threads starts its target side together with the others, keeps it busy,
// then runs the case to its verdict.
std::vector<CaseResult> threads_round(const RegisteredWorkload& w, int n, const ExecuteOptions& options) {
  Phases phases(n, options.on_phase);
  std::vector<CaseResult> results(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      ExecuteOptions own = options;
      own.cache = nullptr;  // one writer per cache entry
      own.min_time_s = 0;
      own.on_phase = [&phases, i](const std::string& phase) { phases.enter(i, phase); };
      CaseResult& r = results[static_cast<size_t>(i)];
      try {
        phases.enter(i, "target");  // all together
        keep_target_busy(*w.workload, own);
        r = execute_case(w, own);
      } catch (...) {
        identify(r, w, options.target);
        r.message = exception_text(std::current_exception());
        r.status = classify_exception(r.message);
        r.phase = "target";
      }
      phases.done(i);
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

// kThreadRounds rounds, so that threads a busy machine did not run together in one round get
// another chance; the first round whose verdicts are not all passes is the result.
CaseResult run_threads(const RegisteredWorkload& w, int n, const ExecuteOptions& options) {
  if (w.workload->is_random() || w.workload->kind() == Kind::Model) {
    // Their draws (a random op's, a model's weights) come from LibTorch's one global generator,
    // which threads running at once would share: their sides would no longer agree.
    CaseResult r;
    identify(r, w, options.target);
    r.status = Status::Skip;
    r.message = "not run on threads: its random draws come from LibTorch's global generator, which they would share";
    return r;
  }
  std::vector<CaseResult> results;
  for (int round = 1; round <= kThreadRounds; ++round) {
    results = threads_round(w, n, options);
    for (int i = 0; i < n; ++i) {
      CaseResult& r = results[static_cast<size_t>(i)];
      if (r.status == Status::Pass) continue;
      r.message = fmt::format("on thread {} of {} running it at once (round {}): {}", i + 1, n, round, r.message);
      return r;
    }
  }
  CaseResult r = results.front();
  r.message = fmt::format("passed on each of {} threads running it at once, {} rounds", n, kThreadRounds);
  return r;
}

// ---------------------------------------------------------------- repeat

struct MemoryNow {
  std::int64_t process = -1, device = -1;
};
// Read after the C library gave the heap pages it holds free back to the system, so what is
// counted is memory in use: a cached free block is not a leak, a block never freed stays resident.
MemoryNow memory_now(const c10::Device& device) {
#if defined(__GLIBC__)
  ::malloc_trim(0);
#elif defined(__APPLE__)
  ::malloc_zone_pressure_relief(nullptr, 0);
#endif
  MemoryNow m;
  m.process = process_resident_bytes().value_or(-1);
  if (const std::unique_ptr<DeviceMemory> d = device_memory(device)) {
    try {
      m.device = d->allocated().value_or(-1);
    } catch (const c10::Error&) {
    }
  }
  return m;
}

// "RSS grew 41.0 MiB over 18 calls (2.3 MiB per call) while the sim's allocated bytes stayed at
// 0 B", or "" within the allowance; *per_call is then what each call kept.
std::string growth(const MemoryNow& a, const MemoryNow& b, int calls, const c10::Device& device,
                   std::int64_t* per_call) {
  const std::int64_t process = a.process >= 0 && b.process >= 0 ? b.process - a.process : 0;
  const std::int64_t dev = a.device >= 0 && b.device >= 0 ? b.device - a.device : 0;
  const bool process_leaks = process > kLeakAllowanceBytes + kLeakPerCallBytes * calls;
  const bool device_leaks = dev > (std::int64_t{1} << 20);
  if (!process_leaks && !device_leaks) return "";
  std::string dev_text =
      a.device < 0 ? fmt::format("the {} gives no allocated figure", device_word(device))
      : dev == 0   ? fmt::format("the {}'s allocated bytes stayed at {}", device_word(device), bytes_text(b.device))
                 : fmt::format("the {}'s allocated bytes went from {} to {}", device_word(device), bytes_text(a.device),
                               bytes_text(b.device));
  const std::string what = process_leaks ? "RSS" : fmt::format("the {}'s allocated bytes", device_word(device));
  const std::int64_t grew = process_leaks ? process : dev;
  *per_call = grew / std::max(calls, 1);
  return fmt::format("{} grew {} over {} calls ({} per call) while {}; the allowance is {} plus {} per call", what,
                     mib(grew), calls, mib(grew / std::max(calls, 1)),
                     process_leaks ? dev_text : fmt::format("RSS grew {}", mib(process)),
                     bytes_text(kLeakAllowanceBytes), bytes_text(kLeakPerCallBytes));
}

CaseResult run_repeat(const RegisteredWorkload& w, const RegisteredWorkload* declared, int n,
                      const ExecuteOptions& options) {
  const c10::Device device = to_device(options.target);
  const Workload* shapes[] = {w.workload, declared && declared->workload != w.workload ? declared->workload : nullptr};
  const int kinds = shapes[1] ? 2 : 1;
  const int warm = kinds;  // one call of each shape before the first reading
  MemoryNow before, after;
  try {
    if (options.on_phase) options.on_phase("target");
    for (int k = 0; k < n - 1; ++k) {
      if (k == warm) before = memory_now(device);
      const Workload& at = *shapes[k % kinds];
      Placement where{device, target_dtype_for(at, options.target), Side::Target};
      {
        const Outputs outs = at.instantiate(options.setup, where)->run();
        synchronize(device);
      }
    }
    after = memory_now(device);
  } catch (...) {
    CaseResult r;
    identify(r, w, options.target);
    r.message = fmt::format("failed while repeated ({} calls): {}", n, exception_text(std::current_exception()));
    r.status = classify_exception(r.message);
    r.phase = "target";
    return r;
  }
  // In the worker's log, pass or fail: what the allowance is measured against.
  std::cerr << fmt::format("mpscheck worker: {}: RSS {:+d} B, {} allocated {:+d} B over {} calls\n", w.workload->id(),
                           after.process - before.process, device_word(device), after.device - before.device,
                           n - 1 - warm);
  CaseResult r = execute_case(w, options);
  if (r.status != Status::Pass) {
    r.message = fmt::format("after {} calls: {}", n - 1, r.message);
    return r;
  }
  const int measured = n - 1 - warm;
  if (measured <= 0) return r;
  std::int64_t per_call = 0;
  if (std::string grew = growth(before, after, measured, device, &per_call); !grew.empty()) {
    r.status = Status::Memory;
    if (!r.memory) r.memory.emplace();
    r.memory->growth_per_call = per_call;
    r.phase = "target";
    r.message = "memory grows with repetition: " + grew;
    return r;
  }
  r.message =
      fmt::format("repeated {} times; RSS {} over the last {} calls", n, mib(after.process - before.process), measured);
  return r;
}

}  // namespace

CaseResult run_case_in_state(const RegisteredWorkload& w, const RegisteredWorkload* declared, const std::string& id,
                             const ExecuteOptions& options) {
  StateProbe probe;
  try {
    probe = probe_of(id);
  } catch (const BadVariantId&) {
  }
  switch (probe.kind) {
    case StateProbe::Kind::Dirty: return run_dirty(w, options);
    case StateProbe::Kind::Threads: return run_threads(w, probe.count, options);
    case StateProbe::Kind::Repeat: return run_repeat(w, declared, probe.count, options);
    case StateProbe::Kind::None: break;
  }
  return execute_case(w, options);
}

}  // namespace mpscheck

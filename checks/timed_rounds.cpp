#include "checks/timed_rounds.hpp"

#include "checks/case_host.hpp"
#include "checks/timing.hpp"
#include "util/thread_times.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <thread>
#include <cstdlib>

#include <time.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace mpscheck {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

Placement reference_placement() { return Placement{c10::Device(c10::kCPU), c10::kFloat, Side::Reference}; }

// CPU time of the whole process (every intra-op thread), in seconds.
double process_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Times `iterate()` of both instances in interleaved blocks so drift hits both sides alike.
struct TimedSide {
  CaseHost* host;  // waits for the device
  Instance* instance;
  c10::Device device;
  std::vector<double> samples;  // per iteration, from blocks that ran undisturbed
  std::vector<double> crowded;  // per iteration, from blocks other work crowded off the cores
  double total = 0;
  double cpu = 0;              // process CPU seconds spent during the measured blocks
  ThreadTimes thread_times{};  // each thread's time on a CPU and in the run queue during them
  int block = 1;
};

double time_block(TimedSide& s, int n) {
  s.host->synchronize(s.device);
  const auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) s.instance->iterate();
  s.host->synchronize(s.device);
  return seconds_since(t0);
}

// Warm-up (not counted), then a block size that makes one sample about budget/10.
void warm_up_and_size(TimedSide& s, double budget) {
  time_block(s, 1);
  const double once = std::max(time_block(s, 1), 1e-7);
  s.block = static_cast<int>(std::clamp(std::ceil(budget / 10 / once), 1.0, 100000.0));
}

// A block whose threads waited, runnable, for more than kMaxRunQueueShare of it was crowded off its
// cores by other work: its time measures that work, so it is set aside (kept in `crowded`), and
// the round goes on until it has its samples from blocks that ran undisturbed. On this 2-core
// machine with nothing else running, one block in a few dozen still meets another process's burst
// (a 15 ms wait that made one block 2.5x slow); a round made only of such blocks is a busy round.
void measure(TimedSide& ref, TimedSide& tgt, double budget) {
  for (TimedSide* s : {&ref, &tgt}) warm_up_and_size(*s, budget);
  constexpr int kMinSamples = 5, kMaxSamples = 200, kMaxCrowded = 10;
  for (int round = 0; round < kMaxSamples; ++round) {
    // Alternate which side goes first, so neither side always inherits the other's warm caches.
    TimedSide* const order[2] = {round % 2 ? &tgt : &ref, round % 2 ? &ref : &tgt};
    for (TimedSide* s : order) {
      const ThreadTimes threads0 = read_thread_times();
      const double cpu0 = process_cpu_seconds();
      const double t = time_block(*s, s->block);
      s->cpu += process_cpu_seconds() - cpu0;
      const ThreadTimes block = thread_times_between(threads0, read_thread_times());
      add_thread_times(s->thread_times, block);
      s->total += t;
      if (block.has_wait && crowded_off_cores(total_wait_s(block), t)) {
        s->crowded.push_back(t / s->block);
      } else {
        s->samples.push_back(t / s->block);
      }
    }
    const bool budget_met = ref.total >= budget && tgt.total >= budget;
    const int have = static_cast<int>(std::min(ref.samples.size(), tgt.samples.size()));
    // Slow cases (one iteration beyond the budget) stop at three samples rather than five.
    if (budget_met && (have >= kMinSamples || (have >= 3 && ref.total + tgt.total > 10 * budget))) break;
    // A machine that keeps crowding the blocks is busy: no more of its time is spent on this round.
    if (budget_met && static_cast<int>(std::max(ref.crowded.size(), tgt.crowded.size())) >= kMaxCrowded) break;
  }
}

struct SpeedRound {
  TimingStats reference, target;
  double speedup = 0;
  SpeedClass speed_class = SpeedClass::Similar;
  double reference_cpu_s = 0, reference_wall_s = 0;  // over the reference's measured blocks
  double reference_quiet_share = 1;                  // the cores it would hold on a quiet machine
  double reference_busiest_thread_s = 0;             // CPU seconds of its busiest thread; 0 without per-thread figures
  // Where the platform says (Linux): the seconds this process's threads spent runnable and waiting
  // for a CPU during each side's blocks, and those blocks' wall time.
  bool has_wait = false;
  double reference_wait_s = 0, target_wait_s = 0, target_wall_s = 0;
  // Blocks set aside as crowded, and blocks kept, per side.
  int reference_crowded = 0, target_crowded = 0, reference_kept = 0, target_kept = 0;
  bool interleaved = false;  // both sides timed here; false for a round against a reused reference time

  double wait_share() const {
    if (!has_wait) return -1;
    auto share = [](double wait, double wall) { return wall > 0 ? wait / wall : 0.0; };
    return std::max(share(reference_wait_s, reference_wall_s), share(target_wait_s, target_wall_s));
  }
  // Where the run queue is read, a round is busy when other work crowded either side off its cores
  // in more of its blocks than it left undisturbed, or left it fewer than three undisturbed blocks
  // (measure() sets crowded blocks aside). A thread that sleeps (a worker at a barrier) is no sign
  // of load, and on a quiet machine here the reference's busiest thread held 74% of a core in such
  // rounds. Without run-queue figures (macOS), the thread that drives the reference must hold
  // kMinCpuShare of a core, and so must the whole process.
  bool host_busy() const {
    if (has_wait) {
      auto busy = [](int crowded, int kept) { return kept < 3 || crowded > kept; };
      return busy(reference_crowded, reference_kept) || busy(target_crowded, target_kept);
    }
    if (reference_busiest_thread_s > 0)
      return host_was_busy(reference_busiest_thread_s, reference_wall_s, 1) ||
             host_was_busy(reference_cpu_s, reference_wall_s, 1);
    return host_was_busy(reference_cpu_s, reference_wall_s, reference_quiet_share);
  }
};

// Where per-thread figures are missing: a thread computed for the reference when it held at least a
// tenth of a core over its blocks. (The thread count is no quiet share where they exist: on a quiet
// machine here, a quick conv2d's two threads held 1.1-1.4 cores, and counting both called that round
// busy and withdrew the planted 10x slow kernel's `slower`; host_busy reads the busiest thread.)
constexpr double kComputingThreadShare = 0.1;

double reference_quiet_share(const TimedSide& ref) {
  int computing = 0;
  for (const auto& [tid, t] : ref.thread_times.threads)
    if (t.cpu_s >= kComputingThreadShare * ref.total) ++computing;
  // Without per-thread figures, a reference that held more than a core computed on that many.
  if (ref.thread_times.threads.empty()) computing = static_cast<int>(std::ceil(ref.cpu / std::max(ref.total, 1e-9)));
  return quiet_cpu_share(computing, at::get_num_threads(), static_cast<int>(std::thread::hardware_concurrency()));
}

SpeedRound time_round(CaseHost& host, Instance& ref, Instance& tgt, c10::Device device, double budget) {
  TimedSide ref_side{&host, &ref, c10::Device(c10::kCPU), {}};
  TimedSide tgt_side{&host, &tgt, device, {}};
  measure(ref_side, tgt_side, budget);
  SpeedRound round;
  // A round with no undisturbed block still shows what it measured (and is a busy round).
  auto kept = [](const TimedSide& side) { return side.samples.empty() ? side.crowded : side.samples; };
  round.reference = summarize_times(kept(ref_side));
  round.target = summarize_times(kept(tgt_side));
  round.speedup = round.reference.median_s / round.target.median_s;
  round.speed_class = speed_class(round.reference, round.target);
  round.reference_crowded = static_cast<int>(ref_side.crowded.size());
  round.target_crowded = static_cast<int>(tgt_side.crowded.size());
  round.reference_kept = static_cast<int>(ref_side.samples.size());
  round.target_kept = static_cast<int>(tgt_side.samples.size());
  round.reference_cpu_s = ref_side.cpu;
  round.reference_wall_s = ref_side.total;
  round.reference_quiet_share = reference_quiet_share(ref_side);
  round.reference_busiest_thread_s = busiest_thread_cpu_s(ref_side.thread_times);
  round.has_wait = ref_side.thread_times.has_wait && tgt_side.thread_times.has_wait;
  round.reference_wait_s = total_wait_s(ref_side.thread_times);
  round.target_wait_s = total_wait_s(tgt_side.thread_times);
  round.target_wall_s = tgt_side.total;
  round.interleaved = true;
  return round;
}

std::string busy_host_note(const SpeedRound& round) {
  const double share = round.reference_cpu_s / round.reference_wall_s;
  if (round.has_wait) {
    const bool reference = round.reference_wait_s * round.target_wall_s >= round.target_wait_s * round.reference_wall_s;
    return fmt::format(
        "a round measured {:.3g}x ({}), but the {}'s threads waited {:.0f}% of its timed blocks for a "
        "CPU that other work held: the machine was busy, so no claim (time it on a quiet machine)",
        round.speedup, to_string(round.speed_class), reference ? "CPU reference" : "target", 100 * round.wait_share());
  }
  if (round.reference_busiest_thread_s > 0)
    return fmt::format(
        "a round measured {:.3g}x ({}), but the CPU reference's busiest thread held {:.0f}% of a core "
        "while it was timed ({:.2g} cores in all): the machine was busy with other work, so no claim "
        "(time it on a quiet machine)",
        round.speedup, to_string(round.speed_class), 100 * round.reference_busiest_thread_s / round.reference_wall_s,
        share);
  if (round.reference_quiet_share <= 1)
    return fmt::format(
        "a round measured {:.3g}x ({}), but the CPU reference held {:.0f}% of a core while it was "
        "timed: the machine was busy with other work, so no claim (time it on a quiet machine)",
        round.speedup, to_string(round.speed_class), 100 * share);
  return fmt::format(
      "a round measured {:.3g}x ({}), but the CPU reference held {:.2g} cores while it was timed, "
      "where its {:.0f} computing threads hold {:.0f} on a quiet machine: the machine was busy with "
      "other work, so no claim (time it on a quiet machine)",
      round.speedup, to_string(round.speed_class), share, round.reference_quiet_share, round.reference_quiet_share);
}

// The target alone, with the same warm-up and block sizing as an interleaved round, against
// reference figures an earlier run measured (--reuse-reference-times). There is no reference CPU
// share to read, so such a round can only screen: any claim it suggests is settled by fresh
// interleaved rounds of both sides.
SpeedRound time_target_alone(CaseHost& host, const TimingStats& reference, Instance& tgt, c10::Device device,
                             double budget) {
  TimedSide side{&host, &tgt, device, {}};
  warm_up_and_size(side, budget);
  for (int round = 0; round < 200; ++round) {
    const double t = time_block(side, side.block);
    side.samples.push_back(t / side.block);
    side.total += t;
    const int have = static_cast<int>(side.samples.size());
    if (side.total >= budget && (have >= 5 || (have >= 3 && side.total > 5 * budget))) break;
  }
  SpeedRound round;
  round.reference = reference;
  round.target = summarize_times(side.samples);
  round.speedup = round.reference.median_s / round.target.median_s;
  round.speed_class = speed_class(round.reference, round.target);
  return round;
}

// Settles the speed class from a first round. A faster/slower claim must survive two more rounds
// on fresh instances of both sides, interleaved, made in the other order: two instances of one
// computation on one device can differ by 20% for as long as they live (where their buffers landed
// relative to the buffers each step allocates: log1p on one CPU ran at 4.0 or 5.1 us per
// instance), and across thousands of cases that alone separates some ranges. Fresh instances alone
// can land the same way again, since the allocator hands out memory in the same order, so each
// confirmation pair is made after a spacer from LibTorch's own allocator whose size is no multiple
// of a page. A real device difference repeats; a placement accident is drawn anew. No round may
// carry a claim when the machine was busy: then every round measures the same load, and agrees
// about it. A first round against a reused reference time goes through the same two rounds, so a
// claim always rests on fresh interleaved measurements of both sides.
//
// A confirmation round runs on half the first round's budget. It can only withdraw a claim, never
// make one, and what it is there to catch, a placement accident or a busy machine, is drawn anew
// by the fresh pair or read from the CPU share, at any budget. What a shorter round loses is
// precision: wider ranges, which separate less often, so it withdraws more real claims rather than
// confirming false ones. Three full rounds made the claims of a --quick run cost as much as all its
// other timed cases together.
constexpr double kConfirmationBudgetShare = 0.5;

// What earlier cases left in the process's allocator decides where a pair's buffers, and every
// step's outputs, land; fresh instances made in the same state land alike, so a placement accident
// can repeat across fresh pairs (cumsum along dim 0, a 6 us kernel, measured `slower` in all three
// rounds of a full run and `similar` alone). Before the last confirmation pair the allocator's
// state is redrawn: 80 blocks of irregular sizes from 3 KiB to 2 MiB (small bins, the heap top
// and mmap-sized chunks alike) are allocated through LibTorch's CPU allocator and freed out of
// order, and glibc then returns its free memory to the system, so the pair starts from a heap laid
// out unlike the one the first two pairs got. It costs a few milliseconds per claim.
void reset_allocator_state() {
  std::vector<at::Tensor> blocks;
  int64_t bytes = 3 * 1024 + 320;
  for (int i = 0; i < 80; ++i) {
    blocks.push_back(at::empty({bytes}, at::kByte));
    bytes = i % 10 == 9 ? 3 * 1024 + 64 * i : bytes * 2 + 832;  // up to ~2 MiB, eight times over
  }
  for (size_t i = 0; i < blocks.size(); i += 3) blocks[i].reset();  // every third first: holes
  blocks.clear();
#if defined(__GLIBC__)
  ::malloc_trim(0);
#endif
}

// Keeps what the busy rule read in the case's result: the worst of its rounds.
void note_load(const SpeedRound& round, CaseResult& r) {
  if (!round.interleaved) return;
  if (round.has_wait) r.run_queue_wait = std::max(r.run_queue_wait, round.wait_share());
  r.crowded_blocks += round.reference_crowded + round.target_crowded;
  if (round.reference_wall_s > 0 && round.reference_busiest_thread_s > 0) {
    const double share = round.reference_busiest_thread_s / round.reference_wall_s;
    r.reference_thread_share = r.reference_thread_share < 0 ? share : std::min(r.reference_thread_share, share);
  }
}

// Returns whether the reference time it settled on is one to keep for --reuse-reference-times:
// from an interleaved round whose CPU share was read and quiet, with every round agreeing.
bool settle_speed(const SpeedRound& first, bool first_reused, CaseHost& host, const TimingPlan& plan,
                  c10::Device device, c10::ScalarType dtype, CaseResult& r) {
  SpeedRound decided = first;
  const SpeedClass claim = first.speed_class;
  std::vector<double> speedups{first.speedup};
  std::string note;
  if (claim != SpeedClass::Similar) {
    // The first round's pair was made target first. The second pair is made reference first, the
    // third target first after a reset of the allocator's state, each with a spacer between the two.
    struct Confirmation {
      bool reference_first;
      bool reset_allocator;
      int64_t spacer_bytes;
    };
    for (const std::optional<Confirmation> confirmation :
         {std::optional<Confirmation>{}, std::optional<Confirmation>{{true, false, 2112}},
          std::optional<Confirmation>{{false, true, 1088}}}) {
      SpeedRound round = first;
      if (confirmation) {
        if (confirmation->reset_allocator) reset_allocator_state();
        std::unique_ptr<Instance> fresh_tgt, fresh_ref;
        auto make_tgt = [&] { fresh_tgt = host.instantiate(Placement{device, dtype, Side::Target}); };
        auto make_ref = [&] { fresh_ref = host.instantiate(reference_placement()); };
        confirmation->reference_first ? make_ref() : make_tgt();
        const at::Tensor spacer = at::empty({confirmation->spacer_bytes}, at::kByte);  // alive while the pair is
        confirmation->reference_first ? make_tgt() : make_ref();
        round = time_round(host, *fresh_ref, *fresh_tgt, device, kConfirmationBudgetShare * plan.budget_s);
        speedups.push_back(round.speedup);
      }
      decided = round;
      note_load(round, r);
      if (round.host_busy()) {
        note = busy_host_note(round);
        r.host_busy = true;
      } else if (round.speed_class != claim) {
        note = fmt::format(
            "a first round{} measured {:.3g}x ({}), a confirmation round on fresh instances "
            "{:.3g}x ({}): no claim",
            first_reused ? " against the cached reference time" : "", first.speedup, to_string(claim), round.speedup,
            to_string(round.speed_class));
      } else {
        continue;
      }
      decided.speed_class = SpeedClass::Similar;
      break;
    }
    r.speed_note = note.empty()
                       ? fmt::format("{} in three rounds, {}the last two on fresh instances: {:.3g}x", to_string(claim),
                                     first_reused ? "the first against the cached reference time, " : "",
                                     fmt::join(speedups, "x, "))
                       : note;
  } else if (note_load(first, r); first.host_busy()) {
    note = busy_host_note(first);  // no claim to withdraw, but its reference time is not kept
    r.host_busy = true;
    r.speed_note = note;
  }
  r.reference_time = decided.reference;
  r.target_time = decided.target;
  r.speedup = decided.speedup;
  r.speed_class = decided.speed_class;
  return decided.interleaved && !decided.host_busy() && note.empty();
}

}  // namespace

void time_case(CaseHost& host, const TimingPlan& plan, c10::Device device, c10::ScalarType dtype, Instance& tgt,
               std::unique_ptr<Instance>& ref, CaseResult& r) {
  const TimingStats* kept = plan.reuse_reference_times ? host.kept_reference_time(plan.budget_s) : nullptr;
  const bool reuse = kept != nullptr;
  const SpeedRound first = [&] {
    if (reuse) return time_target_alone(host, *kept, tgt, device, plan.budget_s);
    if (!ref) ref = host.instantiate(reference_placement());
    return time_round(host, *ref, tgt, device, plan.budget_s);
  }();
  const bool keep = settle_speed(first, reuse, host, plan, device, dtype, r);
  // The reference time is reused only where the screen settled it; a claim was re-timed fresh.
  r.reference_time_reused = reuse && first.speed_class == SpeedClass::Similar;
  // A reference time from a busy round, or from rounds that disagreed, is never kept: reused, it
  // would settle every later run's screen against a figure no quiet round confirmed (a reference
  // slowed 2x by a busy machine makes a 2x slower target `similar` for good).
  if (!r.reference_time_reused && keep) host.keep_reference_time(*r.reference_time, plan.budget_s);
}

}  // namespace mpscheck

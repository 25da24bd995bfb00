#include "core/timed_rounds.hpp"

#include "checks/timing.hpp"
#include "core/target.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include <time.h>

namespace mpscheck {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU time of the whole process (every intra-op thread), in seconds.
double process_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Times `iterate()` of both instances in interleaved blocks so drift hits both sides alike.
struct TimedSide {
  Instance* instance;
  c10::Device device;
  std::vector<double> samples;
  double total = 0;
  double cpu = 0;  // process CPU seconds spent during the measured blocks
  int block = 1;
};

double time_block(TimedSide& s, int n) {
  synchronize(s.device);
  const auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) s.instance->iterate();
  synchronize(s.device);
  return seconds_since(t0);
}

// Warm-up (not counted), then a block size that makes one sample about budget/10.
void warm_up_and_size(TimedSide& s, double budget) {
  time_block(s, 1);
  const double once = std::max(time_block(s, 1), 1e-7);
  s.block = static_cast<int>(std::clamp(std::ceil(budget / 10 / once), 1.0, 100000.0));
}

void measure(TimedSide& ref, TimedSide& tgt, double budget) {
  for (TimedSide* s : {&ref, &tgt}) warm_up_and_size(*s, budget);
  constexpr int kMinSamples = 5, kMaxSamples = 200;
  for (int round = 0; round < kMaxSamples; ++round) {
    // Alternate which side goes first, so neither side always inherits the other's warm caches.
    TimedSide* const order[2] = {round % 2 ? &tgt : &ref, round % 2 ? &ref : &tgt};
    for (TimedSide* s : order) {
      const double cpu0 = process_cpu_seconds();
      const double t = time_block(*s, s->block);
      s->cpu += process_cpu_seconds() - cpu0;
      s->samples.push_back(t / s->block);
      s->total += t;
    }
    const bool budget_met = ref.total >= budget && tgt.total >= budget;
    const int have = static_cast<int>(ref.samples.size());
    // Slow cases (one iteration beyond the budget) stop at three samples rather than five.
    if (budget_met && (have >= kMinSamples || (have >= 3 && ref.total + tgt.total > 10 * budget))) break;
  }
}

struct SpeedRound {
  TimingStats reference, target;
  double speedup = 0;
  SpeedClass speed_class = SpeedClass::Similar;
  double reference_cpu_s = 0, reference_wall_s = 0;  // over the reference's measured blocks
  bool host_busy() const { return host_was_busy(reference_cpu_s, reference_wall_s); }
};

SpeedRound time_round(Instance& ref, Instance& tgt, c10::Device device, double budget) {
  TimedSide ref_side{&ref, c10::Device(c10::kCPU), {}};
  TimedSide tgt_side{&tgt, device, {}};
  measure(ref_side, tgt_side, budget);
  SpeedRound round;
  round.reference = summarize_times(ref_side.samples);
  round.target = summarize_times(tgt_side.samples);
  round.speedup = round.reference.median_s / round.target.median_s;
  round.speed_class = speed_class(round.reference, round.target);
  round.reference_cpu_s = ref_side.cpu;
  round.reference_wall_s = ref_side.total;
  return round;
}

std::string busy_host_note(const SpeedRound& round) {
  return fmt::format("a round measured {:.3g}x ({}), but the CPU reference held {:.0f}% of a core while it was timed: "
                     "the machine was busy with other work, so no claim (time it on a quiet machine)",
                     round.speedup, to_string(round.speed_class), 100 * round.reference_cpu_s / round.reference_wall_s);
}

// The target alone, with the same warm-up and block sizing as an interleaved round, against
// reference figures an earlier run measured (--reuse-reference-times). There is no reference CPU
// share to read, so such a round can only screen: any claim it suggests is settled by fresh
// interleaved rounds of both sides.
SpeedRound time_target_alone(const TimingStats& reference, Instance& tgt, c10::Device device, double budget) {
  TimedSide side{&tgt, device, {}};
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

void settle_speed(const SpeedRound& first, bool first_reused, const Workload& w, const ExecuteOptions& options,
                  c10::Device device, c10::ScalarType dtype, CaseResult& r) {
  SpeedRound decided = first;
  const SpeedClass claim = first.speed_class;
  std::vector<double> speedups{first.speedup};
  std::string note;
  if (claim != SpeedClass::Similar) {
    for (const int64_t spacer_bytes : {0, 2112, 1088}) {
      SpeedRound round = first;
      if (spacer_bytes > 0) {
        const at::Tensor spacer = at::empty({spacer_bytes}, at::kByte);  // alive while the pair is
        std::unique_ptr<Instance> fresh_tgt = w.instantiate(options.setup, Placement{device, dtype, Side::Target});
        std::unique_ptr<Instance> fresh_ref =
            w.instantiate(options.setup, Placement{c10::Device(c10::kCPU), c10::kFloat, Side::Reference});
        round = time_round(*fresh_ref, *fresh_tgt, device, kConfirmationBudgetShare * options.min_time_s);
        speedups.push_back(round.speedup);
      }
      decided = round;
      if (round.host_busy()) {
        note = busy_host_note(round);
      } else if (round.speed_class != claim) {
        note = fmt::format("a first round{} measured {:.3g}x ({}), a confirmation round on fresh instances "
                           "{:.3g}x ({}): no claim",
                           first_reused ? " against the cached reference time" : "", first.speedup,
                           to_string(claim), round.speedup, to_string(round.speed_class));
      } else {
        continue;
      }
      decided.speed_class = SpeedClass::Similar;
      break;
    }
    r.speed_note = note.empty() ? fmt::format("{} in three rounds, {}the last two on fresh instances: {:.3g}x",
                                              to_string(claim),
                                              first_reused ? "the first against the cached reference time, " : "",
                                              fmt::join(speedups, "x, "))
                                : note;
  }
  r.reference_time = decided.reference;
  r.target_time = decided.target;
  r.speedup = decided.speedup;
  r.speed_class = decided.speed_class;
}

}  // namespace

void time_case(const Workload& w, const ExecuteOptions& options, c10::Device device, c10::ScalarType dtype,
               Instance& tgt, std::unique_ptr<Instance>& ref,
               const std::function<std::unique_ptr<Instance>()>& make_reference, CachedReference& cached,
               bool& cache_dirty, CaseResult& r) {
  const bool reuse = options.reuse_reference_times && cached.reference_time &&
                     cached.reference_time_budget == options.min_time_s;
  const SpeedRound first = [&] {
    if (reuse) return time_target_alone(*cached.reference_time, tgt, device, options.min_time_s);
    if (!ref) ref = make_reference();
    return time_round(*ref, tgt, device, options.min_time_s);
  }();
  settle_speed(first, reuse, w, options, device, dtype, r);
  // The reference time is reused only where the screen settled it; a claim was re-timed fresh.
  r.reference_time_reused = reuse && first.speed_class == SpeedClass::Similar;
  if (!r.reference_time_reused) {
    cached.reference_time = r.reference_time;
    cached.reference_time_budget = options.min_time_s;
    cache_dirty = true;
  }
}

}  // namespace mpscheck

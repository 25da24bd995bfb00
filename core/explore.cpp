#include "core/explore.hpp"

#include "core/explore_probes.hpp"
#include "core/explore_sizes.hpp"
#include "core/worker_protocol.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <ostream>
#include <random>
#include <set>

namespace mpscheck {

namespace {

using namespace explore_detail;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// One declared case being explored: its sizes, the variants it has run, the budget.
class CaseExplorer {
 public:
  using Kind = explore_detail::TrialKind;
  using Trial = explore_detail::Trial;

  CaseExplorer(const RegisteredWorkload& w, const RunCase& run, const ExploreOptions& options,
               Clock::time_point run_start, const std::function<bool()>& stop)
      : base_(w.workload->id()),
        random_(w.workload->is_random()),
        inputs_(w.workload->input_shapes()),
        run_(run),
        options_(options),
        run_start_(run_start),
        stop_(stop) {
    groups_ = size_groups(inputs_);
    for (const auto& g : groups_) declared_.push_back(g.declared);
    layouts_.resize(inputs_.size());
  }

  std::optional<ExploreFinding> explore(ExploredCase& record);
  const std::vector<SizeGroup>& groups() const { return groups_; }

 private:
  // The inputs at `sizes`, each in its layout of layouts_ (as declared unless a layout search set it).
  std::vector<InputVariant> inputs_at(const std::vector<std::int64_t>& sizes) const {
    std::vector<InputVariant> in;
    for (size_t i = 0; i < inputs_.size(); ++i)
      in.push_back({inputs_[i].shape, layouts_[i].layout, layouts_[i].storage_offset});
    for (size_t g = 0; g < groups_.size(); ++g)
      for (const SizePlace& p : groups_[g].at) in[p.input].shape[p.dim] = p.factor * sizes[g];
    for (InputVariant& v : in)
      if (v.layout == InputLayout::CpuScalar) v.shape.clear();  // 0-dim, whatever the sizes
    return in;
  }
  std::string id_at(const std::vector<std::int64_t>& sizes) const {
    return variant_id(base_, inputs_, inputs_at(sizes));
  }
  // The case's budget, less what is kept for the state probes until they run.
  double case_budget() const { return options_.case_budget_s - reserve_; }
  bool out_of_budget() const {
    return seconds_since(start_) > case_budget() || seconds_since(run_start_) > options_.run_budget_s ||
           (stop_ && stop_());
  }

  Trial trial(const std::vector<std::int64_t>& sizes) {
    for (const InputVariant& in : inputs_at(sizes)) {
      std::int64_t n = 1;
      for (std::int64_t d : in.shape) n = d > 0 && n > options_.max_elements / d ? options_.max_elements + 1 : n * d;
      if (n > options_.max_elements) return {Kind::TooBig, {}};
    }
    return trial_id(id_at(sizes));
  }
  Trial trial_id(const std::string& id) {
    auto it = seen_.find(id);
    if (it == seen_.end()) {
      if (out_of_budget()) return {Kind::Budget, {}};
      const double left =
          std::min(case_budget() - seconds_since(start_), options_.run_budget_s - seconds_since(run_start_));
      CaseResult r = run_(id, std::max(left, 0.001));
      ++variants_;
      if (r.phase == kBudgetPhase) return {Kind::Budget, r};  // stopped at the budget: not a verdict
      it = seen_.emplace(id, std::move(r)).first;
    }
    const CaseResult& r = it->second;
    if (explore_failure(r)) return {Kind::Fail, r};
    return {r.status == Status::Pass ? Kind::Pass : Kind::Invalid, r};
  }
  std::vector<std::int64_t> with(std::vector<std::int64_t> sizes, size_t g, std::int64_t v) const {
    sizes[g] = v;
    return sizes;
  }

  ExploreFinding shrink_and_bisect(size_t g, std::int64_t failing, const std::map<std::int64_t, bool>& passed);
  // Every size but group `keep`'s as small as the failure at `sizes` allows (1, 2 or half), largest first.
  std::vector<std::int64_t> shrink(std::vector<std::int64_t> sizes, std::optional<size_t> keep);
  // Once every size passed: each dimension's growing sizes timed on both sides for a cliff.
  std::optional<ExploreFinding> explore_speed();
  // Each input in other layouts and at storage offsets, at the declared sizes (explore_layouts.cpp).
  std::optional<ExploreFinding> explore_layouts(bool* budget_spent);
  // Each size group through its candidates, round robin; a failure shrunk and bisected. Fills passed_.
  std::optional<ExploreFinding> explore_sizes(bool* budget_spent);
  // The same layouts again with one dimension at another size that passed as declared.
  std::optional<ExploreFinding> explore_layouts_at_sizes(bool* budget_spent);
  ExploreFinding minimise_layout(size_t input, const CaseResult& first);
  // The state probes (explore_probes.cpp), in the budget kept for them.
  std::optional<ExploreFinding> explore_state(bool* budget_spent);
  std::string repeat_variant() const;

  std::string base_;
  bool random_ = false;
  std::vector<InputShape> inputs_;
  std::vector<SizeGroup> groups_;
  std::vector<std::int64_t> declared_;
  std::vector<InputVariant> layouts_;  // per input: its layout and storage offset (shapes unused)
  const RunCase& run_;
  const ExploreOptions& options_;
  Clock::time_point run_start_, start_ = Clock::now();
  const std::function<bool()>& stop_;
  std::map<std::string, CaseResult> seen_;
  int variants_ = 0;
  std::string speed_note_;  // why the speed search stopped short
  std::string cut_short_;   // why a cliff it found was not bisected to its exact size (empty: it was)
  // Kept for the state probes: a fifth of the case's budget, at most 8 s.
  double reserve_ = std::min(options_.case_budget_s / 5, 8.0);
  // Per size group, the sizes that passed in the declared layouts (explore_sizes).
  std::vector<std::map<std::int64_t, bool>> passed_;
};

std::optional<ExploreFinding> CaseExplorer::explore(ExploredCase& record) {
  record.id = base_;
  auto done = [&](std::string note) {
    record.variants = variants_;
    record.seconds = seconds_since(start_);
    record.note = std::move(note);
  };
  if (groups_.empty()) {
    done("not explored: the case declares no input sizes (only op cases do)");
    return std::nullopt;
  }
  const Trial declared = trial(declared_);
  if (declared.kind == Kind::Fail) {
    done("fails as declared: a finding of the fixed catalog, not explored");
    ExploreFinding f{base_, base_, declared.result.status, declared.result.message, {}, 0, 0, "declared",
                     {},    {},    declared.result};
    f.summary = fmt::format("fails at its declared sizes ({})", to_string(f.status));
    return f;
  }
  if (declared.kind != Kind::Pass) {
    done(declared.kind == Kind::Budget ? "not explored: the budget was spent"
                                       : "not explored: the declared case does not pass (" +
                                             std::string(to_string(declared.result.status)) + ")");
    return std::nullopt;
  }
  record.explored = true;
  bool budget_spent = false;
  std::optional<ExploreFinding> f = explore_layouts(&budget_spent);
  if (!f && !budget_spent) f = explore_sizes(&budget_spent);
  // The state probes next, in the budget kept for them: what they catch (a crash, a leak, a wrong
  // result after a large free) matters more than the speed search, whose many timed calls would
  // also change the very state they probe.
  if (!f && !(stop_ && stop_())) {
    bool probes_spent = false;
    const auto probes_start = Clock::now();
    f = explore_state(&probes_spent);
    record.probe_seconds = seconds_since(probes_start);
    budget_spent |= probes_spent;
  }
  if (!f && !budget_spent) f = explore_layouts_at_sizes(&budget_spent);
  if (!f && !budget_spent) f = explore_speed();
  if (f || !budget_spent) {
    done(f ? cut_short_ : speed_note_);
    return f;
  }
  done(fmt::format("{} after {} variants; no finding", stop_ && stop_() ? "the run was stopped" : "budget spent",
                   variants_));
  return std::nullopt;
}

std::optional<ExploreFinding> CaseExplorer::explore_sizes(bool* budget_spent) {
  std::mt19937_64 rng(options_.seed ^ fnv1a(base_));
  std::vector<std::vector<std::int64_t>> candidates;
  size_t longest = 0;
  for (const auto& g : groups_) {
    candidates.push_back(candidate_sizes(g.declared, rng));
    longest = std::max(longest, candidates.back().size());
  }
  passed_.assign(groups_.size(), {});
  auto& passed = passed_;
  std::vector<bool> exhausted(groups_.size(), false);
  // Round robin over the sizes, so a budget that runs out has tried every one alike.
  for (size_t k = 0; k < longest; ++k) {
    for (size_t g = 0; g < groups_.size(); ++g) {
      if (k >= candidates[g].size() || exhausted[g]) continue;
      const std::int64_t size = candidates[g][k];
      const Trial t = trial(with(declared_, g, size));
      if (t.kind == Kind::Budget) {
        *budget_spent = true;
        return std::nullopt;
      }
      if (t.kind == Kind::TooBig && size > declared_[g]) exhausted[g] = true;  // growing further only grows it
      if (t.kind == Kind::Pass) passed[g][size] = true;
      if (t.kind == Kind::Fail) return shrink_and_bisect(g, size, passed[g]);
    }
  }
  return std::nullopt;
}

std::optional<ExploreFinding> CaseExplorer::explore_speed() {
  if (!options_.timed) return std::nullopt;
  for (size_t g = 0; g < groups_.size(); ++g) {
    // The declared size, then the powers of two above it that passed: each at most twice the one before.
    std::vector<std::int64_t> sizes = {declared_[g]};
    for (const auto& [size, ok] : passed_[g])
      if (ok && size > declared_[g] && is_power_of_two(size) && size <= 2 * sizes.back()) sizes.push_back(size);
    if (sizes.size() < 2) continue;
    std::map<std::int64_t, CaseResult> timed;  // the last timed run at each size
    std::string why_not;                       // why the last size asked for has no ratio
    const RatioAt ratio_at = [&](std::int64_t size) -> std::optional<double> {
      if (out_of_budget()) {
        speed_note_ = "budget spent in the speed search";
        why_not = "the budget ran out";
        return std::nullopt;
      }
      const double left =
          std::min(case_budget() - seconds_since(start_), options_.run_budget_s - seconds_since(run_start_));
      // A time from a busy machine is no measurement: tried again, and the search ends if it stays busy.
      CaseResult r;
      for (int attempt = 0;; ++attempt) {
        r = options_.timed(id_at(with(declared_, g, size)), std::max(left, 0.001));
        ++variants_;
        if (!r.host_busy) break;
        if (attempt == 2) {
          speed_note_ = "no speed search: the machine was busy with other work while sizes were timed";
          why_not = "the machine was busy with other work while sizes were timed";
          return std::nullopt;
        }
      }
      if (r.phase == kBudgetPhase) speed_note_ = "budget spent in the speed search";
      why_not = r.phase == kBudgetPhase ? "the budget ran out"
                : r.status == Status::Pass
                    ? fmt::format("{} = {} could not be timed", groups_[g].name, size)
                    : fmt::format("{} = {} did not pass ({})", groups_[g].name, size, to_string(r.status));
      if (r.status != Status::Pass || !r.target_time || !r.reference_time || !(r.reference_time->median_s > 0))
        return std::nullopt;
      const double ratio = r.target_time->median_s / r.reference_time->median_s;
      timed[size] = std::move(r);
      return ratio;
    };
    const std::optional<Cliff> c = find_cliff(sizes, ratio_at, options_.cliff_factor);
    if (!c) {
      if (!speed_note_.empty()) return std::nullopt;
      continue;
    }
    ExploreFinding f;
    f.base = base_;
    f.id = id_at(with(declared_, g, c->first_slow));
    f.result = timed[c->first_slow];
    f.status = f.result.status;  // a pass: the results are right, only the time is not
    f.result.speed_class = SpeedClass::Slower;
    f.dimension = groups_[g].name;
    f.first_failing = c->first_slow;
    f.last_passing = c->last_fast;
    f.pattern = "cliff";
    f.summary = fmt::format(
        "{} from {} = {}: the target takes {:.1f}x the CPU's time there, {:.1f}x at {} (a cliff: more than {:g}x "
        "between neighbouring sizes){}",
        c->bisected ? "slower" : "slower somewhere", f.dimension, c->first_slow, c->slow_ratio, c->fast_ratio,
        c->last_fast, options_.cliff_factor, c->bisected ? "" : "; the exact size is not known: " + why_not);
    // Cut short, the case says why (a busy machine's run is worth repeating; the finding stands).
    if (!c->bisected) cut_short_ = "speed search cut short: " + why_not;
    f.message = f.result.message;
    f.result.speed_note = f.summary;
    return f;
  }
  return std::nullopt;
}

// The passing size variant (declared layouts) with the largest target peak within the repeat
// probe's bounds (its peak and how long it took once): a leak in proportion to the tensors shows
// most there. The declared case when none.
std::string CaseExplorer::repeat_variant() const {
  std::string best = base_;
  std::int64_t most = -1;
  for (const auto& [id, r] : seen_) {
    const size_t at = id.find(kVariantMark);
    if (at == std::string::npos || id.find('+', at) != std::string::npos || id.find(kProbeMark) != std::string::npos ||
        r.status != Status::Pass || !r.memory || r.memory->peak_allocated > explore_detail::kRepeatPeakBytes ||
        r.worker_s > explore_detail::kRepeatVariantSeconds)
      continue;
    if (r.memory->peak_allocated > most) most = r.memory->peak_allocated, best = id;
  }
  return best;
}

std::optional<ExploreFinding> CaseExplorer::explore_state(bool* budget_spent) {
  reserve_ = 0;
  const explore_detail::ProbePlan plan{base_, repeat_variant(), !random_};
  return explore_detail::explore_state_probes(
      plan, [this](const std::string& id) { return trial_id(id); }, budget_spent);
}

std::vector<std::int64_t> CaseExplorer::shrink(std::vector<std::int64_t> sizes, std::optional<size_t> keep) {
  std::vector<size_t> others;
  for (size_t h = 0; h < groups_.size(); ++h)
    if (h != keep) others.push_back(h);
  std::sort(others.begin(), others.end(), [&](size_t a, size_t b) { return declared_[a] > declared_[b]; });
  for (size_t h : others) {
    std::vector<std::int64_t> tries = {1, 2, declared_[h] / 2};
    for (std::int64_t v : tries) {
      if (v < 1 || v >= sizes[h]) continue;
      if (trial(with(sizes, h, v)).kind == Kind::Fail) {
        sizes[h] = v;
        break;
      }
    }
  }
  return sizes;
}

std::optional<ExploreFinding> CaseExplorer::explore_layouts(bool* budget_spent) {
  for (size_t i = 0; i < inputs_.size(); ++i) {
    for (const InputVariant& candidate : layout_candidates(inputs_, i)) {
      layouts_[i] = candidate;
      const Trial t = trial(declared_);
      if (t.kind == Kind::Fail) return minimise_layout(i, t.result);
      if (t.kind == Kind::Budget) {
        *budget_spent = true;
        layouts_[i] = {};
        return std::nullopt;
      }
    }
    layouts_[i] = {};
  }
  return std::nullopt;
}

// Layouts at other sizes: each input's layouts again, with one dimension at the largest size it
// passed at in its declared layout and at the next prime above its declared size (an odd size
// whose tiles end partway), every other dimension as declared. A failure is shrunk and bisected in
// that dimension with the layout kept, so the finding says both: "with a transposed: wrong from …".
std::optional<ExploreFinding> CaseExplorer::explore_layouts_at_sizes(bool* budget_spent) {
  const auto& passed = passed_;
  for (size_t g = 0; g < groups_.size(); ++g) {
    std::vector<std::int64_t> sizes;
    if (!passed[g].empty() && passed[g].rbegin()->first > declared_[g]) sizes.push_back(passed[g].rbegin()->first);
    const std::int64_t prime = next_prime(declared_[g]);
    if (passed[g].count(prime) && (sizes.empty() || sizes.front() != prime)) sizes.push_back(prime);
    for (std::int64_t size : sizes) {
      for (size_t i = 0; i < inputs_.size(); ++i) {
        for (const InputVariant& candidate : layout_candidates(inputs_, i)) {
          layouts_[i] = candidate;
          const Trial t = trial(with(declared_, g, size));
          if (t.kind == Kind::Budget) {
            *budget_spent = true;
            layouts_[i] = {};
            return std::nullopt;
          }
          if (t.kind != Kind::Fail) continue;
          ExploreFinding f = shrink_and_bisect(g, size, passed[g]);
          const std::string& name = inputs_[i].name;
          f.layout = name + " " + layout_words(candidate.layout, candidate.storage_offset, inputs_[i].layout);
          f.summary = "with " + f.layout + ": " + f.summary;
          layouts_[i] = {};
          return f;
        }
        layouts_[i] = {};
      }
    }
  }
  return std::nullopt;
}

// A layout variant of input `input` fails: sizes shrunk, then the smallest storage offset that
// still fails, then whether the layout matters at all (the declared one at that offset), and the
// neighbouring offsets, so the finding says what exactly goes wrong.
ExploreFinding CaseExplorer::minimise_layout(size_t input, const CaseResult& first) {
  const std::vector<std::int64_t> sizes = shrink(declared_, std::nullopt);
  InputVariant& lay = layouts_[input];
  auto fails_with = [&](InputLayout layout, std::int64_t off) {
    const InputVariant keep = lay;
    lay.layout = layout;
    lay.storage_offset = off;
    const Kind k = trial(sizes).kind;
    lay = keep;
    return k;
  };
  for (std::int64_t off = 0; off < lay.storage_offset; ++off)
    if (fails_with(lay.layout, off) == Kind::Fail) {
      lay.storage_offset = off;
      break;
    }
  if (lay.layout != InputLayout::Declared && fails_with(InputLayout::Declared, lay.storage_offset) == Kind::Fail)
    lay.layout = InputLayout::Declared;
  const Trial at = trial(sizes);
  ExploreFinding f;
  f.base = base_;
  f.id = id_at(sizes);
  f.result = at.kind == Kind::Fail ? at.result : first;
  f.status = f.result.status;
  f.message = f.result.message;
  f.pattern = "layout";
  const std::string& name = inputs_[input].name;
  f.dimension = name + " storage offset";
  f.first_failing = lay.storage_offset;
  const std::string words = layout_words(lay.layout, lay.storage_offset, inputs_[input].layout);
  f.layout = name + " " + words;
  std::vector<std::string> notes;
  if (lay.storage_offset > 0) {
    const Kind zero = fails_with(lay.layout, 0), next = fails_with(lay.layout, lay.storage_offset + 1),
               after = fails_with(lay.layout, lay.storage_offset + 2);
    if (zero == Kind::Pass) notes.push_back("at offset 0 it passes");
    if (next == Kind::Pass && after == Kind::Fail)
      notes.push_back(fmt::format("{} passes and {} fails ({} offsets)", lay.storage_offset + 1, lay.storage_offset + 2,
                                  lay.storage_offset % 2 ? "odd" : "even"));
    else if (next != Kind::Invalid)
      notes.push_back(fmt::format("offset {} {}", lay.storage_offset + 1, next == Kind::Fail ? "fails too" : "passes"));
  }
  if (lay.layout != InputLayout::Declared) {
    const Kind own = fails_with(InputLayout::Declared, lay.storage_offset);
    if (own == Kind::Pass)
      notes.push_back(fmt::format("{} {} passes", name,
                                  layout_words(InputLayout::Declared, lay.storage_offset, inputs_[input].layout)));
  }
  f.summary = fmt::format("wrong for {} {}", name, words);
  for (size_t k = 0; k < notes.size(); ++k) f.summary += (k ? ", " : "; ") + notes[k];
  return f;
}

ExploreFinding CaseExplorer::shrink_and_bisect(size_t g, std::int64_t failing,
                                               const std::map<std::int64_t, bool>& passed) {
  const std::vector<std::int64_t> sizes = shrink(with(declared_, g, failing), g);
  // A passing size of g at the shrunk sizes: the passing ones nearest below the failure first.
  std::vector<std::int64_t> below, above;
  for (const auto& [v, ok] : passed) (v < failing ? below : above).push_back(v);
  if (declared_[g] < failing)
    below.push_back(declared_[g]);
  else
    above.push_back(declared_[g]);
  std::sort(below.rbegin(), below.rend());
  std::sort(above.begin(), above.end());
  std::optional<std::int64_t> pass;
  bool budget = false;
  for (const auto* side : {&below, &above}) {
    for (std::int64_t v : *side) {
      const Trial t = trial(with(sizes, g, v));
      budget |= t.kind == Kind::Budget;
      if (t.kind == Kind::Pass) {
        pass = v;
        break;
      }
    }
    if (pass || budget) break;
  }
  std::int64_t hi = failing;  // fails
  ExploreFinding f;
  f.base = base_;
  f.dimension = groups_[g].name;
  // The finding's id and verdict: the failing size's, run once more.
  auto fail_at = [&](std::int64_t size) {
    const Trial t = trial(with(sizes, g, size));
    f.id = id_at(with(sizes, g, size));
    f.status = t.result.status;
    f.message = t.result.message;
    f.result = t.result;
    f.first_failing = size;
  };
  if (!pass) {
    fail_at(hi);
    f.pattern = budget ? "unbisected" : "every-size";
    f.summary = budget ? fmt::format("wrong at {} = {} (budget spent before a passing size was found)", f.dimension, hi)
                       : fmt::format("wrong at {} = {} and at every other size tried", f.dimension, hi);
    return f;
  }
  std::int64_t lo = *pass;
  // Bisect between the passing size and the failing one until they are neighbours.
  while (std::abs(hi - lo) > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    const Trial t = trial(with(sizes, g, mid));
    if (t.kind == Kind::Fail)
      hi = mid;
    else if (t.kind == Kind::Pass)
      lo = mid;
    else {
      budget = true;
      break;
    }
  }
  fail_at(hi);
  f.last_passing = lo;
  if (budget) {
    f.pattern = "unbisected";
    f.summary =
        fmt::format("wrong at {} = {}, passes at {}; the budget ran out before the threshold", f.dimension, hi, lo);
    return f;
  }
  const bool upward = lo < hi;
  const std::int64_t beyond = upward ? hi + 1 : hi - 1;
  const Trial next = beyond >= 1 ? trial(with(sizes, g, beyond)) : Trial{Kind::Invalid, {}};
  if (next.kind == Kind::Pass && upward && is_power_of_two(hi) && hi >= 4) {
    const Trial twice = trial(with(sizes, g, 2 * hi));
    const Trial half = trial(with(sizes, g, hi / 2));
    if (twice.kind == Kind::Fail && half.kind == Kind::Pass) {
      f.pattern = "powers-of-two";
      f.summary = fmt::format("wrong at {} = {} (a power of two) and at {}; {}, {} and {} pass", f.dimension, hi,
                              2 * hi, lo, beyond, hi / 2);
      return f;
    }
  }
  if (next.kind == Kind::Pass) {
    f.pattern = "at";
    f.summary = fmt::format("wrong at {} = {} only; {} and {} pass", f.dimension, hi, lo, beyond);
  } else {
    f.pattern = upward ? "from" : "up-to";
    f.summary =
        fmt::format("wrong {} {} = {}; {} = {} passes{}", upward ? "from" : "up to", f.dimension, hi, f.dimension, lo,
                    next.kind == Kind::Fail ? fmt::format(" ({} fails too)", beyond) : std::string());
  }
  return f;
}

}  // namespace

bool explore_failure(const CaseResult& r) {
  if (r.status == Status::Pass || r.status == Status::Skip) return false;
  // A CPU 0-dim operand that PyTorch's own device checks refuse ("Expected all tensors to be on the
  // same device" in TensorIterator and the dispatcher, "Input and parameter tensors are not at the
  // same device" in the RNN layers) is an op the variant does not apply to, not a bug of the
  // target's kernel.
  if (r.status == Status::Error && r.message.find("same device") != std::string::npos &&
      r.id.find(std::string(1, kVariantMark)) != std::string::npos && r.id.find("+cpu") != std::string::npos)
    return false;
  // A variant the CPU reference (or mpscheck's own comparison) could not run is not a finding.
  return r.phase.empty() || phase_is_target(r.phase);
}

ExploreOutcome explore_cases(const std::vector<RegisteredWorkload>& cases, const std::vector<std::string>& replay,
                             const RunCase& run, const ExploreOptions& options, std::ostream& log,
                             const std::function<bool()>& stop) {
  ExploreOutcome out;
  const auto run_start = Clock::now();
  for (const RegisteredWorkload& w : cases) {
    if (seconds_since(run_start) > options.run_budget_s || (stop && stop())) {
      out.run_budget_spent = seconds_since(run_start) > options.run_budget_s;
      out.cases.push_back({w.workload->id(), 0, 0, "not explored: the run's budget was spent"});
      continue;
    }
    CaseExplorer explorer(w, run, options, run_start, stop);
    std::string sizes;
    for (const auto& g : explorer.groups())
      sizes += fmt::format("{}{} = {}", sizes.empty() ? "" : ", ", g.name, g.declared);
    log << "explore " << w.workload->id() << (sizes.empty() ? "" : " (" + sizes + ")") << std::endl;
    ExploredCase record;
    std::optional<ExploreFinding> f = explorer.explore(record);
    out.variants += record.variants;
    if (f) {
      log << fmt::format("  FINDING {}: {}\n    {}: {}\n", f->id, f->summary, to_string(f->status),
                         f->message.substr(0, 300));
      out.findings.push_back(std::move(*f));
    }
    log << fmt::format("  {} variants, {:.1f} s{}\n", record.variants, record.seconds,
                       record.note.empty() ? "" : "; " + record.note)
        << std::flush;  // a case can take its whole budget: show each as it ends, also into a pipe
    out.cases.push_back(std::move(record));
  }
  for (const std::string& id : replay) {
    const auto start = Clock::now();
    const CaseResult r = run(id, 0);  // a replay has the op's own timeout
    ++out.variants;
    const std::string base = parse_variant_id(id) ? parse_variant_id(id)->base : id;
    log << "replay " << id << ": " << to_string(r.status) << '\n';
    ExploredCase record{id, 1, seconds_since(start), explore_failure(r) ? "" : "replayed: no finding",
                        r.status == Status::Pass || explore_failure(r)};
    if (explore_failure(r)) {
      ExploreFinding f{base, id, r.status, r.message, {}, 0, 0, "replayed", {}, {}, r};
      f.summary = fmt::format("replayed: {}", to_string(r.status));
      log << fmt::format("  FINDING {}: {}\n    {}\n", id, f.summary, r.message.substr(0, 300));
      out.findings.push_back(std::move(f));
    }
    out.cases.push_back(std::move(record));
  }
  return out;
}

}  // namespace mpscheck

#include "core/explore.hpp"

#include "core/explore_probes.hpp"
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

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

bool is_power_of_two(std::int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

bool is_prime(std::int64_t n) {
  if (n < 2) return false;
  for (std::int64_t d = 2; d * d <= n; ++d)
    if (n % d == 0) return false;
  return true;
}

std::int64_t next_prime(std::int64_t n) {
  std::int64_t p = n + 1;
  while (!is_prime(p)) ++p;
  return p;
}

// One declared size and every place it occurs: varied together, so operands that must agree (an
// inner dimension K, a batch) still do.
struct SizeGroup {
  std::int64_t declared = 0;
  std::vector<std::pair<size_t, size_t>> at;  // (input, dimension)
  std::string name;                           // "a[1]=b[0]"
};

std::vector<SizeGroup> size_groups(const std::vector<InputShape>& inputs) {
  std::vector<SizeGroup> groups;
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (size_t j = 0; j < inputs[i].shape.size(); ++j) {
      const std::int64_t v = inputs[i].shape[j];
      if (v < 1) continue;  // an empty dimension stays empty
      auto g = std::find_if(groups.begin(), groups.end(), [&](const SizeGroup& s) { return s.declared == v; });
      if (g == groups.end()) g = groups.insert(groups.end(), SizeGroup{v, {}, {}});
      g->at.emplace_back(i, j);
      g->name += fmt::format("{}{}[{}]", g->name.empty() ? "" : "=", inputs[i].name, j);
    }
  }
  return groups;
}

// The sizes tried for a declared size d, in order: the edge cases first (1, 2, 3, its neighbours, the
// next prime, the powers of two around it and ±1, two seeded odd draws), then d grown by powers of two.
std::vector<std::int64_t> candidate_sizes(std::int64_t d, std::mt19937_64& rng) {
  std::vector<std::int64_t> c = {1, 2, 3, d - 1, d + 1, next_prime(d)};
  std::int64_t p = 1;
  while (p * 2 <= d) p *= 2;
  for (std::int64_t q : {p, 2 * p}) c.insert(c.end(), {q - 1, q, q + 1});
  for (int k = 0; k < 2; ++k) c.push_back(static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(d + 1)) * 2 + 3);
  for (std::int64_t q = 4 * p; q <= (std::int64_t{1} << 40); q *= 2) c.push_back(q);
  std::vector<std::int64_t> out;
  std::set<std::int64_t> seen{d};
  for (std::int64_t s : c)
    if (s >= 1 && seen.insert(s).second) out.push_back(s);
  return out;
}

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ULL;
  return h;
}

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
      for (const auto& [i, j] : groups_[g].at) in[i].shape[j] = sizes[g];
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
  // Each input in other layouts and at storage offsets, at the declared sizes (explore_layouts.cpp).
  std::optional<ExploreFinding> explore_layouts(bool* budget_spent);
  // Each size group through its candidates, round robin; a failure shrunk and bisected.
  std::optional<ExploreFinding> explore_sizes(bool* budget_spent);
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
  // Kept for the state probes: a fifth of the case's budget, at most 8 s.
  double reserve_ = std::min(options_.case_budget_s / 5, 8.0);
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
  if (!f && !(stop_ && stop_())) {
    bool probes_spent = false;
    const auto probes_start = Clock::now();
    f = explore_state(&probes_spent);
    record.probe_seconds = seconds_since(probes_start);
    budget_spent |= probes_spent;
  }
  if (f || !budget_spent) {
    done({});
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
  std::vector<std::map<std::int64_t, bool>> passed(groups_.size());
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

// The layouts tried for one input, in order: its own at storage offsets 1, 2 and 3 (odd, even,
// odd), then transposed (2+ dimensions), channels_last (4) and contiguous, each at offset 0 and 1
// (channels_last at 2 too), skipping the layout it is declared in.
std::vector<InputVariant> layout_candidates(const InputShape& in) {
  std::vector<InputVariant> c;
  const size_t n = in.shape.size();
  if (n == 0 || std::any_of(in.shape.begin(), in.shape.end(), [](std::int64_t d) { return d < 1; })) return c;
  for (std::int64_t off : {1, 2, 3}) c.push_back({{}, InputLayout::Declared, off});
  if (n >= 2 && in.layout != "transposed")
    for (std::int64_t off : {0, 1}) c.push_back({{}, InputLayout::Transposed, off});
  if (n == 4 && in.layout != "channels_last")
    for (std::int64_t off : {0, 1, 2}) c.push_back({{}, InputLayout::ChannelsLast, off});
  if (!in.layout.empty() && in.layout != "contiguous")
    for (std::int64_t off : {0, 1}) c.push_back({{}, InputLayout::Contiguous, off});
  return c;
}

std::optional<ExploreFinding> CaseExplorer::explore_layouts(bool* budget_spent) {
  for (size_t i = 0; i < inputs_.size(); ++i) {
    for (const InputVariant& candidate : layout_candidates(inputs_[i])) {
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

// The structure rule: see structure.hpp for what it tests and kStructure for its numbers.
#include "checks/structure.hpp"

#include "checks/chunks.hpp"
#include "checks/compare.hpp"

#include <ATen/core/grad_mode.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

namespace mpscheck {

namespace {

// One group's sums over its elements' unit errors, each two ways (kinds): as signed values (an
// error added, a bias added twice) and signed by gold's sign, as magnitudes (an error of scale, a row
// 4% low, whose values go up where gold is negative). Each: paired (target - honest side), the
// target's and the honest side's against gold, the baseline's against gold, and the witness's
// against the baseline (0 without a witness).
constexpr int kKinds = 2;
struct GroupSums {
  std::int64_t n = 0;
  std::array<double, kKinds> paired{}, paired_sq{}, target{}, honest{}, base{}, witness{};
  // The squares of the target's, the honest side's and the baseline's unit errors (the scatter test).
  double target_sq = 0, honest_sq = 0, base_sq = 0;
  void merge(const GroupSums& o) {
    n += o.n;
    target_sq += o.target_sq, honest_sq += o.honest_sq, base_sq += o.base_sq;
    for (int k = 0; k < kKinds; ++k) {
      paired[k] += o.paired[k], paired_sq[k] += o.paired_sq[k], target[k] += o.target[k];
      honest[k] += o.honest[k], base[k] += o.base[k], witness[k] += o.witness[k];
    }
  }
  // The honest side's own structure over the group: the larger of its two means.
  double honest_structure(int k) const {
    return n == 0 ? 0.0 : std::max(std::abs(base[k]), std::abs(witness[k])) / static_cast<double>(n);
  }
};

// A partition of the output into groups, and how a group is named in a message.
struct Partition {
  std::vector<GroupSums> groups;
  std::function<std::string(std::size_t)> name;
  bool scatter = false;  // judged by the scatter test too (the whole output, the bands of magnitudes)
};

double smallest_normal(c10::ScalarType dtype) {
  if (dtype == c10::kHalf) return static_cast<double>(std::numeric_limits<c10::Half>::min());
  if (dtype == c10::kBFloat16) return static_cast<double>(std::numeric_limits<c10::BFloat16>::min());
  return static_cast<double>(std::numeric_limits<float>::min());
}

// The z for which a standard normal lies beyond +-z with probability p.
double two_sided_z(double p) {
  double lo = 0, hi = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (std::erfc(mid / std::sqrt(2.0)) > p ? lo : hi) = mid;
  }
  return hi;
}

std::string shape_slice(std::int64_t dim, std::int64_t ndim, std::int64_t index) {
  std::string s = "[";
  for (std::int64_t d = 0; d < ndim; ++d) s += (d ? ", " : "") + (d == dim ? std::to_string(index) : std::string(":"));
  return s + "]";
}

// Slices are named by their index along one dimension; a matrix's as rows and columns, the
// second dimension of a 4-D output as its channels.
std::string slice_name(std::int64_t dim, std::int64_t ndim, std::int64_t index) {
  const std::string at = shape_slice(dim, ndim, index);
  if (ndim == 2) return fmt::format("{} {} ({})", dim == 0 ? "row" : "column", index, at);
  if (ndim == 4 && dim == 1) return fmt::format("channel {} ({})", index, at);
  if (ndim >= 3 && dim == 0) return fmt::format("batch item {} ({})", index, at);
  return fmt::format("slice {}", at);
}

std::string magnitude_text(double x) { return fmt::format("{:.3g}", x); }

// Magnitude bins: one per binade of |gold| (exact zeros in bin 0).
constexpr int kBinOffset = 1100, kBins = 2200;
int bin_of(double g) { return g == 0 ? 0 : std::clamp(std::ilogb(g) + kBinOffset, 1, kBins - 1); }
double bin_low(int bin) { return bin == 0 ? 0.0 : std::ldexp(1.0, bin - kBinOffset); }

// The magnitude partition: binades merged upward into bands of at least min_group elements, then
// for each band edge the elements below it (the smallest) and those at or above it (the largest).
Partition magnitude_partition(const std::vector<GroupSums>& bins) {
  std::vector<GroupSums> bands;
  std::vector<std::pair<int, int>> edges;  // first and last bin of each band
  GroupSums acc;
  int first = -1;
  for (int k = 0; k < kBins; ++k) {
    if (bins[k].n == 0) continue;
    if (first < 0) first = k;
    acc.merge(bins[k]);
    if (acc.n < kStructure.min_group) continue;
    bands.push_back(acc), edges.emplace_back(first, k);
    acc = GroupSums{}, first = -1;
  }
  if (acc.n > 0 && !bands.empty()) bands.back().merge(acc), edges.back().second = kBins - 1;
  Partition p;
  std::vector<std::string> names;
  for (std::size_t i = 0; i < bands.size(); ++i) {
    p.groups.push_back(bands[i]);
    names.push_back(fmt::format("the elements of magnitude {} to {}", magnitude_text(bin_low(edges[i].first)),
                                magnitude_text(bin_low(edges[i].second + 1))));
  }
  GroupSums below;
  for (std::size_t i = 0; i + 1 < bands.size(); ++i) {
    below.merge(bands[i]);
    GroupSums above;
    for (std::size_t j = i + 1; j < bands.size(); ++j) above.merge(bands[j]);
    const std::string edge = magnitude_text(bin_low(edges[i + 1].first));
    p.groups.push_back(below), names.push_back("the smallest elements, of magnitude below " + edge);
    p.groups.push_back(above), names.push_back("the largest elements, of magnitude " + edge + " and above");
  }
  p.name = [names](std::size_t g) { return names[g]; };
  p.scatter = true;
  return p;
}

// Blocks in row-major order: the smallest, then each size twice the last while two fit.
std::vector<Partition> block_partitions(const std::vector<GroupSums>& smallest, std::int64_t n) {
  std::vector<Partition> out;
  std::vector<GroupSums> level = smallest;
  for (std::int64_t size = kStructure.min_block; 2 * size <= n; size *= 2) {
    Partition p;
    p.groups = level;
    p.name = [size, n](std::size_t g) {
      const std::int64_t begin = static_cast<std::int64_t>(g) * size;
      return fmt::format("elements {} to {} in row-major order", begin, std::min(begin + size, n) - 1);
    };
    out.push_back(std::move(p));
    std::vector<GroupSums> next((level.size() + 1) / 2);
    for (std::size_t g = 0; g < level.size(); ++g) next[g / 2].merge(level[g]);
    level = std::move(next);
  }
  return out;
}

// Pass 1: every element's unit errors, added to its group in each partition. Elements where any
// side is non-finite take no part (the other rules judge them).
class UnitErrors {
 public:
  UnitErrors(const at::Tensor& gold, const at::Tensor& target, const at::Tensor& baseline, const at::Tensor& witness,
             c10::ScalarType dtype, const StructureOptions& options)
      : dtype_(dtype),
        shape_(gold.sizes().vec()),
        n_(gold.numel()),
        witnessed_(witness.defined()),
        by_unit_(options.training_state) {
    g_ = gold.detach().to(at::kCPU).reshape({-1});
    t_ = target.detach().to(at::kCPU).reshape({-1});
    b_ = baseline.defined() ? baseline.detach().to(at::kCPU).reshape({-1}) : g_;
    w_ = witnessed_ ? witness.detach().to(at::kCPU).reshape({-1}) : at::Tensor();
    const bool sized = options.magnitude.defined() && options.magnitude.sizes() == gold.sizes();
    m_ = sized ? options.magnitude.detach().to(at::kCPU).reshape({-1}) : at::Tensor();
    unit_ = 2 * unit_roundoff(dtype);
    const double fraction = by_unit_ ? kStructure.state_floor_fraction : kStructure.floor_fraction;
    floor_ = std::max({fraction * finite_rms(g_), smallest_normal(dtype), options.floor});
    for (std::size_t d = 0; d < shape_.size(); ++d) {
      std::int64_t inner = 1;
      for (std::size_t e = d + 1; e < shape_.size(); ++e) inner *= shape_[e];
      inner_.push_back(inner);
      slices_.emplace_back(shape_[d] >= 2 && n_ / shape_[d] >= kStructure.min_group ? shape_[d] : 0);
    }
    blocks_.resize(static_cast<std::size_t>((n_ + kStructure.min_block - 1) / kStructure.min_block));
    bins_.resize(kBins);
  }
  void scan();
  std::vector<Partition> partitions() const;
  bool witnessed() const { return witnessed_; }

 private:
  double clipped(double units) const { return std::clamp(units, -kStructure.clip_units, kStructure.clip_units); }
  void add(std::int64_t at, double g, double t, double b, double w, double m);

  c10::ScalarType dtype_;
  std::vector<std::int64_t> shape_, inner_;
  std::int64_t n_;
  bool witnessed_, by_unit_;
  at::Tensor g_, t_, b_, w_, m_;
  double unit_ = 0, floor_ = 0;
  GroupSums whole_;
  std::vector<std::vector<GroupSums>> slices_;
  std::vector<GroupSums> blocks_, bins_;
};

void UnitErrors::add(std::int64_t at, double g, double t, double b, double w, double m) {
  if (!std::isfinite(g) || !std::isfinite(t) || !std::isfinite(b) || !std::isfinite(w)) return;
  // The spacing of the dtype at the element (at the floor's, below it; at its parameter's, for an update).
  const double magnitude = std::max({std::abs(g), floor_, std::isfinite(m) ? std::abs(m) : 0.0});
  const double spacing = std::ldexp(unit_, std::ilogb(magnitude));
  const double honest = witnessed_ ? w : b;
  GroupSums e;
  e.n = 1;
  for (int k = 0; k < kKinds; ++k) {
    const double sign = k == 1 && g < 0 ? -1.0 : 1.0;
    e.paired[k] = clipped(sign * (t - honest) / spacing);
    e.paired_sq[k] = e.paired[k] * e.paired[k];
    e.target[k] = clipped(sign * (t - g) / spacing);
    e.honest[k] = clipped(sign * (honest - g) / spacing);
    e.base[k] = clipped(sign * (b - g) / spacing);
    e.witness[k] = witnessed_ ? clipped(sign * (w - b) / spacing) : 0.0;
  }
  e.target_sq = e.target[0] * e.target[0], e.honest_sq = e.honest[0] * e.honest[0], e.base_sq = e.base[0] * e.base[0];
  whole_.merge(e);
  for (std::size_t d = 0; d < shape_.size(); ++d)
    if (!slices_[d].empty()) slices_[d][static_cast<std::size_t>((at / inner_[d]) % shape_[d])].merge(e);
  blocks_[static_cast<std::size_t>(at / kStructure.min_block)].merge(e);
  bins_[bin_of(by_unit_ ? magnitude : std::abs(g))].merge(e);
}

void UnitErrors::scan() {
  using chunks::kChunk;
  auto chunk = [&](const at::Tensor& x, std::int64_t begin, std::int64_t len, bool round) {
    return chunks::as_double(x, begin, len, round ? dtype_ : c10::ScalarType::Undefined);
  };
  for (std::int64_t begin = 0; begin < n_; begin += kChunk) {
    const std::int64_t len = std::min(kChunk, n_ - begin);
    // The baseline is float32 from rounded inputs: rounded to the dtype here, as the target's output is.
    const at::Tensor gc = chunk(g_, begin, len, false), tc = chunk(t_, begin, len, false),
                     bc = chunk(b_, begin, len, true), wc = witnessed_ ? chunk(w_, begin, len, false) : bc;
    const at::Tensor mc = m_.defined() ? chunk(m_, begin, len, false) : at::Tensor();
    const double *g = gc.const_data_ptr<double>(), *t = tc.const_data_ptr<double>(), *b = bc.const_data_ptr<double>(),
                 *w = wc.const_data_ptr<double>(), *m = mc.defined() ? mc.const_data_ptr<double>() : nullptr;
    for (std::int64_t i = 0; i < len; ++i) add(begin + i, g[i], t[i], b[i], w[i], m ? m[i] : 0.0);
  }
}

std::vector<Partition> UnitErrors::partitions() const {
  std::vector<Partition> out;
  out.push_back(Partition{{whole_}, [](std::size_t) { return std::string("the whole output"); }, true});
  const auto ndim = static_cast<std::int64_t>(shape_.size());
  for (std::size_t d = 0; d < shape_.size(); ++d) {
    if (slices_[d].empty()) continue;
    const auto dim = static_cast<std::int64_t>(d);
    out.push_back(Partition{
        slices_[d], [dim, ndim](std::size_t g) { return slice_name(dim, ndim, static_cast<std::int64_t>(g)); }});
  }
  // Training state: no blocks in memory order (a weight gradient's columns repeat where a pooled
  // input repeats, and a block of 32 copies of one element is one element, not 32).
  if (!by_unit_)
    for (auto& p : block_partitions(blocks_, n_)) out.push_back(std::move(p));
  out.push_back(magnitude_partition(bins_));
  return out;
}

// Pass 2: each group's paired mean, of each kind, against its allowance; the worst is kept.
// `shared` (training state): a group's paired mean may also reach z times kStructure.state_paired_spread
// times the RMS of the honest side's group means over the partition.
void judge_groups(const std::vector<Partition>& partitions, double leniency, bool shared, StructureTest& s) {
  for (const auto& p : partitions)
    for (const auto& g : p.groups) s.groups += kKinds * (g.n >= kStructure.min_group);
  if (s.groups == 0) return;
  s.z = two_sided_z(kStructure.alpha / static_cast<double>(s.groups));
  double named_evidence = 0, named_excess = -1;
  for (const auto& p : partitions) {
    for (int kind = 0; kind < kKinds; ++kind) {
      ScaledSquares honest_means;
      for (const auto& g : p.groups)
        if (g.n >= kStructure.min_group) honest_means.add(g.honest_structure(kind));
      for (std::size_t k = 0; k < p.groups.size(); ++k) {
        const GroupSums& g = p.groups[k];
        if (g.n < kStructure.min_group) continue;
        const double n = static_cast<double>(g.n);
        const double mean = g.paired[kind] / n;
        const double variance = std::max(0.0, g.paired_sq[kind] / n - mean * mean) * n / (n - 1);
        const double se = std::max(std::sqrt(variance), kStructure.min_spread_units) / std::sqrt(n);
        const double honest = std::max(g.honest_structure(kind), honest_means.rms());
        const double spread = shared ? s.z * kStructure.state_paired_spread * honest_means.rms() : 0.0;
        const double effect = shared ? kStructure.state_min_effect_units : kStructure.min_effect_units;
        const double allowed = leniency * std::max({effect, s.z * se, kStructure.honest_multiplier * honest, spread});
        const double excess = std::abs(mean) / allowed;
        // The group named: of the groups beyond their allowance, the one the most evidence points
        // at (mean times root size: a whole row before the half of it a block covers); while there
        // is none, the one nearest its allowance.
        const double evidence = excess > 1 ? std::abs(mean) * std::sqrt(n) : 0.0;
        s.excess = std::max(s.excess, excess);
        if (evidence > 0 ? evidence <= named_evidence : named_evidence > 0 || excess <= named_excess) continue;
        named_evidence = evidence, named_excess = excess;
        s.where = p.name(k);
        s.count = g.n;
        s.in_magnitude = kind == 1;
        s.target_units = g.target[kind] / n;
        s.honest_units = g.honest[kind] / n;
        s.paired_units = mean;
        s.allowed_units = allowed;
      }
    }
  }
  s.ok = s.excess <= 1;
}

// The scatter test: each group of the whole output and the bands of magnitudes, its target's RMS unit
// error against the larger of the honest side's and the baseline's over the same group.
void judge_scatter(const std::vector<Partition>& partitions, double leniency, StructureTest& s) {
  s.scatter_tested = true;
  double named = -1;
  for (const auto& p : partitions) {
    if (!p.scatter) continue;
    for (std::size_t k = 0; k < p.groups.size(); ++k) {
      const GroupSums& g = p.groups[k];
      if (g.n < kStructure.min_group) continue;
      const double n = static_cast<double>(g.n);
      const double target = std::sqrt(g.target_sq / n), honest = std::sqrt(std::max(g.honest_sq, g.base_sq) / n);
      const double allowed = leniency * std::max(kStructure.scatter_min_units, kStructure.scatter_multiplier * honest);
      const double excess = target / allowed;
      if (excess <= named) continue;
      named = excess;
      s.scatter_excess = excess;
      s.scatter_where = p.name(k);
      s.scatter_count = g.n;
      s.scatter_target_units = target;
      s.scatter_honest_units = honest;
      s.scatter_allowed_units = allowed;
    }
  }
  s.scatter_ok = s.scatter_excess <= 1;
}

}  // namespace

StructureTest test_structure(const at::Tensor& gold, const at::Tensor& target, const at::Tensor& baseline,
                             const at::Tensor& witness, c10::ScalarType dtype, double leniency) {
  StructureOptions options;
  options.leniency = leniency;
  return test_structure(gold, target, baseline, witness, dtype, options);
}

StructureTest test_structure(const at::Tensor& gold, const at::Tensor& target, const at::Tensor& baseline,
                             const at::Tensor& witness, c10::ScalarType dtype, const StructureOptions& options) {
  StructureTest s;
  const bool reduced = dtype == c10::kHalf || dtype == c10::kBFloat16;
  auto usable = [&](const at::Tensor& x) {
    return x.defined() && x.sizes() == gold.sizes() && c10::isFloatingType(x.scalar_type());
  };
  if (!reduced || !usable(gold) || !usable(target) || gold.numel() < kStructure.min_group) return s;
  at::NoGradGuard no_grad;
  UnitErrors units(gold, target, usable(baseline) ? baseline : at::Tensor(), usable(witness) ? witness : at::Tensor(),
                   dtype, options);
  units.scan();
  s.measured = true;
  s.witnessed = units.witnessed();
  s.honest = options.honest;
  const std::vector<Partition> partitions = units.partitions();
  judge_groups(partitions, options.leniency, options.training_state, s);
  if (options.training_state) judge_scatter(partitions, options.leniency, s);
  return s;
}

std::string describe_structure(const StructureTest& s, const std::string& dtype) {
  const bool below = s.target_units < 0;
  return fmt::format(
      "{} ({} elements): {:.2g} units {} on average against float64; honest {} ({}) shows {:.2g} there, and the "
      "target's mean beyond it ({:+.2g}) may be at most {:.2g}",
      s.where, s.count, std::abs(s.target_units),
      s.in_magnitude ? (below ? "too small in magnitude" : "too large in magnitude") : (below ? "low" : "high"), dtype,
      !s.honest.empty() ? s.honest
      : s.witnessed     ? "the CPU's own " + dtype + " run"
                        : "float32 from " + dtype + "-rounded inputs",
      s.honest_units, s.paired_units, s.allowed_units);
}

std::string describe_scatter(const StructureTest& s) {
  return fmt::format("{} ({} elements): {:.2g} units RMS against float64, where {} shows {:.2g} (allowed {:.2g})",
                     s.scatter_where, s.scatter_count, s.scatter_target_units,
                     s.honest.empty() ? "the honest side" : s.honest, s.scatter_honest_units, s.scatter_allowed_units);
}

}  // namespace mpscheck

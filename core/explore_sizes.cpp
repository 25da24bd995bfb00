#include "core/explore_sizes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>

namespace mpscheck::explore_detail {

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

namespace {

// A tied dimension follows another; it sets none (no chains, no cycles).
bool is_tied(const InputShape& in, size_t dim) {
  return std::any_of(in.ties.begin(), in.ties.end(), [&](const SizeTie& t) { return t.dim == dim; });
}

bool is_pinned(const InputShape& in, size_t dim) {
  return std::any_of(in.ties.begin(), in.ties.end(), [&](const SizeTie& t) { return t.dim == dim && t.of.empty(); });
}

// The tie that sets inputs[i]'s dimension j from a dimension of another input, if it is a valid one.
std::optional<std::pair<SizePlace, SizePlace>> tie_of(const std::vector<InputShape>& inputs, size_t i, size_t j) {
  for (const SizeTie& t : inputs[i].ties) {
    if (t.dim != j || t.factor < 1) continue;
    for (size_t k = 0; k < inputs.size(); ++k)
      if (k != i && inputs[k].name == t.of && t.of_dim < inputs[k].shape.size() && !is_tied(inputs[k], t.of_dim) &&
          inputs[k].shape[t.of_dim] >= 1 && inputs[k].shape[t.of_dim] * t.factor == inputs[i].shape[j])
        return std::pair{SizePlace{i, j, t.factor}, SizePlace{k, t.of_dim, 1}};
  }
  return std::nullopt;
}

}  // namespace

std::vector<SizeGroup> size_groups(const std::vector<InputShape>& inputs) {
  std::vector<SizeGroup> groups;
  auto group_of = [&](std::int64_t v) {
    auto g = std::find_if(groups.begin(), groups.end(), [&](const SizeGroup& s) { return s.declared == v; });
    return g == groups.end() ? groups.insert(groups.end(), SizeGroup{v, {}, {}}) : g;
  };
  auto add = [&](SizeGroup& g, const SizePlace& p) {
    g.at.push_back(p);
    g.name += fmt::format("{}{}[{}]", g.name.empty() ? "" : "=", inputs[p.input].name, p.dim);
    if (p.factor != 1) g.name += fmt::format("/{}", p.factor);
  };
  std::vector<SizePlace> tied;
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (size_t j = 0; j < inputs[i].shape.size(); ++j) {
      const std::int64_t v = inputs[i].shape[j];
      if (v < 1) continue;  // an empty dimension stays empty
      if (is_pinned(inputs[i], j)) continue;
      if (auto tie = tie_of(inputs, i, j)) {
        tied.push_back(tie->first);
        group_of(inputs[tie->second.input].shape[tie->second.dim]);  // its group exists, in input order
        continue;
      }
      add(*group_of(v), {i, j, 1});
    }
  }
  for (const SizePlace& p : tied) add(*group_of(inputs[p.input].shape[p.dim] / p.factor), p);
  return groups;
}

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

std::vector<InputVariant> layout_candidates(const std::vector<InputShape>& inputs, size_t i) {
  const InputShape& in = inputs[i];
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
  // Beside another input, which stays on the device: alone, the op would run on the CPU. Not for an
  // input whose sizes the op ties to another's (sized_as, pinned; an RNN's weights and states): its
  // shape is part of the op's contract, and as a 0-dim tensor CPU's LSTM read memory it never owned
  // (a reference that differed from itself between runs).
  const bool tied = !in.ties.empty() || std::any_of(inputs.begin(), inputs.end(), [&](const InputShape& other) {
    return std::any_of(other.ties.begin(), other.ties.end(), [&](const SizeTie& t) { return t.of == in.name; });
  });
  if (in.floating && inputs.size() > 1 && !tied) c.push_back({{}, InputLayout::CpuScalar, 0});
  return c;
}

}  // namespace mpscheck::explore_detail

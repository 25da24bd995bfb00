#include "core/run_plan.hpp"

#include <mpscheck/dtype_names.hpp>

#include <map>
#include <set>

namespace mpscheck {

bool parse_op_id(const std::string& id, OpIdParts* parts) {
  std::vector<std::string> p;
  size_t start = 0;
  for (;;) {
    const size_t slash = id.find('/', start);
    p.push_back(id.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  if (p.size() < 5 || p.size() > 6 || p[0] != "op") return false;
  for (const auto& s : p)
    if (s.empty()) return false;
  *parts = {p[1], p[2], p[3], p[4], p.size() == 6 ? p[5] : std::string()};
  return true;
}

std::string reduced_twin_id(const std::string& id, const std::string& reduced_short) {
  OpIdParts p;
  if (reduced_short.empty() || !parse_op_id(id, &p) || p.dtype != dtype_id(c10::kFloat)) return {};
  return "op/" + p.family + '/' + p.op + '/' + reduced_short + '/' + p.variant +
         (p.direction.empty() ? "" : '/' + p.direction);
}

std::vector<bool> same_computation_twins(const std::vector<std::string>& ids, const std::string& reduced_short) {
  std::vector<bool> twin(ids.size(), false);
  const std::set<std::string> selected(ids.begin(), ids.end());
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string other = reduced_twin_id(ids[i], reduced_short);
    twin[i] = !other.empty() && selected.count(other) > 0;
  }
  return twin;
}

std::vector<bool> plan_timing(const std::vector<std::string>& ids, const std::vector<bool>& is_model, bool quick,
                              double min_time_s) {
  std::vector<bool> timed(ids.size(), min_time_s > 0);
  // OpInfo's cases (core/opinfo_cases.hpp) are verdicts only: their shapes are OpInfo's test shapes,
  // a few to a few hundred elements, whose times are a kernel launch's, not the op's.
  for (size_t i = 0; i < ids.size(); ++i) {
    OpIdParts p;
    if (!is_model[i] && parse_op_id(ids[i], &p) && p.family == "opinfo") timed[i] = false;
  }
  if (!quick || min_time_s <= 0) return timed;
  // Per op and dtype, the best representative: contiguous forward, else any forward, else the
  // first case; an id of another shape is timed on its own (nothing says what it stands for).
  auto rank = [](const OpIdParts& p) {
    const bool forward = p.direction.empty() || p.direction == "forward";
    return (p.variant == "contiguous" ? 0 : 2) + (forward ? 0 : 1);
  };
  std::map<std::string, std::pair<int, size_t>> best;  // "family/op/dtype" -> (rank, index)
  for (size_t i = 0; i < ids.size(); ++i) {
    OpIdParts p;
    if (is_model[i] || !parse_op_id(ids[i], &p) || p.family == "opinfo") continue;
    timed[i] = false;
    const std::string key = p.family + '/' + p.op + '/' + p.dtype;
    const int r = rank(p);
    auto it = best.find(key);
    if (it == best.end() || r < it->second.first) best[key] = {r, i};
  }
  for (const auto& [key, choice] : best) timed[choice.second] = true;
  return timed;
}

}  // namespace mpscheck

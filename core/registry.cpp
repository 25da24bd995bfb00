#include "core/registry.hpp"

#include "core/user_regex.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace mpscheck {

CaseFilter::CaseFilter(const std::vector<std::string>& patterns) {
  for (const auto& p : patterns) {
    const bool negative = !p.empty() && p[0] == '-';
    const std::string body = negative ? p.substr(1) : p;
    try {
      (negative ? exclude_ : include_).push_back(user_regex(body));
    } catch (const std::regex_error& e) {
      throw std::invalid_argument(fmt::format("--filter '{}' is not a valid regular expression ({})", p, e.what()));
    }
  }
}

bool CaseFilter::matches(const std::string& id) const {
  bool in = include_.empty();
  for (const auto& r : include_) in = in || std::regex_search(id, r);
  if (!in) return false;
  for (const auto& r : exclude_)
    if (std::regex_search(id, r)) return false;
  return true;
}

Registry::Registry(const std::vector<RegisteredWorkload>& workloads) {
  for (const auto& w : workloads) {
    const std::string id = w.workload->id();
    auto [it, inserted] = by_id_.emplace(id, w);
    if (!inserted && it->second.plugin == w.plugin)
      throw DuplicateCaseId(
          fmt::format("case id '{}' is provided twice by plugin '{}' ({}); the plugin must give "
                      "every case its own id",
                      id, w.plugin->name, w.plugin->path));
    if (!inserted)
      throw DuplicateCaseId(
          fmt::format("case id '{}' is provided twice: by plugin '{}' ({}) and by plugin '{}' ({}); "
                      "remove one of the two plugins or rename the case",
                      id, it->second.plugin->name, it->second.plugin->path, w.plugin->name, w.plugin->path));
  }
}

const RegisteredWorkload* Registry::find(const std::string& id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &it->second;
}

std::vector<RegisteredWorkload> Registry::select(const Selection& selection) const {
  const CaseFilter filter(selection.filters);
  const bool any_kind = !selection.ops && !selection.models;
  std::vector<RegisteredWorkload> out;
  for (const auto& [id, w] : by_id_) {
    const bool is_op = w.workload->kind() == Kind::Op;
    if (!any_kind && !((is_op && selection.ops) || (!is_op && selection.models))) continue;
    const auto tags = w.workload->tags();
    const auto tagged = [&](const char* tag) { return std::find(tags.begin(), tags.end(), tag) != tags.end(); };
    if (tagged("huge") ? !selection.huge : selection.skip_large && (tagged("large") || tagged("full-only"))) continue;
    if (filter.matches(id)) out.push_back(w);
  }
  return out;
}

}  // namespace mpscheck

// The explore run as the regular result model (every report format) and as explore.json.
#include "core/explore.hpp"

#include <fmt/format.h>

#include <map>

namespace mpscheck {

std::vector<CaseResult> explore_case_results(const ExploreOutcome& outcome) {
  std::map<std::string, const ExploreFinding*> found;  // by declared case (a replay: by its id)
  for (const auto& f : outcome.findings) found[f.pattern == "replayed" ? f.id : f.base] = &f;
  std::vector<CaseResult> out;
  for (const ExploredCase& c : outcome.cases) {
    if (auto it = found.find(c.id); it != found.end()) {
      const ExploreFinding& f = *it->second;
      CaseResult r = f.result;
      r.id = f.id;
      r.status = f.status;  // never a pass (explore_failure() made it a finding), but for a speed cliff
      r.message = f.message.empty() ? f.summary : f.summary + "; " + f.message;
      out.push_back(std::move(r));
      continue;
    }
    CaseResult r;
    r.id = c.id;
    r.kind = CaseKind::Op;
    r.status = c.explored ? Status::Pass : Status::Skip;
    r.message = c.explored ? fmt::format("explored: {} variant{}, no finding{}", c.variants, c.variants == 1 ? "" : "s",
                                         c.note.empty() ? "" : "; " + c.note)
                           : c.note;
    r.wall_s = c.seconds;
    out.push_back(std::move(r));
  }
  return out;
}

nlohmann::json explore_to_json(const ExploreOutcome& outcome, const ExploreOptions& options) {
  nlohmann::json j;
  j["explore"] = {{"seed", options.seed},
                  {"case_budget_s", options.case_budget_s},
                  {"run_budget_s", options.run_budget_s},
                  {"max_elements", options.max_elements},
                  {"variants", outcome.variants},
                  {"run_budget_spent", outcome.run_budget_spent}};
  j["cases"] = nlohmann::json::array();
  for (const auto& c : outcome.cases)
    j["cases"].push_back({{"id", c.id},
                          {"variants", c.variants},
                          {"seconds", c.seconds},
                          {"probe_seconds", c.probe_seconds},
                          {"note", c.note}});
  j["findings"] = nlohmann::json::array();
  for (const auto& f : outcome.findings)
    j["findings"].push_back({{"base", f.base},
                             {"id", f.id},
                             {"status", to_string(f.status)},
                             {"message", f.message},
                             {"dimension", f.dimension},
                             {"first_failing", f.first_failing},
                             {"last_passing", f.last_passing},
                             {"pattern", f.pattern},
                             {"layout", f.layout},
                             {"probe", f.probe},
                             {"summary", f.summary}});
  return j;
}

}  // namespace mpscheck

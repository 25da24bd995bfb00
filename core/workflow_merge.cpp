// The CI workflow's run-to-run pieces declared in core/workflow.hpp: baselines (two runs compared),
// shards, and one report from several (shards, or runners side by side as cells). Expectations
// are in core/workflow.cpp.
#include "core/workflow.hpp"

#include "reports/writers.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>

namespace mpscheck {

namespace {
std::string env_text(const nlohmann::json& env, const char* key) {
  const auto it = env.find(key);
  return it != env.end() && it->is_string() ? it->get<std::string>() : std::string();
}
}  // namespace

Comparison compare_reports(const RunReport& before, const RunReport& after, double threshold) {
  Comparison c;
  std::map<std::string, const CaseResult*> old;
  for (const auto& r : before.cases) old[r.id] = &r;
  std::set<std::string> seen;
  for (const auto& r : after.cases) {
    seen.insert(r.id);
    auto it = old.find(r.id);
    if (it == old.end()) {
      c.added.push_back(r.id);
      continue;
    }
    const CaseResult& o = *it->second;
    const bool was_bad = is_finding(o.status), is_bad = is_finding(r.status);
    if (!was_bad && is_bad)
      c.newly_failing.push_back(fmt::format("{} ({} -> {})", r.id, to_string(o.status), to_string(r.status)));
    else if (was_bad && r.status == Status::Skip)
      c.no_longer_judged.push_back(fmt::format("{} ({} -> skip: {})", r.id, to_string(o.status), r.message));
    else if (was_bad && !is_bad)
      c.newly_fixed.push_back(fmt::format("{} ({} -> {})", r.id, to_string(o.status), to_string(r.status)));
    else if (was_bad && is_bad)
      c.still_failing.push_back(r.id);
    if (o.target_time && r.target_time && o.status == Status::Pass && r.status == Status::Pass) {
      const auto& a = *o.target_time;
      const auto& b = *r.target_time;
      if (b.median_s > a.median_s * (1 + threshold) && b.p25_s > a.p75_s)
        c.speed_regressions.push_back(fmt::format("{} (target median {:.3g} ms -> {:.3g} ms, {:.2f}x slower)", r.id,
                                                  a.median_s * 1e3, b.median_s * 1e3, b.median_s / a.median_s));
      else if (a.median_s > b.median_s * (1 + threshold) && a.p25_s > b.p75_s)
        c.speed_improvements.push_back(fmt::format("{} (target median {:.3g} ms -> {:.3g} ms, {:.2f}x faster)", r.id,
                                                   a.median_s * 1e3, b.median_s * 1e3, a.median_s / b.median_s));
    }
  }
  for (const auto& [id, r] : old)
    if (!seen.count(id)) c.removed.push_back(id);
  return c;
}

std::string format_comparison(const Comparison& c, const std::string& before_name, const std::string& after_name) {
  std::string out = fmt::format("Comparing {} -> {}\n", before_name, after_name);
  auto section = [&](const char* title, const std::vector<std::string>& items) {
    out += fmt::format("{} ({})\n", title, items.size());
    for (const auto& i : items) out += "  " + i + "\n";
  };
  section("Newly failing", c.newly_failing);
  section("Newly fixed", c.newly_fixed);
  section("No longer judged (a finding is now a skip: not a fix)", c.no_longer_judged);
  section("Speed regressions", c.speed_regressions);
  section("Speed improvements", c.speed_improvements);
  out += fmt::format("Still failing: {}; added cases: {}; removed cases: {}\n", c.still_failing.size(), c.added.size(),
                     c.removed.size());
  return out;
}

Shard parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  Shard s;
  try {
    if (slash == std::string::npos) throw std::invalid_argument("");
    s.index = std::stoi(text.substr(0, slash)) - 1;
    s.total = std::stoi(text.substr(slash + 1));
  } catch (...) {
    throw std::invalid_argument(fmt::format("--shard '{}' is not I/N (e.g. 2/3: the second of three shards)", text));
  }
  if (s.total < 1 || s.index < 0 || s.index >= s.total)
    throw std::invalid_argument(fmt::format("--shard '{}': I must be between 1 and N", text));
  return s;
}

bool is_placement_flag(const std::string& flag) {
  // Every report format's flag is here (a unit test holds the list against reporters()): this file
  // is also built into the expectations fuzzer, which links no report writer.
  static const std::set<std::string> flags{"--shard",    "--report-dir", "--json", "--resume",     "--junit",
                                           "--markdown", "--html",       "--csv",  "--bug-reports"};
  return flags.count(flag) > 0;
}

namespace {

// A run's command without its program name and its placement options: what it selected and how.
std::string command_meaning(const RunReport& r) {
  std::istringstream words(r.run.value("command", ""));
  std::vector<std::string> kept;
  std::string w;
  bool first = true, skip_value = false;
  while (words >> w) {
    if (std::exchange(first, false)) continue;  // the program's own path
    if (std::exchange(skip_value, false) && w.rfind("--", 0) != 0) continue;
    const std::string flag = w.substr(0, w.find('='));
    if (!is_placement_flag(flag)) {
      kept.push_back(w);
    } else if (w.find('=') == std::string::npos && flag != "--resume") {
      skip_value = true;
    }
  }
  return fmt::format("{}", fmt::join(kept, " "));
}

// What a set of reports lacks to be one whole run: shards missing, twice or incomplete, or a
// report that is not a shard of the same run as the first. Empty when complete.
std::vector<std::string> missing_parts(const std::vector<RunReport>& reports, const std::vector<std::string>& paths) {
  std::vector<std::string> missing;
  int total = 0;
  std::map<int, std::string> seen;  // 1-based shard index -> file
  const std::string meaning = command_meaning(reports.front());
  for (size_t i = 0; i < reports.size(); ++i) {
    const nlohmann::json& run = reports[i].run;
    const std::string& path = paths[i];
    if (!run.value("complete", false))
      missing.push_back(fmt::format("{} is incomplete (its run was interrupted or did not say it finished)", path));
    if (command_meaning(reports[i]) != meaning)
      missing.push_back(fmt::format("{} ran another command than {} ('{}' against '{}')", path, paths.front(),
                                    command_meaning(reports[i]), meaning));
    const std::string shard =
        run.contains("shard") && run.at("shard").is_string() ? run.at("shard").get<std::string>() : std::string("all");
    Shard s;
    if (shard == "all") {
      s.total = 1;
    } else {
      try {
        s = parse_shard(shard);
      } catch (const std::invalid_argument&) {
        throw ReportError(fmt::format("{}: its run's shard '{}' is not I/N", path, shard));
      }
    }
    if (total == 0) total = s.total;
    if (s.total != total) {
      missing.push_back(fmt::format("{} is shard {} but {} is of {} shards", path, shard, paths.front(), total));
      continue;
    }
    if (auto [it, fresh] = seen.emplace(s.index + 1, path); !fresh)
      missing.push_back(fmt::format("shard {}/{} is both {} and {}", s.index + 1, total, it->second, path));
  }
  for (int i = 1; i <= total; ++i)
    if (!seen.count(i)) missing.push_back(fmt::format("shard {}/{} is missing", i, total));
  return missing;
}

}  // namespace

RunReport merge_reports(const std::vector<std::string>& paths) {
  if (paths.empty()) throw ReportError("merge needs at least one report: mpscheck merge A.json B.json ... -o OUT.json");
  std::vector<RunReport> reports;
  for (const auto& p : paths) {
    reports.push_back(read_json_report(p));
    const RunReport& r = reports.back();
    if (reports.size() > 1 && r.run.value("target", "") != reports.front().run.value("target", ""))
      throw ReportError(fmt::format("{} was run on target {} but {} on {}: merge shards of one run only", p,
                                    r.run.value("target", "?"), paths.front(),
                                    reports.front().run.value("target", "?")));
  }
  const std::vector<std::string> missing = missing_parts(reports, paths);
  RunReport merged;
  merged.environment = reports.front().environment;
  merged.run = reports.front().run;
  std::map<std::string, std::string> from;
  std::uint64_t selected = 0;
  for (size_t i = 0; i < reports.size(); ++i) {
    const auto it = reports[i].run.find("selected");
    if (it != reports[i].run.end() && it->is_number_unsigned()) selected += it->get<std::uint64_t>();
    for (auto& c : reports[i].cases) {
      if (auto seen = from.find(c.id); seen != from.end())
        throw ReportError(
            fmt::format("case {} is in both {} and {}: were the shards overlapping?", c.id, seen->second, paths[i]));
      from[c.id] = paths[i];
      merged.cases.push_back(std::move(c));
    }
  }
  std::sort(merged.cases.begin(), merged.cases.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  merged.run["merged_from"] = paths;
  merged.run["selected"] = selected;
  merged.run["complete"] = missing.empty();
  if (!missing.empty()) merged.run["incomplete"] = missing;
  merged.run.erase("shard");
  return merged;
}

CellMatrix merge_cells(const std::vector<std::string>& arguments, bool& unexpected) {
  if (arguments.size() < 2)
    throw ReportError(
        "merge --cells compares at least two reports: mpscheck merge --cells [NAME=]A.json [NAME=]B.json ... -o "
        "OUT.json");
  CellMatrix m;
  std::vector<RunReport> reports;
  std::map<std::string, int> names;
  unexpected = false;
  for (const auto& arg : arguments) {
    std::string name, path = arg;
    // NAME=FILE, unless the whole argument is a file (a file name may hold '=').
    if (const auto eq = arg.find('='); eq != std::string::npos && eq > 0 && arg.find('/') > eq && !std::ifstream(arg)) {
      name = arg.substr(0, eq);
      path = arg.substr(eq + 1);
    }
    RunReport r = read_json_report(path);
    Cell cell;
    cell.file = path;
    cell.target = r.run.value("target", env_text(r.environment, "target"));
    cell.os = env_text(r.environment, "os");
    cell.cpu = env_text(r.environment, "cpu");
    cell.torch = env_text(r.environment, "torch_version");
    cell.name = name.empty() ? (cell.target.empty() ? path : cell.target) : name;
    if (names[cell.name]++) {
      if (!name.empty())
        throw ReportError(fmt::format("two cells are named '{}': give each report its own NAME=", name));
      cell.name += " (" + path + ")";
    }
    unexpected = unexpected || has_unexpected(r.cases);
    m.cells.push_back(std::move(cell));
    reports.push_back(std::move(r));
  }
  std::map<std::string, CellCase> by_id;
  const size_t n = reports.size();
  for (size_t i = 0; i < n; ++i) {
    for (const auto& c : reports[i].cases) {
      CellCase& row = by_id[c.id];
      if (row.id.empty()) {
        row.id = c.id;
        row.statuses.assign(n, Status::Skip);
        row.ran.assign(n, false);
        row.messages.assign(n, "");
      }
      if (row.ran[i])
        throw ReportError(fmt::format("case {} is twice in {}: merge each runner's shards first (mpscheck merge)", c.id,
                                      m.cells[i].file));
      row.ran[i] = true;
      row.statuses[i] = c.status;
      if (is_finding(c.status)) row.messages[i] = c.message;
    }
  }
  for (auto& [id, row] : by_id) {
    row.label = cell_label(row.statuses, row.ran);
    m.cases.push_back(std::move(row));
  }
  return m;
}

}  // namespace mpscheck

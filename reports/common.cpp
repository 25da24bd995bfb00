// Helpers every report writer shares: where a case sits, how bad it is, its error figures and
// finding text, environment lines and durations. The atomic file writer is util/atomic_file.hpp.
#include "checks/memory.hpp"
#include "checks/timing.hpp"
#include "reports/escape.hpp"
#include "reports/reporter.hpp"
#include "reports/writers.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace mpscheck {

CaseName split_case_id(const CaseResult& c) {
  const std::string& id = c.id;
  const auto first = id.find('/');
  if (first == std::string::npos) return {to_string(c.kind), id};
  const std::string head = id.substr(0, first);
  if (head == "op") {
    const auto second = id.find('/', first + 1);
    if (second == std::string::npos) return {"op", id.substr(first + 1)};
    return {id.substr(0, second), id.substr(second + 1)};
  }
  return {head, id.substr(first + 1)};
}

int severity(Status s) {
  switch (s) {
    case Status::Skip: return 0;
    case Status::Pass: return 1;
    case Status::Fallback: return 2;
    case Status::Memory: return 3;
    case Status::Unsupported: return 4;
    case Status::Error: return 5;
    case Status::Mismatch: return 6;
    case Status::Nan: return 7;
    case Status::Timeout: return 8;
    case Status::Crash: return 9;
  }
  return 0;
}

std::vector<const CaseResult*> findings_worst_first(const RunReport& report) {
  std::vector<const CaseResult*> findings;
  for (const auto& c : report.cases)
    if (is_finding(c.status)) findings.push_back(&c);
  std::stable_sort(findings.begin(), findings.end(), [](const CaseResult* a, const CaseResult* b) {
    return severity(a->status) != severity(b->status) ? severity(a->status) > severity(b->status) : a->id < b->id;
  });
  return findings;
}

namespace {
// Where a case sits in its op's matrix: (group key, row, column). Op ids
// op/<family>/<op>/<dtype>/<variant>[/<direction>]; model ids model/<name>/<mode>; any other id is a
// group of its own.
struct GroupPlace {
  std::string key, row, column;
};
GroupPlace group_place(const std::string& id) {
  const std::vector<std::string> p = id_parts(id);
  if (p[0] == "op" && (p.size() == 5 || p.size() == 6))
    return {"op/" + p[1] + '/' + p[2], p[3], p.size() == 6 ? p[4] + '/' + p[5] : p[4]};
  if (p[0] == "model" && p.size() >= 3) return {id.substr(0, id.rfind('/')), "model", p.back()};
  return {id, "-", "-"};
}
}  // namespace

std::vector<RankedClass> classes_blocked_first(const RunReport& report) {
  std::vector<RankedClass> out;
  for (const auto& [name, summary] : summarize_classes(report.cases)) {
    const std::string r = summary.recommendation();
    const int rank = r == to_string(Recommendation::Blocked)        ? 0
                     : r == to_string(Recommendation::ReduceMemory) ? 1
                     : r == to_string(Recommendation::Accelerate)   ? 2
                     : r == to_string(Recommendation::KeepOnCpu)    ? 3
                                                                    : 4;
    out.push_back({name, summary, rank});
  }
  std::stable_sort(out.begin(), out.end(), [](const RankedClass& a, const RankedClass& b) { return a.rank < b.rank; });
  return out;
}

std::vector<OpGroup> findings_by_op(const RunReport& report) {
  std::map<std::string, OpGroup> groups;
  for (const auto& c : report.cases) {
    const GroupPlace place = group_place(c.id);
    OpGroup& g = groups[place.key];
    g.key = place.key;
    ++g.cases;
    if (std::find(g.rows.begin(), g.rows.end(), place.row) == g.rows.end()) g.rows.push_back(place.row);
    if (std::find(g.columns.begin(), g.columns.end(), place.column) == g.columns.end())
      g.columns.push_back(place.column);
    g.cells[{place.row, place.column}] = &c;
  }
  std::vector<OpGroup> out;
  for (const CaseResult* c : findings_worst_first(report)) {
    OpGroup& g = groups.at(group_place(c->id).key);
    if (g.findings.empty() || severity(c->status) > severity(g.worst)) g.worst = c->status;
    g.findings.push_back(c);
  }
  for (auto& [key, g] : groups)
    if (!g.findings.empty()) out.push_back(std::move(g));
  std::stable_sort(out.begin(), out.end(), [](const OpGroup& a, const OpGroup& b) {
    if (severity(a.worst) != severity(b.worst)) return severity(a.worst) > severity(b.worst);
    if (a.findings.size() != b.findings.size()) return a.findings.size() > b.findings.size();
    return a.key < b.key;
  });
  return out;
}

namespace {
// A target NaN/Inf the reference lacks counts as the largest error, whatever the finite figures say.
double max_over_outputs(const CaseResult& c, double OutputReport::*field) {
  double worst = -1;
  for (const auto& o : c.outputs) {
    const double v = o.*field;
    const bool new_non_finite = o.nan_target + o.inf_target > o.nan_reference + o.inf_reference;
    if (std::isnan(v) || new_non_finite) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, v);
  }
  return worst;
}

}  // namespace

std::string tier_name(const nlohmann::json& environment) {
  const auto it = environment.find("tier");
  return it != environment.end() && it->is_string() && !it->get<std::string>().empty() ? it->get<std::string>()
                                                                                       : "native";
}

std::string tier_sentence(const nlohmann::json& environment) {
  const std::string tier = tier_name(environment);
  if (tier == "native") return {};
  const auto why = environment.find("tier_reason");
  return fmt::format("Tier: {}{}; its findings say more about that device than about the hardware users run", tier,
                     why != environment.end() && why->is_string() ? ": " + why->get<std::string>() : std::string());
}

std::string incomplete_sentence(const RunReport& report) {
  const auto it = report.run.find("complete");
  if (it == report.run.end() || !it->is_boolean() || it->get<bool>()) return {};
  std::vector<std::string> why;
  if (const auto parts = report.run.find("incomplete"); parts != report.run.end() && parts->is_array())
    for (const auto& p : *parts)
      if (p.is_string()) why.push_back(p.get<std::string>());
  if (why.empty()) why.push_back("the run was interrupted before every selected case ran");
  return fmt::format("Incomplete: {}; these cases are not the whole run", fmt::join(why, "; "));
}

std::string shape_text(const std::vector<std::int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

double max_abs_error(const CaseResult& c) { return max_over_outputs(c, &OutputReport::max_abs); }
double max_rel_error(const CaseResult& c) { return max_over_outputs(c, &OutputReport::max_rel); }

std::string error_text(double error) {
  if (error < 0) return "-";
  return std::isfinite(error) ? format_figure(error) : "NaN/Inf";
}

std::string finding_detail(const CaseResult& c) {
  std::string d = fmt::format("{}: {}\n", to_string(c.status), c.message.empty() ? "(no message)" : c.message);
  d += fmt::format("target: {}{}\n", c.target.empty() ? "?" : c.target,
                   c.dtype.empty() ? "" : " (computed in " + c.dtype + ")");
  if (c.rtol > 0 || c.atol > 0)
    d += fmt::format("tolerance: rtol {} atol {}\n", format_figure(c.rtol), format_figure(c.atol));
  if (!c.signal.empty()) d += fmt::format("signal: {}\n", c.signal);
  if (!c.phase.empty())
    d += fmt::format("failed in the {} phase{}\n", c.phase,
                     c.phase == "target" ? "" : " (mpscheck's own run, not the target's)");
  for (const auto& o : c.outputs) {
    if (o.ok) continue;
    d += fmt::format("output {} {} {}: max abs error {}, max rel error {}, {} of {} elements outside tolerance\n",
                     o.name, shape_text(o.shape), o.target_dtype, format_figure(o.max_abs), format_figure(o.max_rel),
                     o.mismatches, o.numel);
    if (o.first_mismatch >= 0) d += fmt::format("  first mismatch at flat index {}\n", o.first_mismatch);
    d += fmt::format("  at the largest error: reference {:.7g}, target {:.7g}\n", o.reference_value, o.target_value);
    if (o.nan_target + o.inf_target + o.nan_reference + o.inf_reference > 0)
      d += fmt::format("  NaN/Inf: reference {}/{}, target {}/{}\n", o.nan_reference, o.inf_reference, o.nan_target,
                       o.inf_target);
    if (!o.note.empty()) d += fmt::format("  note: {}\n", o.note);
  }
  if (c.memory) d += fmt::format("memory: {}\n", memory_text(*c.memory));
  if (!c.tier.empty()) d += fmt::format("tier: {} (found on a device of that tier, not a native one)\n", c.tier);
  if (!c.plugin.empty()) d += fmt::format("plugin: {}\n", c.plugin);
  d += fmt::format("reproduce: mpscheck repro '{}'", c.id);
  return d;
}

std::string json_value_text(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_null()) return "-";
  if (value.is_array()) {
    std::string out;
    for (const auto& v : value) out += (out.empty() ? "" : ", ") + json_value_text(v);
    return out.empty() ? "(none)" : out;
  }
  if (value.is_object()) {
    std::string out;
    for (const auto& [k, v] : value.items()) out += (out.empty() ? "" : "; ") + k + "=" + json_value_text(v);
    return out.empty() ? "(none)" : out;
  }
  return value.dump();
}

std::vector<std::string> environment_keys(const nlohmann::json& environment) {
  static const char* const kFirst[] = {
      "torch_version", "target",  "os",   "cpu",          "cpu_kernels", "cpu_reduced_precision",
      "cores",         "threads", "blas", "accelerators", "variables",   "mpscheck_version",
      "seed"};
  std::vector<std::string> keys;
  if (!environment.is_object()) return keys;
  for (const char* k : kFirst)
    if (environment.contains(k)) keys.emplace_back(k);
  for (const auto& [k, v] : environment.items())
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  return keys;
}

std::string speed_text(const CaseResult& c) {
  if (c.speed_class == SpeedClass::None || !(c.speedup > 0)) return "-";
  if (c.speed_class != SpeedClass::Similar) return to_string(c.speed_class);
  if (c.speedup < kMinSpeedEffect && c.speedup > 1 / kMinSpeedEffect) return "similar";
  // The timing rule's speed_note is set only where a first round suggested a claim (checks/timing,
  // checks/timed_rounds): then a busy machine or a confirmation round withdrew it. With no note, the
  // first round's ranges overlapped.
  if (c.host_busy) return "similar (machine busy: not a claim)";
  if (!c.speed_note.empty()) return "similar (not confirmed on fresh instances: not a claim)";
  return "similar (noisy: not a claim)";
}

std::string format_seconds(double s) {
  if (s <= 0) return "-";
  if (s < 1e-3) return fmt::format("{:.1f} us", s * 1e6);
  if (s < 1) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.2f} s", s);
}

Reporter::Reporter(Traits traits, Render render)
    : Reporter(traits, [render](const ReportContext& context, const std::string& destination) {
        write_text_report(destination, render(context.report));
      }) {}

std::string Reporter::default_destination(const std::string& report_dir) const {
  return traits_.default_file ? report_dir + "/" + traits_.default_file : std::string();
}

}  // namespace mpscheck

#include "reports/escape.hpp"
#include "reports/reporter.hpp"
#include "reports/writers.hpp"

#include "checks/memory.hpp"
#include "checks/recommend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>

namespace mpscheck {

namespace {

constexpr std::size_t kSpeedRowsEachEnd = 10;  // top and bottom N when there are many timed cases
constexpr std::size_t kMessageLength = 140;    // code points of a message in the findings table
constexpr std::size_t kGroupRowsMax = 60;      // keeps a paste under GitHub's comment size limit
constexpr std::size_t kClassRowsMax = 40;      // workload classes listed, blocked ones first

std::string run_text(const RunReport& report, const char* key, const char* fallback) {
  if (report.run.contains(key)) return json_value_text(report.run.at(key));
  if (report.environment.contains(key)) return json_value_text(report.environment.at(key));
  return fallback;
}

// The answer first: the recommendation per workload class, blocked classes first.
std::string verdict_section(const RunReport& report) {
  std::string md;
  const std::vector<RankedClass> rows = classes_blocked_first(report);
  if (!rows.empty()) {
    int by_rank[5] = {0, 0, 0, 0, 0};
    for (const auto& c : rows) ++by_rank[c.rank];
    md += "## Verdict per workload class\n\n";
    md += fmt::format("**{} blocked, {}{} to accelerate, {} to keep on the CPU.**\n\n", by_rank[0],
                      by_rank[1] > 0 ? fmt::format("{} to reduce memory, ", by_rank[1]) : std::string(), by_rank[2],
                      by_rank[3]);
    md += "| Workload class | Recommendation | Accelerate | Keep on CPU | Blocked |\n|---|---|---:|---:|---:|\n";
    for (std::size_t i = 0; i < rows.size() && i < kClassRowsMax; ++i)
      md += fmt::format("| {} | {} | {} | {} | {} |\n", markdown_escape(rows[i].name), rows[i].summary.recommendation(),
                        rows[i].summary.accelerate, rows[i].summary.keep_on_cpu, rows[i].summary.blocked);
    if (rows.size() > kClassRowsMax)
      md += fmt::format("| … {} more classes (in the HTML report) | | | | |\n", rows.size() - kClassRowsMax);
    md += "\n";
  }
  return md;
}

// Findings grouped by op: one row per op, its statuses per dtype and its worst case.
std::string op_section(const RunReport& report, std::size_t findings) {
  std::string md;
  const std::vector<OpGroup> groups = findings_by_op(report);
  md += fmt::format("## Findings by op ({} in {} op{})\n\n", findings, groups.size(), groups.size() == 1 ? "" : "s");
  if (groups.empty()) {
    md += "None: every case passed or was skipped.\n\n";
  } else {
    md += "| Op | Worst | Findings | Statuses by dtype | Worst case | Message |\n|---|---|---:|---|---|---|\n";
    for (std::size_t i = 0; i < groups.size() && i < kGroupRowsMax; ++i) {
      const OpGroup& g = groups[i];
      std::string by_dtype;
      for (const auto& row : g.rows) {
        std::map<Status, int> n;
        for (const auto& col : g.columns)
          if (const auto it = g.cells.find({row, col}); it != g.cells.end()) ++n[it->second->status];
        std::string statuses;
        for (const auto& [st, k] : n)
          statuses += fmt::format("{}{} {}", statuses.empty() ? "" : ", ", k, to_string(st));
        by_dtype += fmt::format("{}{}: {}", by_dtype.empty() ? "" : "; ", row, statuses);
      }
      const CaseResult* worst = g.findings.front();
      md += fmt::format("| {} | {}{} | {} of {} | {} | {} | {} |\n", markdown_escape(g.key), to_string(g.worst),
                        worst->tier.empty() ? "" : " (" + worst->tier + ")", g.findings.size(), g.cases,
                        markdown_escape(by_dtype), markdown_escape(worst->id),
                        markdown_escape(shorten(worst->message, kMessageLength)));
    }
    if (groups.size() > kGroupRowsMax)
      md += fmt::format(
          "| … {} more ops with findings (least severe; every one is in the JSON and HTML reports) "
          "| | | | | |\n",
          groups.size() - kGroupRowsMax);
    md += "\n";
  }
  return md;
}

// Findings by fingerprint: one upstream report covers a group; known ones name their issue.
std::string fingerprint_section(const RunReport& report) {
  std::string md;
  const std::vector<FingerprintGroup> prints = findings_by_fingerprint(report.cases, report.known_issues);
  if (!prints.empty()) {
    const auto known = std::count_if(prints.begin(), prints.end(), [](const auto& g) { return g.known != "new"; });
    md += fmt::format("## Findings by fingerprint ({} fingerprints, {} known upstream, {} new)\n\n", prints.size(),
                      known, prints.size() - known);
    md += "| Fingerprint | Upstream | Findings | Cases |\n|---|---|---:|---|\n";
    for (std::size_t i = 0; i < prints.size() && i < kGroupRowsMax; ++i) {
      std::string ids;
      for (std::size_t k = 0; k < prints[i].findings.size() && k < 3; ++k)
        ids += (k ? ", " : "") + prints[i].findings[k]->id;
      if (prints[i].findings.size() > 3) ids += fmt::format(" and {} more", prints[i].findings.size() - 3);
      md +=
          fmt::format("| {} | {} | {} | {} |\n", markdown_escape(shorten(prints[i].fingerprint.text(), kMessageLength)),
                      markdown_escape(prints[i].known), prints[i].findings.size(), markdown_escape(ids));
    }
    if (prints.size() > kGroupRowsMax)
      md += fmt::format("| … {} more fingerprints (in the JSON report) | | | |\n", prints.size() - kGroupRowsMax);
    md += "\n";
  }
  return md;
}

// Speed of the passing cases: the fastest and the slowest few.
std::string speed_section(const RunReport& report) {
  std::string md;
  std::vector<const CaseResult*> timed;
  for (const auto& c : report.cases)
    if (c.status == Status::Pass && c.speedup > 0 && c.reference_time && c.target_time) timed.push_back(&c);
  std::stable_sort(timed.begin(), timed.end(), [](auto* a, auto* b) { return a->speedup > b->speedup; });
  md += fmt::format("## Speed of passing cases ({} timed)\n\n", timed.size());
  if (timed.empty()) {
    md += "No passing case was timed.\n\n";
  } else {
    int faster = 0, similar = 0, slower = 0;
    for (const auto* c : timed)
      (c->speed_class == SpeedClass::Faster ? faster : c->speed_class == SpeedClass::Slower ? slower : similar)++;
    md += fmt::format("Target against the CPU float32 reference, median times: {} faster, {} similar, {} slower.\n\n",
                      faster, similar, slower);
    md += "| Case | Speedup | Class | Reference | Target |\n|---|---:|---|---:|---:|\n";
    auto row = [&](const CaseResult* c) {
      const bool noisy = c->reference_time->noisy() || c->target_time->noisy();
      md += fmt::format("| {} | {}x | {}{} | {} | {} |\n", markdown_escape(c->id), format_speedup(c->speedup),
                        speed_text(*c), noisy && c->speed_class != SpeedClass::Similar ? " (noisy)" : "",
                        format_seconds(c->reference_time->median_s), format_seconds(c->target_time->median_s));
    };
    if (timed.size() <= 2 * kSpeedRowsEachEnd) {
      for (const auto* c : timed) row(c);
    } else {
      for (std::size_t i = 0; i < kSpeedRowsEachEnd; ++i) row(timed[i]);
      md += fmt::format("| … {} more … | | | | |\n", timed.size() - 2 * kSpeedRowsEachEnd);
      for (std::size_t i = timed.size() - kSpeedRowsEachEnd; i < timed.size(); ++i) row(timed[i]);
    }
    md += "\n";
  }
  return md;
}

// Memory: the cases that need the most of it on the target, against what the device recommends.
std::string memory_section(const RunReport& report) {
  std::string md;
  std::vector<const CaseResult*> measured;
  for (const auto& c : report.cases)
    if (c.memory && c.memory->peak_allocated >= 0) measured.push_back(&c);
  if (!measured.empty()) {
    std::stable_sort(measured.begin(), measured.end(),
                     [](auto* a, auto* b) { return a->memory->peak_allocated > b->memory->peak_allocated; });
    const std::int64_t max = measured.front()->memory->recommended_max;
    md += fmt::format("## Memory on the target ({} cases measured{})\n\n", measured.size(),
                      max > 0 ? ", the device recommends at most " + bytes_text(max) : std::string());
    md += "| Case | Status | Peak allocated | Driver peak | Process peak |\n|---|---|---:|---:|---:|\n";
    for (std::size_t i = 0; i < measured.size() && i < kSpeedRowsEachEnd; ++i) {
      const MemoryFigures& m = *measured[i]->memory;
      md += fmt::format("| {} | {} | {}{} | {} | {} |\n", markdown_escape(measured[i]->id),
                        to_string(measured[i]->status), bytes_text(m.peak_allocated),
                        m.peak_source == "sampled" ? " (sampled)" : "", bytes_text(m.driver_peak),
                        bytes_text(m.process_peak));
    }
    if (measured.size() > kSpeedRowsEachEnd)
      md += fmt::format("| … {} more (every case's figures are in the JSON and CSV reports) | | | | |\n",
                        measured.size() - kSpeedRowsEachEnd);
    md += "\n";
  }
  return md;
}

// The environment and the command, each value shortened.
std::string environment_section(const RunReport& report) {
  std::string md;
  md += "## Environment\n\n";
  for (const auto& key : environment_keys(report.environment))
    md += fmt::format("- **{}**: {}\n", markdown_escape(key),
                      markdown_escape(shorten(json_value_text(report.environment.at(key)), 300)));
  if (report.run.contains("command"))
    md += fmt::format("- **command**: {}\n", markdown_escape(shorten(json_value_text(report.run.at("command")), 300)));
  return md;
}

}  // namespace

std::string render_markdown(const RunReport& report) {
  const auto counts = count_by_status(report.cases);
  const std::vector<const CaseResult*> findings = findings_worst_first(report);

  std::string md =
      fmt::format("# mpscheck report: target {}, torch {}\n\n", markdown_escape(run_text(report, "target", "?")),
                  markdown_escape(run_text(report, "torch_version", "?")));
  md += fmt::format("**{} cases, {} findings.** ", report.cases.size(), findings.size());
  std::string parts;
  for (const auto& [status, n] : counts)
    parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", n, to_string(status));
  md += parts.empty() ? "No cases ran.\n\n" : parts + ".\n\n";
  if (const std::string incomplete = incomplete_sentence(report); !incomplete.empty())
    md += "**" + markdown_escape(incomplete) + ".**\n\n";

  if (report.run.contains("dtypes") && report.run.at("dtypes").is_string())
    md += markdown_escape(report.run.at("dtypes").get<std::string>()) + ".\n\n";
  md += fmt::format("Device tier: **{}**.", tier_name(report.environment));
  if (const std::string tier = tier_sentence(report.environment); !tier.empty())
    md += " " + markdown_escape(tier) + ".";
  md += "\n\n";

  md += verdict_section(report);
  md += op_section(report, findings.size());
  md += fingerprint_section(report);
  md += "| Status | Cases |\n|---|---:|\n";
  for (const auto& [status, n] : counts) md += fmt::format("| {} | {} |\n", to_string(status), n);
  md += fmt::format("| **total** | **{}** |\n\n", report.cases.size());

  md += speed_section(report);
  md += memory_section(report);
  md += environment_section(report);
  return md;
}

namespace {

// The job summary file GitHub Actions names in $GITHUB_STEP_SUMMARY, or null.
const char* step_summary() {
  const char* s = std::getenv("GITHUB_STEP_SUMMARY");
  return s && *s ? s : nullptr;
}

// To FILE, and appended to the job summary (an append, not a replacement: other steps write there too).
void write_markdown(const ReportContext& ctx, const std::string& path) {
  const std::string md = render_markdown(ctx.report);
  if (!path.empty()) write_text_report(path, md);
  if (const char* summary = step_summary()) {
    std::ofstream out(summary, std::ios::app);
    out << md << '\n';
  }
}

}  // namespace

const Reporter& markdown_reporter() {
  static const Reporter reporter({.flag = "markdown",
                                  .help = "write a Markdown summary to FILE (also appended to $GITHUB_STEP_SUMMARY)",
                                  .runs_without_destination = [] { return step_summary() != nullptr; }},
                                 write_markdown);
  return reporter;
}

}  // namespace mpscheck

#include "reports/bug_report.hpp"

#include <mpscheck/dtype_names.hpp>

#include "reports/reporter.hpp"
#include "reports/writers.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <iostream>

namespace mpscheck {

namespace {

// Keeps a message inside a Markdown table cell.
std::string cell(std::string s) {
  for (auto& ch : s)
    if (ch == '\n' || ch == '|') ch = ' ';
  return s;
}
}  // namespace

std::string case_file_name(const std::string& case_id) {
  std::string out = case_id;
  for (auto& ch : out)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '.' || ch == '_')) ch = '_';
  return out;
}

std::string render_bug_report(const std::string& case_id, const CaseResult* r, const Workload* w,
                              const nlohmann::json& env, const ReproTarget& target, const LayerScript* layer) {
  std::string md;
  const std::string device = target.device + (target.dtype == dtype_name(c10::kFloat) ? "" : " (" + target.dtype + ")");
  if (r) {
    md += fmt::format("### 🐛 Describe the bug\n\n`{}` gives **{}** on {} compared with the CPU float32 reference.\n\n",
                      case_id, to_string(r->status), r->target.empty() ? device : r->target);
    if (!r->message.empty()) md += "> " + cell(r->message) + "\n\n";
    if (r->attribution == Fragile::Dtype)
      md += fmt::format(
          "**Before filing:** the CPU's own {0} run breaks the same way here, so this is {0}'s hazard in this "
          "workload, not a bug of the target; it belongs upstream only if {0} is meant to work here.\n\n",
          r->dtype);
  } else {
    md += fmt::format(
        "### 🐛 Describe the bug\n\n`{}` on {} (no mpscheck result given: pass --from REPORT.json to include the "
        "observed values).\n\n",
        case_id, device);
  }

  const std::string script = w ? w->reproducer(target) : std::string();
  if (!script.empty()) {
    md += "Minimal reproducer (only `torch`; compares CPU float32 with the target and prints both):\n\n```python\n" +
          script + "```\n\n";
  } else if (r && !r->first_diverging_layer.empty()) {
    const std::string call =
        r->first_diverging_layer_call > 1 ? fmt::format(" (call {})", r->first_diverging_layer_call) : std::string();
    if (layer && !layer->script.empty()) {
      const std::string data = std::filesystem::path(layer->data_path).filename().string();
      md += fmt::format(
          "The model diverges first at layer `{}`{}. This op-level reproducer runs that layer's op alone, "
          "on the input and parameters the CPU float32 reference gave it, saved in `{}` (attach it: "
          "`torch.load` reads it; the script looks for it beside itself). It runs the op in float64, "
          "float32 and on the target, and says whether the target is the wrong side:\n\n```python\n{}```\n\n",
          r->first_diverging_layer, call, data, layer->script);
      md += fmt::format("The whole model case reproduces it too: `mpscheck --filter '^{}$' --target {}`.\n\n", case_id,
                        r->target);
    } else {
      md += fmt::format(
          "The model diverges first at layer `{}`{}; the mpscheck case `{}` reproduces it "
          "(`mpscheck --filter '^{}$' --target {}`).{}\n\n",
          r->first_diverging_layer, call, case_id, case_id, r->target,
          layer && !layer->missing.empty() ? " No op-level reproducer: " + cell(layer->missing) + "." : "");
    }
  } else {
    md += fmt::format("Reproduce with mpscheck: `mpscheck --filter '^{}$' --target {}`.\n\n", case_id,
                      r ? r->target : target.device);
  }

  if (r && !r->outputs.empty()) {
    md +=
        "#### Observed vs expected\n\n| output | shape | dtype (ref → target) | CPU (expected) | target (observed) | "
        "max abs | max rel | "
        "elements off |\n|---|---|---|---|---|---|---|---|\n";
    for (const auto& o : r->outputs) {
      if (o.ok && r->status != Status::Pass) continue;
      md += fmt::format("| `{}` | {} | {} → {} | {:.7g} | {:.7g} | {:.3g} | {:.3g} | {} of {} |\n", o.name,
                        shape_text(o.shape), o.reference_dtype, o.target_dtype, o.reference_value, o.target_value,
                        o.max_abs, o.max_rel, o.mismatches, o.numel);
    }
    md += fmt::format("\nTolerance: rtol {:g}, atol {:g}; seed {}.\n", r->rtol, r->atol, target.seed);
    if (r->layer)
      md += fmt::format("First diverging layer: `{}` (max abs error {:.3g}, {} of {} elements).\n", r->layer->name,
                        r->layer->max_abs, r->layer->mismatches, r->layer->numel);
    if (r->attribution != Fragile::Unknown)
      md += fmt::format("Against a CPU float64 run, the fragile side is: {}.\n",
                        r->attribution == Fragile::Dtype ? r->dtype + " itself" : to_string(r->attribution));
    md += "\n";
  }

  if (r && !r->warnings.empty()) {
    md += "LibTorch warnings raised during the case:\n\n";
    for (const auto& w : r->warnings) md += "- " + cell(w) + "\n";
    md += "\n";
  }

  md += "### Versions\n\n```\n";
  for (const auto& [key, value] : env.items()) {
    if (key == "parallel") continue;
    md += fmt::format("{}: {}\n", key, value.is_string() ? value.get<std::string>() : value.dump());
  }
  md += "```\n";
  return md;
}

namespace {

// Each finding's issue body into `dir`, made even when there is none, through the one atomic writer.
void write_bug_reports(const ReportContext& ctx, const std::string& dir) {
  if (!ctx.repro) return;  // merge: no loaded cases
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  int written = 0;
  for (const auto& c : ctx.report.cases) {
    if (!is_finding(c.status)) continue;
    const Workload* w = ctx.workload ? ctx.workload(c.id) : nullptr;
    LayerScript layer;
    if (!c.first_diverging_layer.empty() && ctx.layer_script) layer = ctx.layer_script(c, dir);
    const Fingerprint fp = fingerprint_of(c);
    write_text_report(dir + "/" + case_file_name(c.id) + ".md",
                      fmt::format("Fingerprint: `{}` ({})\n\n", fp.text(),
                                  known_text(match_known_issue(ctx.report.known_issues, fp))) +
                          render_bug_report(c.id, &c, w, ctx.report.environment, *ctx.repro, &layer));
    ++written;
  }
  // One upstream report covers a fingerprint: the index groups the files by it.
  std::string index = "# Findings by fingerprint\n\nOne upstream report covers each group.\n\n";
  for (const auto& g : findings_by_fingerprint(ctx.report.cases, ctx.report.known_issues)) {
    index += fmt::format("## `{}`\n\n{}; {} finding{}:\n\n", g.fingerprint.text(), g.known, g.findings.size(),
                         g.findings.size() == 1 ? "" : "s");
    for (const CaseResult* c : g.findings) index += fmt::format("- [{}]({}.md)\n", c->id, case_file_name(c->id));
    index += "\n";
  }
  write_text_report(dir + "/fingerprints.md", index);
  std::cerr << "mpscheck: wrote " << written << (written == 1 ? " bug report" : " bug reports") << " into " << dir
            << '\n';
}

}  // namespace

// One Markdown issue body per finding, named after the case, into a folder. Not in `merge`: a
// reproducer needs the loaded case.
const Reporter& bug_reports_reporter() {
  static const Reporter reporter({.flag = "bug-reports",
                                  .help = "write one Markdown bug report per finding into DIR",
                                  .destination = Destination::Folder,
                                  .in_merge = false},
                                 write_bug_reports);
  return reporter;
}

}  // namespace mpscheck

#include "core/commands.hpp"

#include "checks/recommend.hpp"

#include "core/case_variant.hpp"
#include "core/environment.hpp"
#include "core/execute.hpp"
#include "core/explore.hpp"
#include "core/host_text.hpp"
#include "core/layer_repro.hpp"
#include "core/probe.hpp"
#include "core/report_outputs.hpp"
#include "core/run_setup.hpp"
#include "core/worker.hpp"
#include "core/workflow.hpp"
#include "reports/bug_report.hpp"
#include "reports/cells.hpp"
#include "reports/console.hpp"
#include "reports/report.hpp"
#include "util/atomic_file.hpp"
#include "reports/version.hpp"

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <optional>
#include <unistd.h>

namespace mpscheck::app {

namespace {

// merge --cells: runners side by side, each finding labelled by where it appears.
int merge_cells_command(const Config& cfg) {
  for (const auto& [flag, path] : cfg.report_destinations)
    if (flag != "html") {
      std::cerr << "mpscheck: merge --cells writes -o JSON and --html only; drop --" << flag << '\n';
      return kExitUsage;
    }
  const std::string html = cfg.report_destinations.count("html") ? cfg.report_destinations.at("html") : "";
  for (const auto& [flag, path] :
       std::vector<std::pair<std::string, std::string>>{{"-o", cfg.output_path}, {"--html", html}}) {
    if (path.empty()) continue;
    if (auto bad = unwritable_file(flag, path)) {
      std::cerr << "mpscheck: " << *bad << '\n';
      return kExitUsage;
    }
  }
  try {
    bool unexpected = false;
    const CellMatrix m = merge_cells(cfg.arguments, unexpected);
    write_text_report(cfg.output_path, cells_to_json(m).dump(2) + "\n");
    if (!html.empty()) write_text_report(html, render_cells_html(m));
    std::map<std::string, int> counts;
    for (const auto& c : m.cases)
      if (!c.label.empty()) ++counts[c.label];
    std::cout << fmt::format("merged {} cells: {} cases; findings everywhere {}, cell-specific {}, new {}; into {}\n",
                             m.cells.size(), m.cases.size(), counts["everywhere"], counts["cell-specific"],
                             counts["new"], cfg.output_path);
    for (const auto& c : m.cases) {
      if (c.label != "cell-specific") continue;
      std::string where;
      for (size_t i = 0; i < m.cells.size(); ++i)
        if (c.ran[i])
          where += fmt::format("{}{} {}", where.empty() ? "" : ", ", m.cells[i].name, to_string(c.statuses[i]));
      std::cout << "cell-specific: " << c.id << " (" << where << ")\n";
    }
    return unexpected ? kExitFindings : kExitOk;  // the same rule as a run's, over every cell
  } catch (const ReportError& e) {
    std::cerr << "mpscheck: " << e.what() << '\n';
    return kExitUsage;
  }
}

// A model case's result for `repro` without --from: the case run here, in this process, without
// timing, for its verdict and the layer localisation names (the caller checked the target exists).
CaseResult run_for_repro(const Config& cfg, const RegisteredWorkload& w, const TargetSpec& target) {
  std::cerr << "mpscheck: running " << w.workload->id() << " on " << target.str()
            << " to find its first diverging layer (--from REPORT.json takes a run's result instead)\n";
  if (cfg.threads > 0) at::set_num_threads(cfg.threads);
  ExecuteOptions options;
  options.target = target;
  options.setup.seed = cfg.seed;
  options.setup.quick = cfg.quick;
  options.min_time_s = 0;
  return execute_case(w, options);
}

}  // namespace

int print_env(const Config& cfg) {
  if (cfg.threads > 0) at::set_num_threads(cfg.threads);
  const std::string accelerators = probed_accelerator_status(cfg);  // loads plugins: they may add a device
  auto env = collect_environment({cfg.target.str(), cfg.seed});
  env["accelerators"] = accelerators;
  for (const auto& [key, value] : env.items()) {
    if (key == "warnings") continue;
    std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    while (!text.empty() && text.back() == '\n') text.pop_back();
    std::cout << fmt::format("{:<18} {}\n", key, text);
  }
  for (const auto& w : env["warnings"]) std::cout << "warning: " << w.get<std::string>() << '\n';
  return kExitOk;
}

int compare_command(const Config& cfg) {
  try {
    const RunReport before = read_json_report(cfg.arguments[0]);
    const RunReport after = read_json_report(cfg.arguments[1]);
    const Comparison c = compare_reports(before, after);
    std::cout << format_comparison(c, cfg.arguments[0], cfg.arguments[1]);
    return c.regressed() ? kExitFindings : kExitOk;
  } catch (const ReportError& e) {
    std::cerr << "mpscheck: " << e.what() << '\n';
    return kExitUsage;
  }
}

int merge_command(const Config& cfg) {
  if (cfg.cells) return merge_cells_command(cfg);
  std::vector<std::pair<std::string, std::string>> files{{"-o", cfg.output_path}};
  for (const Reporter* r : reporters())
    if (r->in_merge() && r->destination() == Destination::File && cfg.report_destinations.count(r->flag()))
      files.emplace_back(fmt::format("--{}", r->flag()), cfg.report_destinations.at(r->flag()));
  for (const auto& [flag, path] : files) {
    if (path.empty()) continue;
    if (auto bad = unwritable_file(flag, path)) {
      std::cerr << "mpscheck: " << *bad << '\n';
      return kExitUsage;
    }
  }
  try {
    const RunReport merged = merge_reports(cfg.arguments);
    Config out = cfg;  // the merged record goes to -o
    out.report_destinations["json"] = cfg.output_path;
    const ReportContext ctx{merged, cfg.output_path, nullptr, nullptr, std::cout, false, nullptr};
    if (write_reports(out, ctx, /*merging=*/true) != Written::All) return kExitUsage;
    const auto counts = count_by_status(merged.cases);
    std::cout << fmt::format("merged {} reports: {} cases into {}\n", cfg.arguments.size(), merged.cases.size(),
                             cfg.output_path);
    if (!merged.run.value("complete", false)) {
      // A merge that lacks a shard is never green, whatever the cases it has say.
      const auto why = merged.run.at("incomplete").get<std::vector<std::string>>();
      std::cerr << fmt::format("mpscheck: merge: the run is incomplete: {}; {} marks it \"complete\": false\n",
                               fmt::join(why, "; "), cfg.output_path);
      return kExitCannotRun;
    }
    return has_unexpected(merged.cases) ? kExitFindings : kExitOk;  // the same rule as a run's
  } catch (const ReportError& e) {
    std::cerr << "mpscheck: " << e.what() << '\n';
    return kExitUsage;
  }
}

int expect_command(const Config& cfg) {
  try {
    const RunReport report = read_json_report(cfg.from_report);
    const std::string text = expectations_from_report(report, cfg.from_report);
    if (cfg.output_path.empty()) {
      std::cout << text;
    } else {
      write_text_report(cfg.output_path, text);
      std::cerr << "mpscheck: wrote " << cfg.output_path << " from " << cfg.from_report
                << "; review each line before committing it\n";
    }
    return kExitOk;
  } catch (const ReportError& e) {
    std::cerr << "mpscheck: " << e.what() << '\n';
    return kExitUsage;
  }
}

int print_reproducer(const Config& cfg, const Registry& registry) {
  const std::string& id = cfg.arguments.front();
  CaseResolver resolver(registry);  // a declared case, or a variant explore printed
  const RegisteredWorkload* w = nullptr;
  try {
    w = resolver.find(id);
  } catch (const BadVariantId& e) {
    std::cerr << "mpscheck: " << e.what() << '\n';
    return kExitUsage;
  }
  if (!w) {
    std::cerr << "mpscheck: no case '" << id << "'; list the ids with 'mpscheck --list --all'\n";
    return kExitUsage;
  }
  TargetSpec target = cfg.target;
  ReproTarget rt;
  std::optional<CaseResult> observed;
  nlohmann::json env;
  if (!cfg.from_report.empty()) {
    try {
      const RunReport from = read_json_report(cfg.from_report);
      env = from.environment;
      for (const auto& c : from.cases)
        if (c.id == id) observed = c;
      // The run's own target, seed and size, so the reproducer rebuilds what it ran.
      if (observed && !observed->target.empty()) target = parse_target(observed->target);
      rt = repro_target(target.device == "auto" ? resolve_target(target).spec : target,
                        from.run.value("seed", cfg.seed), from.run.value("quick", cfg.quick));
    } catch (const ReportError& e) {
      std::cerr << "mpscheck: " << e.what() << '\n';
      return kExitUsage;
    } catch (const std::exception& e) {
      std::cerr << "mpscheck: " << cfg.from_report << ": " << e.what() << '\n';
      return kExitUsage;
    }
    if (!observed) {
      std::cerr << "mpscheck: " << cfg.from_report << " has no case '" << id << "'\n";
      return kExitUsage;
    }
  } else {
    try {
      if (target.device == "auto") target = resolve_target(target).spec;
    } catch (const TargetUnavailable& e) {
      std::cerr << "mpscheck: " << e.what() << '\n';
      return kExitNoTarget;
    }
    rt = repro_target(target, cfg.seed, cfg.quick);
  }
  const bool model = w->workload->kind() == Kind::Model;
  if (cfg.script_only && !model) {
    const std::string script = w->workload->reproducer(rt);
    if (script.empty()) {
      std::cerr << "mpscheck: case '" << id << "' cannot describe itself as a Python reproducer; drop --script for the "
                << "bug report\n";
      return kExitUsage;
    }
    std::cout << script;
    return kExitOk;
  }
  if (model && !observed) {
    try {
      resolve_target(target);
    } catch (const TargetUnavailable& e) {
      std::cerr << "mpscheck: " << e.what() << '\n';
      return kExitNoTarget;
    }
    observed = run_for_repro(cfg, *w, target);
  }
  // A localised model finding: the layer's op alone, its tensors saved beside the script.
  std::optional<LayerScript> layer;
  if (model && observed && !observed->first_diverging_layer.empty()) {
    const std::string dir = cfg.report_dir + "/repro";
    try {
      layer = write_layer_reproducer(*w->workload, *observed, rt, dir);
    } catch (const ReportError& e) {
      std::cerr << "mpscheck: " << e.what() << '\n';
      return kExitUsage;
    }
    if (!layer->script.empty())
      std::cerr << "mpscheck: wrote the op-level reproducer of layer " << observed->first_diverging_layer << " to "
                << layer->script_path << " and its input and parameters to " << layer->data_path << '\n';
  }
  if (cfg.script_only) {
    if (!layer || layer->script.empty()) {
      const std::string why =
          !observed || observed->status == Status::Pass ? "it passes on " + rt.device + " (" + rt.dtype + ")"
          : observed->first_diverging_layer.empty()     ? "localisation named no layer (" + observed->message + ")"
                                                        : layer->missing;
      std::cerr << "mpscheck: case '" << id << "' has no op-level reproducer: " << why
                << "; drop --script for the bug report\n";
      return kExitUsage;
    }
    std::cout << layer->script;
    return kExitOk;
  }
  if (env.is_null()) env = collect_environment({target.str(), cfg.seed});
  std::cout << render_bug_report(id, observed ? &*observed : nullptr, w->workload, env, rt, layer ? &*layer : nullptr);
  return kExitOk;
}

namespace {

RunCase explore_runner(Runner& runner, const Config& cfg, std::optional<std::string>& stopped, bool timed) {
  // Each variant as a case on the one worker (verdict only, or timed too for the speed search),
  // with the op timeout, or what is left of the budget when that is shorter: a variant still
  // running then is stopped, and is no verdict.
  return [&runner, &cfg, &stopped, timed](const std::string& id, double limit_s) {
    CaseResult r;
    const bool budget_first = limit_s > 0 && limit_s < cfg.timeout_for_op();
    try {
      r = runner.run(id, budget_first ? limit_s : cfg.timeout_for_op(), timed);
      if (budget_first && r.status == Status::Timeout) {
        r.status = Status::Skip;
        r.phase = kBudgetPhase;
        r.message = fmt::format("stopped after {:.1f} s: the explore budget ran out while it ran", limit_s);
      }
    } catch (const WorkerStartError& e) {
      stopped = e.what();
      r.id = id;
      r.status = Status::Error;
      r.phase = "reference";  // not a finding: nothing ran
      r.message = e.what();
    }
    return r;
  };
}

// The regular reports of an explore run, each finding a case under its variant's id
// (explore_case_results), written as merge writes them: the formats made from results alone
// (explore prints its own console lines, and keeps no journal).
Written write_explore_reports(const Config& cfg, const ResolvedTarget& target, const ExploreOutcome& outcome,
                              const nlohmann::json& settings, CaseResolver& resolver, bool complete) {
  RunReport report;
  report.environment = collect_environment({target.spec.str(), cfg.seed});
  report.run = valid_utf8_json(nlohmann::json{{"target", target.spec.str()},
                                              {"seed", cfg.seed},
                                              {"quick", cfg.quick},
                                              {"filters", cfg.selection.filters},
                                              {"explore", settings},
                                              {"complete", complete}});
  report.cases = explore_case_results(outcome);
  // Each case gets its advice as in a run: what a user should do about a finding (a leak is
  // blocked, a cliff keeps the case on the CPU) is what the reports lead with.
  for (CaseResult& c : report.cases) recommend(c);
  const ReproTarget rt = repro_target(target.spec, cfg.seed, cfg.quick);
  const ReportContext ctx{report,
                          cfg.report_path(),
                          &rt,
                          [&](const std::string& id) -> const Workload* {
                            try {
                              const RegisteredWorkload* w = resolver.find(id);
                              return w ? w->workload : nullptr;
                            } catch (const BadVariantId&) {
                              return nullptr;
                            }
                          },
                          std::cout,
                          use_color(STDOUT_FILENO),
                          {}};
  return write_reports(cfg, ctx, /*merging=*/true);
}

}  // namespace

int explore_command(const Config& given, const Registry& registry) {
  // The speed search times many sizes per case: each side for 0.02 s (the --quick figure) unless
  // --min-time says otherwise, which keeps a timed variant near a tenth of a second. It compares
  // sizes, not parallelism: each side on one CPU thread unless --threads says otherwise, so a CPU
  // kernel going parallel past its grain size, or another job on the machine taking a core from a
  // thread team, is not a cliff.
  Config cfg = given;
  if (cfg.min_time_s < 0) cfg.min_time_s = 0.02;
  if (cfg.threads == 0) cfg.threads = 1;
  // A filter that is a case id explore printed (`BASE@a=1x10000,...`, anchored or not) replays it.
  Config regexes = cfg;
  regexes.selection.filters.clear();
  std::vector<std::string> replay;
  CaseResolver resolver(registry);
  for (const std::string& f : cfg.selection.filters) {
    std::string id = f;
    if (!id.empty() && id.front() == '^') id.erase(0, 1);
    if (!id.empty() && id.back() == '$') id.pop_back();
    if (f.empty() || f.front() == '-' || id.find(kVariantMark) == std::string::npos) {
      regexes.selection.filters.push_back(f);
      continue;
    }
    try {
      if (!resolver.find(id)) {
        std::cerr << "mpscheck: --filter " << f << ": no declared case '" << parse_variant_id(id)->base
                  << "'; list the ids with 'mpscheck --list --ops'\n";
        return kExitUsage;
      }
    } catch (const BadVariantId& e) {
      std::cerr << "mpscheck: --filter " << f << ": " << e.what() << '\n';
      return kExitUsage;
    }
    replay.push_back(id);
  }
  const bool positive = std::any_of(regexes.selection.filters.begin(), regexes.selection.filters.end(),
                                    [](const std::string& f) { return f.empty() || f.front() != '-'; });
  std::vector<RegisteredWorkload> selected;
  if (positive) selected = select_cases(regexes, registry);
  if (selected.empty() && replay.empty()) {
    std::cerr << "mpscheck: no case matches the selection (" << registry.size()
              << " cases loaded); check --filter, or see them all with 'mpscheck --list --ops'\n";
    return kExitUsage;
  }
  const std::optional<ResolvedTarget> resolved = resolve_target_or_say(cfg);
  if (!resolved) return kExitNoTarget;
  const ResolvedTarget& target = *resolved;
  const std::string out_path = cfg.report_dir + "/explore.json";
  if (auto bad = unwritable_outputs(cfg); bad || (bad = unwritable_file("--report-dir", out_path))) {
    std::cerr << "mpscheck: " << *bad << '\n';
    return kExitUsage;
  }
  const RunLoopOptions loop = run_loop_options(cfg, target.spec);
  ExploreOptions options;
  options.case_budget_s = cfg.explore_budget_s;
  options.run_budget_s = cfg.explore_run_budget_s;
  options.seed = cfg.seed;
  std::cerr << fmt::format(
      "mpscheck {} | explore | target {} | {} cases, {} replayed | {:g} s per case, {:g} s per run | "
      "seed {}\n",
      kVersion, target.spec.str(), selected.size(), replay.size(), options.case_budget_s, options.run_budget_s,
      cfg.seed);
  install_signal_handlers();
  Runner runner(loop.worker, cfg.report_dir + "/worker.log", loop.runner);
  try {
    if (const auto unusable = probe_target(runner, target.spec, cfg.timeout_for_op())) {
      std::cerr << "mpscheck: " << unusable->line << '\n';
      return kExitNoTarget;
    }
  } catch (const WorkerStartError& e) {
    std::cerr << "mpscheck: " << e.what() << " (stopped before the device probe; nothing ran)\n";
    return kExitCannotRun;
  }
  std::optional<std::string> stopped;
  const RunCase run = explore_runner(runner, cfg, stopped, false);
  if (cfg.min_time() > 0) options.timed = explore_runner(runner, cfg, stopped, true);
  const ExploreOutcome outcome =
      explore_cases(selected, replay, run, options, std::cout, [&] { return g_interrupted || stopped.has_value(); });
  nlohmann::json j = explore_to_json(outcome, options);
  j["run"] = valid_utf8_json(nlohmann::json{{"target", target.spec.str()}, {"filters", cfg.selection.filters}});
  try {
    write_text_report(out_path, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  } catch (const ReportError& e) {
    std::cerr << "mpscheck: " << e.what() << '\n';
    return kExitUsage;
  }
  const Written written =
      write_explore_reports(cfg, target, outcome, j["explore"], resolver, !stopped && !g_interrupted);
  if (stopped) {  // what ran is in the files; the rest could not
    std::cerr << "mpscheck: " << *stopped << "; the cases explored so far are in " << out_path << '\n';
    return kExitCannotRun;
  }
  if (written != Written::All) return kExitUsage;
  std::cout << fmt::format("explored {} cases, {} variants: {} finding{}{}; {}\n", outcome.cases.size(),
                           outcome.variants, outcome.findings.size(), outcome.findings.size() == 1 ? "" : "s",
                           outcome.run_budget_spent ? " (the run's budget was spent)" : "", out_path);
  for (const auto& f : outcome.findings) std::cout << "finding: " << f.id << " — " << f.summary << '\n';
  if (g_interrupted) return kExitInterrupted;
  return outcome.findings.empty() ? kExitOk : kExitFindings;
}

}  // namespace mpscheck::app

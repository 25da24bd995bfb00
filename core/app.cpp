#include "core/app.hpp"

#include "core/commands.hpp"
#include "core/config.hpp"
#include "core/device_tier.hpp"
#include "core/environment.hpp"
#include "core/host_text.hpp"
#include "core/layer_repro.hpp"
#include "core/probe.hpp"
#include "core/report_outputs.hpp"
#include "core/run_loop.hpp"
#include "core/run_setup.hpp"
#include "core/worker.hpp"
#include "core/workflow.hpp"
#include "reports/console.hpp"
#include "reports/reporter.hpp"
#include "reports/report.hpp"
#include "reports/version.hpp"

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <unistd.h>

namespace mpscheck {

namespace app {

namespace {

std::string join(const std::vector<std::string>& v, const char* sep) { return fmt::format("{}", fmt::join(v, sep)); }

// The run's header line and notes, on stderr.
void print_header(const Config& cfg, const ResolvedTarget& target, const RunReport& report,
                  const std::vector<PlannedCase>& plan, const RunLoopOptions& loop, const OpenedJournal& journal) {
  const auto timed = std::count_if(plan.begin(), plan.end(), [](const PlannedCase& p) { return p.timed; });
  std::cerr << fmt::format(
      "mpscheck {} | LibTorch {} | target {} | {} cases, {} timed | {} | seed {} | {} threads | {} "
      "job{}\n",
      kVersion, report.environment["torch_version"].get<std::string>(), target.spec.str(), plan.size(), timed,
      cfg.shard.empty() ? "no shard" : "shard " + cfg.shard, cfg.seed, report.environment["threads"].get<int>(),
      loop.jobs, loop.jobs == 1 ? "" : "s");
  if (!cfg.shard_note.empty()) std::cerr << "mpscheck: shard: " << cfg.shard_note << '\n';
  if (!target.note.empty()) std::cerr << "mpscheck: " << target.note << '\n';
  if (const std::string cpu = reduced_cpu_target_note(report.environment, target.spec.str()); !cpu.empty())
    std::cerr << "mpscheck: " << cpu << '\n';
  if (const std::string policy = report.run.value("dtypes", ""); !policy.empty())
    std::cerr << "mpscheck: " << policy << '\n';
  for (const auto& w : report.environment["warnings"])
    std::cerr << "mpscheck: warning: " << w.get<std::string>() << '\n';
  if (cfg.resume)
    std::cerr << "mpscheck: resuming: " << journal.done.size() << " cases already in the journal"
              << (journal.damaged_lines
                      ? fmt::format("; skipped {} damaged line{} (a case cut off mid-write runs again)",
                                    journal.damaged_lines, journal.damaged_lines == 1 ? "" : "s")
                      : std::string())
              << '\n';
}

// Report: the run's end sent to its listeners (every format asked for is written by `files`), the
// comparison with --baseline, the known failures; the exit code.
int report_run(const Config& cfg, RunReport& report, const RunInputs& inputs, const ResolvedTarget& target,
               const Registry& registry, RunListener& listeners, const ReportFiles& files) {
  if (!inputs.expectations.empty())
    apply_expectations(inputs.expectations, report.environment, target.spec.str(), report.cases);
  report.known_issues = inputs.known_issues;
  const std::string path = cfg.report_path();
  const ReproTarget rt = repro_target(target.spec, cfg.seed, cfg.quick);
  const ReportContext ctx{report,
                          path,
                          &rt,
                          [&](const std::string& id) -> const Workload* {
                            const RegisteredWorkload* w = registry.find(id);
                            return w ? w->workload : nullptr;
                          },
                          std::cout,
                          use_color(STDOUT_FILENO),
                          [&](const CaseResult& finding, const std::string& dir) {
                            const RegisteredWorkload* w = registry.find(finding.id);
                            if (!w) return LayerScript{{}, {}, {}, "the case is not loaded"};
                            return write_layer_reproducer(*w->workload, finding, rt, dir);
                          }};
  listeners.run_ended(ctx);
  const Written written = files.written();
  if (written == Written::RecordFailed) return kExitUsage;
  bool regressed = false;
  if (inputs.baseline) {
    const Comparison c = compare_reports(*inputs.baseline, report);
    std::cout << '\n' << format_comparison(c, cfg.baseline_path, path);
    regressed = c.regressed();
  }
  for (const auto& c : report.cases)
    if (c.expected || c.unexpected_pass)
      std::cout << (c.unexpected_pass ? "unexpected pass: " : "known failure: ") << c.id << " — " << c.expectation
                << '\n';
  if (written != Written::All) return kExitUsage;
  if (g_interrupted) {
    std::cerr << "mpscheck: interrupted; " << report.cases.size() << " finished cases are in " << path
              << "; run again with --resume to finish\n";
    return kExitInterrupted;
  }
  return has_unexpected(report.cases) || regressed ? kExitFindings : kExitOk;
}

int run_cases(int argc, char** argv, const Config& cfg) {
  const std::unique_ptr<CaseCatalog> catalog = load_catalog(cfg);
  const Registry& registry = catalog->registry();
  if (cfg.command == Command::Repro) return print_reproducer(cfg, registry);
  if (cfg.command == Command::Explore) return explore_command(cfg, registry);
  const std::vector<RegisteredWorkload> selected = select_cases(cfg, registry);
  // The input files are read before anything is listed or run: a broken one is said either way.
  const RunInputs inputs = read_run_inputs(cfg, cfg.command == Command::List);
  if (cfg.command == Command::List) {
    for (const auto& w : selected) std::cout << w.workload->id() << "  [" << join(w.workload->tags(), ",") << "]\n";
    std::cerr << selected.size() << " cases\n";
    return kExitOk;
  }
  const std::optional<ResolvedTarget> resolved = resolve_target_or_say(cfg);
  if (!resolved) return kExitNoTarget;
  const ResolvedTarget& target = *resolved;
  if (selected.empty()) {
    std::cerr << "mpscheck: no case matches the selection (" << registry.size()
              << " cases loaded); check --filter, or see them all with 'mpscheck --list --all'\n";
    return kExitUsage;
  }
  check_user_model(cfg, target);
  size_t twins = 0;
  const std::vector<PlannedCase> plan = plan_cases(cfg, selected, target.spec, &twins);
  const RunLoopOptions loop = run_loop_options(cfg, target.spec);
  OpenedJournal journal = open_journal(cfg, target.spec, plan, loop.jobs);

  if (cfg.threads > 0) at::set_num_threads(cfg.threads);
  RunReport report;
  report.environment = collect_environment({target.spec.str(), cfg.seed});
  report.run = {{"target", target.spec.str()},
                {"seed", cfg.seed},
                {"quick", cfg.quick},
                {"min_time_s", cfg.min_time()},
                {"selected", selected.size()},
                {"filters", cfg.selection.filters},
                {"shard", cfg.shard.empty() ? "all" : cfg.shard},
                {"jobs", loop.jobs},
                {"reference_cache", cfg.reference_cache},
                {"timed", std::count_if(plan.begin(), plan.end(), [](const PlannedCase& p) { return p.timed; })},
                {"command", join(std::vector<std::string>(argv, argv + argc), " ")}};
  report.run["same_computation_skipped"] = twins;
  if (const std::string policy = dtype_policy_text(target.spec, twins); !policy.empty()) report.run["dtypes"] = policy;
  // argv is bytes (a Latin-1 --report-dir or --filter is ordinary on Linux); the report is UTF-8.
  report.run = valid_utf8_json(report.run);
  print_header(cfg, target, report, plan, loop, journal);
  install_signal_handlers();

  Runner timed_runner(loop.worker, cfg.report_dir + "/worker.log", loop.runner);
  DeviceFacts facts;
  try {
    if (const auto unusable = probe_target(timed_runner, target.spec, cfg.timeout_for_op(), &facts)) {
      std::cerr << "mpscheck: " << unusable->line << '\n';
      return kExitNoTarget;
    }
  } catch (const WorkerStartError& e) {
    std::cerr << "mpscheck: " << e.what() << " (stopped before the device probe; nothing ran)\n";
    return kExitCannotRun;
  }
  const Tier tier = tier_from_facts(facts);
  if (!facts.name.empty()) report.environment["device_name"] = facts.name;
  if (facts.recommended_max > 0) report.environment["device_recommended_max_bytes"] = facts.recommended_max;
  std::cerr << "mpscheck: " << tier_line(target.spec.device, facts, tier) << '\n';
  ConsoleReporter console(std::cout, {.tty = isatty(STDOUT_FILENO) == 1,
                                      .color = use_color(STDOUT_FILENO),
                                      .verbose = cfg.verbose,
                                      .columns = terminal_columns(STDOUT_FILENO)});
  ReportFiles files(cfg);
  RunListeners listeners;
  listeners.add(*journal.journal);  // first: a case is on disk before the console prints it
  listeners.add(console);
  listeners.add(files);
  const auto run_start = std::chrono::steady_clock::now();
  RunOutcome outcome = execute_plan(plan, journal.done, loop, timed_runner, listeners);
  console.end_progress();  // the lines after the run start on a clean line
  if (outcome.stopped) {
    std::cerr << "mpscheck: " << *outcome.stopped << '\n';
    return kExitCannotRun;
  }
  report.cases = std::move(outcome.cases);
  const Tier final_tier = tier_after_run(tier, report.cases);
  apply_tier(final_tier, report.environment, report.cases);
  if (final_tier.name != tier.name) std::cerr << "mpscheck: tier " << final_tier.name << ": " << final_tier.why << '\n';
  report.run["wall_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
  report.run["complete"] = !outcome.interrupted;
  return report_run(cfg, report, inputs, target, registry, listeners, files);
}

}  // namespace

}  // namespace app

int run_mpscheck(int argc, char** argv) {
  using namespace app;
  std::string text;
  Config cfg;
  try {
    cfg = parse_command_line(argc, argv, &text);
  } catch (const UsageError& e) {
    std::cerr << "mpscheck: " << e.what() << '\n';
    return kExitUsage;
  }
  switch (cfg.command) {
    case Command::Help: std::cout << text; return kExitOk;
    case Command::Version: std::cout << text << '\n'; return kExitOk;
    case Command::Worker: return worker_main();
    case Command::Env: return print_env(cfg);
    case Command::Compare: return compare_command(cfg);
    case Command::Merge: return merge_command(cfg);
    case Command::Expect: return expect_command(cfg);
    default: break;
  }
  try {
    return run_cases(argc, argv, cfg);
  } catch (const Exit& e) {
    return e.code;
  }
}

}  // namespace mpscheck

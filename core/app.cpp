#include "core/app.hpp"

#include "checks/recommend.hpp"
#include "core/config.hpp"
#include "core/environment.hpp"
#include "core/execute.hpp"
#include "core/journal.hpp"
#include "core/plugin_host.hpp"
#include "core/probe.hpp"
#include "core/registry.hpp"
#include "core/version.hpp"
#include "core/worker.hpp"
#include "plugins/torchscript/torchscript_workload.hpp"
#include "core/workflow.hpp"
#include "reports/bug_report.hpp"
#include "reports/console.hpp"
#include "reports/reporter.hpp"
#include "reports/writers.hpp"
#include "reports/report.hpp"

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <set>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <unistd.h>

namespace mpscheck {

namespace {

// 4: the run could not go on (no worker would start, the journal could not be written); every
// finished case is kept in the journal and --resume continues.
constexpr int kExitOk = 0, kExitFindings = 1, kExitUsage = 2, kExitNoTarget = 3, kExitCannotRun = 4,
              kExitInterrupted = 130;

void on_interrupt(int) { g_interrupted = 1; }

std::string join(const std::vector<std::string>& v, const char* sep) { return fmt::format("{}", fmt::join(v, sep)); }

// Fails before any case runs rather than after the last: `flag` FILE can be created and replaced
// the way the report writers do it (parent folders made, a temporary file, then a rename).
std::optional<std::string> unwritable_file(const std::string& flag, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path target(path);
  if (fs::is_directory(target, ec))
    return fmt::format("{} {}: that is a folder; give a file name", flag, path);
  if (target.has_parent_path()) {
    fs::create_directories(target.parent_path(), ec);
    if (ec) return fmt::format("{} {}: cannot create its folder ({}); choose a writable path", flag, path, ec.message());
  }
  const std::string probe = fmt::format("{}.probe.{}", path, static_cast<long>(::getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return fmt::format("{} {}: cannot write there ({}); choose a writable path", flag, path, std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
  return std::nullopt;
}

std::optional<std::string> unwritable_folder(const std::string& flag, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    return fmt::format("{} {}: cannot create the folder ({}); choose a writable path", flag, dir,
                       ec ? ec.message() : "a file of that name is in the way");
  return unwritable_file(flag, (fs::path(dir) / ".mpscheck-write-test").string());
}

// Where a reporter writes in this run: its flag's value, else its default; empty: not asked for.
std::string destination_of(const Config& cfg, const Reporter& r) {
  const auto it = cfg.report_destinations.find(r.flag());
  return it != cfg.report_destinations.end() ? it->second : r.default_destination(cfg.report_dir);
}

// Every destination of the run, checked before the first case.
std::optional<std::string> unwritable_outputs(const Config& cfg) {
  if (auto bad = unwritable_folder("--report-dir", cfg.report_dir)) return bad;
  for (const Reporter* r : reporters()) {
    const std::string dest = destination_of(cfg, *r);
    if (dest.empty() || r->destination() == Destination::Console) continue;
    const bool given = cfg.report_destinations.count(r->flag()) > 0;
    const std::string label = given ? fmt::format("--{}", r->flag()) : fmt::format("the default --{}", r->flag());
    auto bad = r->destination() == Destination::Folder ? unwritable_folder(label, dest) : unwritable_file(label, dest);
    if (bad) return bad;
  }
  return std::nullopt;
}

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

ReproTarget repro_target(const TargetSpec& spec, std::uint64_t seed, bool quick) {
  const c10::ScalarType dtype = spec.float_dtype();
  ReproTarget rt;
  rt.device = spec.device;
  rt.dtype = dtype == c10::kHalf ? "float16" : dtype == c10::kBFloat16 ? "bfloat16" : "float32";
  rt.seed = seed;
  rt.quick = quick;
  return rt;
}

// Writes the reports a run or a merge was asked for, in the order of reports/reporters.cpp: the
// JSON record first. If the record cannot be written nothing else is tried and the caller says
// where the results still are; a later report that fails is named and the others still written.
enum class Written { All, RecordFailed, SomeFailed };
Written write_reports(const Config& cfg, const ReportContext& ctx, bool merging) {
  Written result = Written::All;
  for (const Reporter* r : reporters()) {
    if (merging && !r->in_merge()) continue;
    const bool record = std::string(r->flag()) == "json";
    const std::string dest = destination_of(cfg, *r);
    if (dest.empty() && !r->runs_without_destination()) continue;
    try {
      r->write(ctx, dest);
    } catch (const ReportError& e) {
      std::cerr << "mpscheck: " << e.what();
      if (record) {
        if (!merging) std::cerr << "; the journal " << cfg.journal_path() << " still has every result";
        std::cerr << '\n';
        return Written::RecordFailed;
      }
      std::cerr << '\n';
      result = Written::SomeFailed;
    }
  }
  return result;
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
    const ReportContext ctx{merged, cfg.output_path, nullptr, nullptr, std::cout, false};
    if (write_reports(out, ctx, /*merging=*/true) != Written::All) return kExitUsage;
    const auto counts = count_by_status(merged.cases);
    std::cout << fmt::format("merged {} reports: {} cases into {}\n", cfg.arguments.size(), merged.cases.size(),
                             cfg.output_path);
    return has_unexpected(merged.cases) ? kExitFindings : kExitOk;  // the same rule as a run's
  } catch (const ReportError& e) {
    std::cerr << "mpscheck: " << e.what() << '\n';
    return kExitUsage;
  }
}

int print_reproducer(const Config& cfg, const Registry& registry) {
  const std::string& id = cfg.arguments.front();
  const RegisteredWorkload* w = registry.find(id);
  if (!w) {
    std::cerr << "mpscheck: no case '" << id << "'; list the ids with 'mpscheck --list --all'\n";
    return kExitUsage;
  }
  TargetSpec target = cfg.target;
  if (target.device == "auto") target = resolve_target(target).spec;
  const ReproTarget rt = repro_target(target, cfg.seed, cfg.quick);
  if (cfg.script_only) {
    const std::string script = w->workload->reproducer(rt);
    if (script.empty()) {
      std::cerr << "mpscheck: case '" << id << "' cannot describe itself as a Python reproducer; drop --script for the "
                << "bug report\n";
      return kExitUsage;
    }
    std::cout << script;
    return kExitOk;
  }
  std::optional<CaseResult> observed;
  nlohmann::json env;
  if (!cfg.from_report.empty()) {
    try {
      const RunReport from = read_json_report(cfg.from_report);
      env = from.environment;
      for (const auto& c : from.cases)
        if (c.id == id) observed = c;
    } catch (const ReportError& e) {
      std::cerr << "mpscheck: " << e.what() << '\n';
      return kExitUsage;
    }
    if (!observed) {
      std::cerr << "mpscheck: " << cfg.from_report << " has no case '" << id << "'\n";
      return kExitUsage;
    }
  } else {
    env = collect_environment({target.str(), cfg.seed});
  }
  std::cout << render_bug_report(id, observed ? &*observed : nullptr, w->workload, env, rt);
  return kExitOk;
}

}  // namespace

int run_mpscheck(int argc, char** argv) {
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
    default: break;
  }

  // Plugins.
  PluginHost host;
  std::vector<std::string> dirs;
  if (cfg.default_plugins) {
    const auto d = PluginHost::default_plugin_dir();
    if (!d.empty()) dirs.push_back(d.string());
  }
  for (const auto& d : cfg.plugin_dirs) dirs.push_back(std::filesystem::absolute(d).string());
  for (const auto& d : dirs) {
    try {
      host.load_directory(d);
    } catch (const UntrustedPlugin& e) {
      std::cerr << "mpscheck: " << e.what() << '\n';
      return kExitUsage;
    } catch (const PluginLoadError& e) {
      std::cerr << "mpscheck: " << e.what() << "; check --plugin-dir\n";
      return kExitUsage;
    }
  }
  for (const auto& w : host.warnings()) std::cerr << "mpscheck: skipped plugin " << w << '\n';
  // The user's own TorchScript model: checked here, so a bad file or bad inputs stop the run at once.
  std::vector<std::unique_ptr<Workload>> builtin;
  if (!cfg.model_path.empty()) {
    try {
      const TorchScriptOptions ts =
          torchscript_options(std::filesystem::absolute(cfg.model_path).string(), cfg.model_inputs);
      validate_torchscript(ts);
      builtin = make_torchscript_workloads(ts, cfg.train);
    } catch (const BadModelInput& e) {
      std::cerr << "mpscheck: " << e.what() << '\n';
      return kExitUsage;
    }
  }
  std::vector<RegisteredWorkload> all = host.workloads();
  for (const auto& w : builtin) all.push_back({w.get(), &PluginHost::builtin_info()});
  std::unique_ptr<Registry> registry;
  try {
    registry = std::make_unique<Registry>(all);
  } catch (const DuplicateCaseId& e) {
    std::cerr << "mpscheck: " << e.what() << '\n';
    return kExitUsage;
  }
  if (cfg.command == Command::Repro) return print_reproducer(cfg, *registry);
  auto selected = registry->select(cfg.selection);
  if (!cfg.shard.empty()) selected = take_shard(selected, parse_shard(cfg.shard));

  if (cfg.command == Command::List) {
    for (const auto& w : selected)
      std::cout << w.workload->id() << "  [" << join(w.workload->tags(), ",") << "]\n";
    std::cerr << selected.size() << " cases\n";
    return kExitOk;
  }

  ResolvedTarget target;
  try {
    target = resolve_target(cfg.target);
  } catch (const TargetUnavailable& e) {
    std::cerr << "mpscheck: " << e.what() << '\n';
    return kExitNoTarget;
  }
  if (selected.empty()) {
    std::cerr << "mpscheck: no case matches the selection (" << registry->size()
              << " cases loaded); check --filter, or see them all with 'mpscheck --list --all'\n";
    return kExitUsage;
  }

  // Input files are checked before anything runs: a broken one must not cost a long run.
  std::vector<Expectation> expectations;
  std::optional<RunReport> baseline;
  try {
    if (!cfg.expect_path.empty()) expectations = load_expectations(cfg.expect_path);
    if (!cfg.baseline_path.empty()) baseline = read_json_report(cfg.baseline_path);
  } catch (const ExpectationError& e) {
    std::cerr << "mpscheck: " << e.what() << '\n';
    return kExitUsage;
  } catch (const ReportError& e) {
    std::cerr << "mpscheck: --baseline: " << e.what() << '\n';
    return kExitUsage;
  }

  // Every output destination, before a long run could fail at its very end.
  if (auto bad = unwritable_outputs(cfg)) {
    std::cerr << "mpscheck: " << *bad << '\n';
    return kExitUsage;
  }
  std::error_code ec;
  int damaged_lines = 0;
  const nlohmann::json header{{"mpscheck_journal", 1}, {"target", target.spec.str()}, {"seed", cfg.seed},
                              {"quick", cfg.quick}};
  std::map<std::string, CaseResult> done;
  if (cfg.resume) {
    try {
      auto previous = read_journal(cfg.journal_path());
      for (const char* key : {"target", "seed", "quick"}) {
        if (previous.header.value(key, nlohmann::json()) != header[key])
          throw JournalError(fmt::format("the journal {} was written with {} {}, this run has {}; resume with the same "
                                         "options or start afresh without --resume",
                                         cfg.journal_path(), key, previous.header[key].dump(), header[key].dump()));
      }
      for (auto& r : previous.results) done[r.id] = std::move(r);
      damaged_lines = previous.damaged_lines;
    } catch (const JournalError& e) {
      std::cerr << "mpscheck: " << e.what() << '\n';
      return kExitUsage;
    }
  }
  std::unique_ptr<Journal> journal;
  try {
    journal = std::make_unique<Journal>(cfg.journal_path(), header, cfg.resume);
  } catch (const JournalError& e) {
    std::cerr << "mpscheck: " << e.what() << '\n';
    return kExitUsage;
  }

  if (cfg.threads > 0) at::set_num_threads(cfg.threads);
  RunReport report;
  report.environment = collect_environment({target.spec.str(), cfg.seed});
  report.run = {{"target", target.spec.str()},   {"seed", cfg.seed},
                {"quick", cfg.quick},             {"min_time_s", cfg.min_time()},
                {"selected", selected.size()},    {"filters", cfg.selection.filters},
                {"shard", cfg.shard.empty() ? "all" : cfg.shard},
                {"command", [&] {
                   std::vector<std::string> a(argv, argv + argc);
                   return join(a, " ");
                 }()}};

  std::cerr << fmt::format("mpscheck {} | LibTorch {} | target {} | {} cases | {} | seed {} | {} threads\n", kVersion,
                           report.environment["torch_version"].get<std::string>(), target.spec.str(), selected.size(),
                           cfg.shard.empty() ? "no shard" : "shard " + cfg.shard, cfg.seed,
                           report.environment["threads"].get<int>());
  if (!cfg.shard_note.empty()) std::cerr << "mpscheck: shard: " << cfg.shard_note << '\n';
  if (!target.note.empty()) std::cerr << "mpscheck: " << target.note << '\n';
  for (const auto& w : report.environment["warnings"]) std::cerr << "mpscheck: warning: " << w.get<std::string>() << '\n';
  if (cfg.resume)
    std::cerr << "mpscheck: resuming: " << done.size() << " cases already in the journal"
              << (damaged_lines ? fmt::format("; skipped {} damaged line{} (a case cut off mid-write runs again)",
                                              damaged_lines, damaged_lines == 1 ? "" : "s")
                                : std::string())
              << '\n';

  struct sigaction sa{};
  sa.sa_handler = on_interrupt;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGXFSZ, SIG_IGN);  // a file-size limit makes the journal's write fail with EFBIG, reported below

  std::vector<std::string> extra_dirs;
  for (const auto& d : cfg.plugin_dirs) extra_dirs.push_back(std::filesystem::absolute(d).string());
  const nlohmann::json worker_config{{"target", target.spec.str()}, {"seed", cfg.seed},
                                     {"quick", cfg.quick},           {"min_time", cfg.min_time()},
                                     {"threads", cfg.threads},       {"plugin_dirs", extra_dirs},
                                     {"default_plugins", cfg.default_plugins},
                                     {"model", cfg.model_path.empty() ? "" : std::filesystem::absolute(cfg.model_path).string()},
                                     {"inputs", cfg.model_inputs},
                                     {"train", cfg.train}};
  RunnerOptions runner_options;
  // A fresh worker after a target error on accelerators (see RunnerOptions); the variable lets the
  // tests apply the rule to cpu.
  const char* as_accelerator = std::getenv("MPSCHECK_TEST_FRESH_WORKER_AFTER_ERROR");
  runner_options.fresh_worker_after_error = target.spec.device != "cpu" || (as_accelerator && *as_accelerator == '1');
  Runner runner(worker_config, cfg.report_dir + "/worker.log", runner_options);
  try {
    if (const auto unusable = probe_target(runner, target.spec, cfg.timeout_for_op())) {
      std::cerr << "mpscheck: " << unusable->line << '\n';
      return kExitNoTarget;
    }
  } catch (const WorkerStartError& e) {
    std::cerr << "mpscheck: " << e.what() << " (stopped before the device probe; nothing ran)\n";
    return kExitCannotRun;
  }
  ConsoleReporter console(std::cout, isatty(STDOUT_FILENO), use_color(STDOUT_FILENO));

  const auto run_start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < selected.size(); ++i) {
    const Workload& w = *selected[i].workload;
    const std::string id = w.id();
    if (auto it = done.find(id); it != done.end()) {
      report.cases.push_back(it->second);
      continue;
    }
    if (g_interrupted) break;
    console.case_started(i, selected.size(), id);
    const auto t0 = std::chrono::steady_clock::now();
    const double timeout = w.kind() == Kind::Model ? cfg.timeout_for_model() : cfg.timeout_for_op();
    CaseResult r;
    try {
      r = runner.run(id, timeout);
    } catch (const WorkerStartError& e) {
      std::cerr << "mpscheck: " << e.what() << " (stopped before case " << id << "; the " << journal->appended()
                << " cases finished in this run are in " << cfg.journal_path()
                << "; fix the cause, then run the same command with --resume)\n";
      return kExitCannotRun;
    }
    if (g_interrupted) break;  // an interrupted case is not recorded: --resume runs it again
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    identify(r, selected[i], target.spec);
    recommend(r);
    try {
      journal->append(r);
    } catch (const JournalError& e) {
      std::cerr << "mpscheck: " << e.what() << "; stopped: the " << journal->appended()
                << " cases finished before it are kept there; free space, then run the same command with --resume\n";
      return kExitCannotRun;
    }
    console.case_finished(i, selected.size(), r);
    report.cases.push_back(std::move(r));
  }
  report.run["wall_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
  report.run["complete"] = !g_interrupted;

  if (!expectations.empty()) apply_expectations(expectations, report.environment, target.spec.str(), report.cases);
  const std::string path = cfg.report_path();
  const ReproTarget rt = repro_target(target.spec, cfg.seed, cfg.quick);
  const ReportContext ctx{report, path, &rt,
                          [&](const std::string& id) -> const Workload* {
                            const RegisteredWorkload* w = registry->find(id);
                            return w ? w->workload : nullptr;
                          },
                          std::cout, use_color(STDOUT_FILENO)};
  const Written written = write_reports(cfg, ctx, /*merging=*/false);
  if (written == Written::RecordFailed) return kExitUsage;
  bool regressed = false;
  if (baseline) {
    const Comparison c = compare_reports(*baseline, report);
    std::cout << '\n' << format_comparison(c, cfg.baseline_path, path);
    regressed = c.regressed();
  }
  for (const auto& c : report.cases)
    if (c.expected || c.unexpected_pass) std::cout << (c.unexpected_pass ? "unexpected pass: " : "known failure: ") << c.id << " — " << c.expectation << '\n';
  if (written != Written::All) return kExitUsage;
  if (g_interrupted) {
    std::cerr << "mpscheck: interrupted; " << report.cases.size() << " finished cases are in " << path
              << "; run again with --resume to finish\n";
    return kExitInterrupted;
  }
  return has_unexpected(report.cases) || regressed ? kExitFindings : kExitOk;
}

}  // namespace mpscheck

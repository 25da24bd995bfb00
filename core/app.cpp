#include "core/app.hpp"

#include "core/config.hpp"
#include "core/environment.hpp"
#include "core/journal.hpp"
#include "core/plugin_host.hpp"
#include "core/registry.hpp"
#include "core/version.hpp"
#include "core/worker.hpp"
#include "reports/console.hpp"
#include "reports/report.hpp"

#include <ATen/Parallel.h>
#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <set>
#include <unistd.h>

namespace mpscheck {

namespace {

constexpr int kExitOk = 0, kExitFindings = 1, kExitUsage = 2, kExitNoTarget = 3, kExitInterrupted = 130;

void on_interrupt(int) { g_interrupted = 1; }

std::string join(const std::vector<std::string>& v, const char* sep) { return fmt::format("{}", fmt::join(v, sep)); }

int print_env(const Config& cfg) {
  if (cfg.threads > 0) at::set_num_threads(cfg.threads);
  const auto env = collect_environment({cfg.target.str(), cfg.seed});
  for (const auto& [key, value] : env.items())
    std::cout << fmt::format("{:<18} {}\n", key, value.is_string() ? value.get<std::string>() : value.dump());
  return kExitOk;
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
  const c10::ScalarType dtype = target.float_dtype();
  ReproTarget rt;
  rt.device = target.device;
  rt.dtype = dtype == c10::kHalf ? "float16" : dtype == c10::kBFloat16 ? "bfloat16" : "float32";
  rt.seed = cfg.seed;
  rt.quick = cfg.quick;
  const std::string script = w->workload->reproducer(rt);
  if (script.empty()) {
    std::cerr << "mpscheck: case '" << id << "' cannot describe itself as a Python reproducer\n";
    return kExitUsage;
  }
  std::cout << script;
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
    } catch (const PluginLoadError& e) {
      std::cerr << "mpscheck: " << e.what() << "; check --plugin-dir\n";
      return kExitUsage;
    }
  }
  for (const auto& w : host.warnings()) std::cerr << "mpscheck: skipped plugin " << w << '\n';
  std::unique_ptr<Registry> registry;
  try {
    registry = std::make_unique<Registry>(host.workloads());
  } catch (const DuplicateCaseId& e) {
    std::cerr << "mpscheck: " << e.what() << '\n';
    return kExitUsage;
  }
  if (cfg.command == Command::Repro) return print_reproducer(cfg, *registry);
  const auto selected = registry->select(cfg.selection);

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

  // Report folder, journal, resume.
  std::error_code ec;
  std::filesystem::create_directories(cfg.report_dir, ec);
  if (ec) {
    std::cerr << "mpscheck: cannot create the report folder " << cfg.report_dir << ": " << ec.message() << '\n';
    return kExitUsage;
  }
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
                {"command", [&] {
                   std::vector<std::string> a(argv, argv + argc);
                   return join(a, " ");
                 }()}};

  std::cerr << fmt::format("mpscheck {} | LibTorch {} | target {} | {} cases | seed {} | {} threads\n", kVersion,
                           report.environment["torch_version"].get<std::string>(), target.spec.str(), selected.size(),
                           cfg.seed, report.environment["threads"].get<int>());
  if (!target.note.empty()) std::cerr << "mpscheck: " << target.note << '\n';
  if (!done.empty()) std::cerr << "mpscheck: resuming: " << done.size() << " cases already in the journal\n";

  struct sigaction sa{};
  sa.sa_handler = on_interrupt;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  std::vector<std::string> extra_dirs;
  for (const auto& d : cfg.plugin_dirs) extra_dirs.push_back(std::filesystem::absolute(d).string());
  const nlohmann::json worker_config{{"target", target.spec.str()}, {"seed", cfg.seed},
                                     {"quick", cfg.quick},           {"min_time", cfg.min_time()},
                                     {"threads", cfg.threads},       {"plugin_dirs", extra_dirs},
                                     {"default_plugins", cfg.default_plugins}};
  Runner runner(worker_config, cfg.report_dir + "/worker.log");
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
    CaseResult r = runner.run(id, timeout);
    if (g_interrupted) break;  // an interrupted case is not recorded: --resume runs it again
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r.kind.empty()) r.kind = w.kind() == Kind::Op ? "op" : "model";
    if (r.tags.empty()) r.tags = w.tags();
    if (r.plugin.empty()) r.plugin = selected[i].plugin->name;
    if (r.target.empty()) r.target = target.spec.str();
    journal->append(r);
    console.case_finished(i, selected.size(), r);
    report.cases.push_back(std::move(r));
  }
  report.run["wall_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
  report.run["complete"] = !g_interrupted;

  const std::string path = cfg.report_path();
  try {
    write_json_report(path, report);
  } catch (const ReportError& e) {
    std::cerr << "mpscheck: " << e.what() << "; the journal " << cfg.journal_path() << " still has every result\n";
    return kExitUsage;
  }
  console.summary(report, path);
  if (g_interrupted) {
    std::cerr << "mpscheck: interrupted; " << report.cases.size() << " finished cases are in " << path
              << "; run again with --resume to finish\n";
    return kExitInterrupted;
  }
  for (const auto& c : report.cases)
    if (is_finding(c.status)) return kExitFindings;
  return kExitOk;
}

}  // namespace mpscheck

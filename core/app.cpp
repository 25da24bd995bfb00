#include "core/app.hpp"

#include "checks/recommend.hpp"
#include "core/config.hpp"
#include "core/environment.hpp"
#include "core/execute.hpp"
#include "core/host_text.hpp"
#include "core/case_catalog.hpp"
#include "core/case_variant.hpp"
#include "core/explore.hpp"
#include "core/journal.hpp"
#include "core/probe.hpp"
#include "core/run_loop.hpp"
#include "core/run_plan.hpp"
#include "reports/version.hpp"
#include "core/worker.hpp"
#include "core/workflow.hpp"
#include "core/input_spec.hpp"
#include "core/layer_repro.hpp"
#include "core/pt2_workload.hpp"
#include "core/torchscript_workload.hpp"
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
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <optional>
#include <unistd.h>

namespace mpscheck {

namespace {

// 4: the run could not go on (no worker would start, the journal could not be written); every
// finished case is kept in the journal and --resume continues.
constexpr int kExitOk = 0, kExitFindings = 1, kExitUsage = 2, kExitNoTarget = 3, kExitCannotRun = 4,
              kExitModelDtype = 5, kExitInterrupted = 130;

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
  if (!cfg.reference_cache.empty())
    if (auto bad = unwritable_folder("--reference-cache", cfg.reference_cache)) return bad;
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

// merge --cells: runners side by side, each finding labelled by where it appears.
int merge_cells_command(const Config& cfg) {
  for (const auto& [flag, path] : cfg.report_destinations)
    if (flag != "html") {
      std::cerr << "mpscheck: merge --cells writes -o JSON and --html only; drop --" << flag << '\n';
      return kExitUsage;
    }
  const std::string html = cfg.report_destinations.count("html") ? cfg.report_destinations.at("html") : "";
  for (const auto& [flag, path] : std::vector<std::pair<std::string, std::string>>{{"-o", cfg.output_path}, {"--html", html}}) {
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
                             m.cells.size(), m.cases.size(), counts["everywhere"], counts["cell-specific"], counts["new"],
                             cfg.output_path);
    for (const auto& c : m.cases) {
      if (c.label != "cell-specific") continue;
      std::string where;
      for (size_t i = 0; i < m.cells.size(); ++i)
        if (c.ran[i]) where += fmt::format("{}{} {}", where.empty() ? "" : ", ", m.cells[i].name, to_string(c.statuses[i]));
      std::cout << "cell-specific: " << c.id << " (" << where << ")\n";
    }
    return unexpected ? kExitFindings : kExitOk;  // the same rule as a run's, over every cell
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

// `expect --from REPORT`: a starting expectations file, to stdout or -o FILE.
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
      const std::string why = !observed || observed->status == Status::Pass ? "it passes on " + rt.device + " (" + rt.dtype + ")"
                              : observed->first_diverging_layer.empty() ? "localisation named no layer (" + observed->message + ")"
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

// ---------------------------------------------------------------- the steps of a run

// A step that cannot go on returns the exit code, having printed its one line.
struct Exit {
  int code;
};

// Load: the plugins and the user's model, as every worker will load them.
std::unique_ptr<CaseCatalog> load_catalog(const Config& cfg) {
  CatalogSource source;
  source.default_plugins = cfg.default_plugins;
  for (const auto& d : cfg.plugin_dirs) source.plugin_dirs.push_back(std::filesystem::absolute(d).string());
  if (!cfg.model_path.empty()) source.model = std::filesystem::absolute(cfg.model_path).string();
  source.inputs = cfg.model_inputs;
  source.model_for = cfg.model_for;
  source.eager = cfg.eager_path;
  source.train = cfg.train;
  source.validate_model = true;  // a bad file or bad inputs stop the run at once
  try {
    auto catalog = std::make_unique<CaseCatalog>(source);
    for (const auto& w : catalog->host().warnings()) std::cerr << "mpscheck: skipped plugin " << w << '\n';
    return catalog;
  } catch (const UntrustedPlugin& e) {
    std::cerr << "mpscheck: " << e.what() << '\n';
  } catch (const PluginLoadError& e) {
    std::cerr << "mpscheck: " << e.what() << "; check --plugin-dir\n";
  } catch (const BadModelInput& e) {
    std::cerr << "mpscheck: " << e.what() << '\n';
  } catch (const DuplicateCaseId& e) {
    std::cerr << "mpscheck: " << e.what() << '\n';
  }
  throw Exit{kExitUsage};
}

// Select: kinds and filters, then the shard.
std::vector<RegisteredWorkload> select_cases(const Config& cfg, const Registry& registry) {
  auto selected = registry.select(cfg.selection);
  if (!cfg.shard.empty()) selected = take_shard(selected, parse_shard(cfg.shard));
  return selected;
}

// Everything a run reads besides plugins, checked before anything runs: a broken file must not
// cost a long run, and neither must an unwritable report at its very end.
struct RunInputs {
  std::vector<Expectation> expectations;
  std::vector<KnownIssue> known_issues;
  std::optional<RunReport> baseline;
};
RunInputs read_run_inputs(const Config& cfg) {
  RunInputs in;
  try {
    if (!cfg.expect_path.empty()) in.expectations = load_expectations(cfg.expect_path);
    // The shipped table, unless another is named (one that is missing is then an error).
    if (!cfg.known_issues_path.empty())
      in.known_issues = load_known_issues(cfg.known_issues_path);
    else if (std::filesystem::exists(MPSCHECK_KNOWN_ISSUES_TABLE))
      in.known_issues = load_known_issues(MPSCHECK_KNOWN_ISSUES_TABLE);
    if (!cfg.baseline_path.empty()) in.baseline = read_json_report(cfg.baseline_path);
  } catch (const ExpectationError& e) {
    std::cerr << "mpscheck: " << e.what() << '\n';
    throw Exit{kExitUsage};
  } catch (const KnownIssuesError& e) {
    std::cerr << "mpscheck: --known-issues: " << e.what() << '\n';
    throw Exit{kExitUsage};
  } catch (const ReportError& e) {
    std::cerr << "mpscheck: --baseline: " << e.what() << '\n';
    throw Exit{kExitUsage};
  }
  if (auto bad = unwritable_outputs(cfg)) {
    std::cerr << "mpscheck: " << *bad << '\n';
    throw Exit{kExitUsage};
  }
  return in;
}

// The journal, and with --resume what it already holds (same target, seed and quick, or refused).
struct OpenedJournal {
  std::unique_ptr<Journal> journal;
  std::map<std::string, CaseResult> done;
  int damaged_lines = 0;
};
OpenedJournal open_journal(const Config& cfg, const TargetSpec& target) {
  const nlohmann::json header{{"mpscheck_journal", 1}, {"target", target.str()}, {"seed", cfg.seed},
                              {"quick", cfg.quick}};
  OpenedJournal j;
  try {
    if (cfg.resume) {
      auto previous = read_journal(cfg.journal_path());
      for (const char* key : {"target", "seed", "quick"}) {
        if (previous.header.value(key, nlohmann::json()) != header[key])
          throw JournalError(fmt::format("the journal {} was written with {} {}, this run has {}; resume with the same "
                                         "options or start afresh without --resume",
                                         cfg.journal_path(), key, previous.header[key].dump(), header[key].dump()));
      }
      for (auto& r : previous.results) j.done[r.id] = std::move(r);
      j.damaged_lines = previous.damaged_lines;
    }
    j.journal = std::make_unique<Journal>(cfg.journal_path(), header, cfg.resume);
  } catch (const JournalError& e) {
    std::cerr << "mpscheck: " << e.what() << '\n';
    throw Exit{kExitUsage};
  }
  return j;
}

// What each case id computes in on a target with a dtype policy, for the run header and report.json.
std::string dtype_policy_text(const TargetSpec& target, size_t twins) {
  const c10::ScalarType reduced = target.float_dtype();
  if (reduced != c10::kBFloat16 && reduced != c10::kHalf) return {};
  const std::string name = reduced == c10::kBFloat16 ? "bfloat16" : "float16";
  const std::string twin = reduced == c10::kBFloat16 ? "bf16" : "f16";
  return fmt::format("on {} every f32 case and model computes in {}; {} f32 op case{} the same computation as {} "
                     "{} twin{} and run{} once, under the {} id; f16 and bf16 cases compute in their own dtype, "
                     "integer and bool cases in theirs",
                     target.str(), name, twins, twins == 1 ? " is" : "s are", twins == 1 ? "its" : "their", twin,
                     twins == 1 ? "" : "s", twins == 1 ? "s" : "", twin);
}

// Plan: which cases run (an f32 case that is the same computation as its reduced-precision twin
// runs once, under the twin's id: run_plan.hpp), and which are timed. `twins` counts those left out.
std::vector<PlannedCase> plan_cases(const Config& cfg, const std::vector<RegisteredWorkload>& all,
                                    const TargetSpec& target, size_t* twins) {
  const c10::ScalarType reduced = target.float_dtype();
  const std::string reduced_short = reduced == c10::kBFloat16 ? "bf16" : reduced == c10::kHalf ? "f16" : "";
  std::vector<std::string> all_ids;
  std::map<std::string, const Workload*> by_id;
  for (const auto& w : all) {
    all_ids.push_back(w.workload->id());
    by_id[all_ids.back()] = w.workload;
  }
  const std::vector<bool> twin = same_computation_twins(all_ids, reduced_short);
  std::vector<RegisteredWorkload> selected;
  *twins = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    // Only where both declare the dtypes their ids say (a plugin's own id scheme may not).
    if (twin[i] && all[i].workload->dtype() == c10::kFloat) {
      if (by_id.at(reduced_twin_id(all_ids[i], reduced_short))->dtype() == reduced) {
        ++*twins;
        continue;
      }
    }
    selected.push_back(all[i]);
  }
  std::vector<std::string> ids;
  std::vector<bool> is_model;
  for (const auto& w : selected) {
    ids.push_back(w.workload->id());
    is_model.push_back(w.workload->kind() == Kind::Model);
  }
  const std::vector<bool> timed = plan_timing(ids, is_model, cfg.quick, cfg.min_time());
  std::vector<PlannedCase> plan;
  for (size_t i = 0; i < selected.size(); ++i) plan.push_back({selected[i], timed[i]});
  return plan;
}

RunLoopOptions run_loop_options(const Config& cfg, const TargetSpec& target) {
  RunLoopOptions o;
  o.worker.target = target.str();
  o.worker.seed = cfg.seed;
  o.worker.quick = cfg.quick;
  o.worker.min_time = cfg.min_time();
  o.worker.threads = cfg.threads;
  o.worker.default_plugins = cfg.default_plugins;
  for (const auto& d : cfg.plugin_dirs) o.worker.plugin_dirs.push_back(std::filesystem::absolute(d).string());
  if (!cfg.model_path.empty()) o.worker.model = std::filesystem::absolute(cfg.model_path).string();
  o.worker.inputs = cfg.model_inputs;
  o.worker.model_for = cfg.model_for;
  o.worker.eager = cfg.eager_path;
  o.worker.train = cfg.train;
  if (!cfg.reference_cache.empty())
    o.worker.reference_cache = std::filesystem::absolute(cfg.reference_cache).string();
  o.worker.reuse_reference_times = cfg.reuse_reference_times;
  o.jobs = cfg.jobs > 0 ? cfg.jobs : default_jobs(target);
  o.verdict_threads = verdict_threads_for(o.jobs, cfg.threads);
  // A fresh worker after a target error on accelerators (see RunnerOptions); the variable lets the
  // tests apply the rule to cpu.
  const char* as_accelerator = std::getenv("MPSCHECK_TEST_FRESH_WORKER_AFTER_ERROR");
  o.runner.fresh_worker_after_error = target.device != "cpu" || (as_accelerator && *as_accelerator == '1');
  o.report_dir = cfg.report_dir;
  o.journal_path = cfg.journal_path();
  o.target = target;
  o.timeout_op_s = cfg.timeout_for_op();
  o.timeout_model_s = cfg.timeout_for_model();
  return o;
}

void install_signal_handlers() {
  struct sigaction sa{};
  sa.sa_handler = on_interrupt;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGXFSZ, SIG_IGN);  // a file-size limit makes the journal's write fail with EFBIG, reported as such
}

// The run's header line and notes, on stderr.
void print_header(const Config& cfg, const ResolvedTarget& target, const RunReport& report,
                  const std::vector<PlannedCase>& plan, const RunLoopOptions& loop, const OpenedJournal& journal) {
  const auto timed = std::count_if(plan.begin(), plan.end(), [](const PlannedCase& p) { return p.timed; });
  std::cerr << fmt::format("mpscheck {} | LibTorch {} | target {} | {} cases, {} timed | {} | seed {} | {} threads | {} "
                           "job{}\n",
                           kVersion, report.environment["torch_version"].get<std::string>(), target.spec.str(),
                           plan.size(), timed, cfg.shard.empty() ? "no shard" : "shard " + cfg.shard, cfg.seed,
                           report.environment["threads"].get<int>(), loop.jobs, loop.jobs == 1 ? "" : "s");
  if (!cfg.shard_note.empty()) std::cerr << "mpscheck: shard: " << cfg.shard_note << '\n';
  if (!target.note.empty()) std::cerr << "mpscheck: " << target.note << '\n';
  if (const std::string policy = report.run.value("dtypes", ""); !policy.empty()) std::cerr << "mpscheck: " << policy << '\n';
  for (const auto& w : report.environment["warnings"]) std::cerr << "mpscheck: warning: " << w.get<std::string>() << '\n';
  if (cfg.resume)
    std::cerr << "mpscheck: resuming: " << journal.done.size() << " cases already in the journal"
              << (journal.damaged_lines ? fmt::format("; skipped {} damaged line{} (a case cut off mid-write runs again)",
                                                      journal.damaged_lines, journal.damaged_lines == 1 ? "" : "s")
                                        : std::string())
              << '\n';
}

// Report: every format asked for, the comparison with --baseline, the known failures; the exit code.
int report_run(const Config& cfg, RunReport& report, const RunInputs& inputs, const ResolvedTarget& target,
               const Registry& registry) {
  if (!inputs.expectations.empty())
    apply_expectations(inputs.expectations, report.environment, target.spec.str(), report.cases);
  report.known_issues = inputs.known_issues;
  const std::string path = cfg.report_path();
  const ReproTarget rt = repro_target(target.spec, cfg.seed, cfg.quick);
  const ReportContext ctx{report, path, &rt,
                          [&](const std::string& id) -> const Workload* {
                            const RegisteredWorkload* w = registry.find(id);
                            return w ? w->workload : nullptr;
                          },
                          std::cout, use_color(STDOUT_FILENO),
                          [&](const CaseResult& finding, const std::string& dir) {
                            const RegisteredWorkload* w = registry.find(finding.id);
                            if (!w) return LayerScript{{}, {}, {}, "the case is not loaded"};
                            return write_layer_reproducer(*w->workload, finding, rt, dir);
                          }};
  const Written written = write_reports(cfg, ctx, /*merging=*/false);
  if (written == Written::RecordFailed) return kExitUsage;
  bool regressed = false;
  if (inputs.baseline) {
    const Comparison c = compare_reports(*inputs.baseline, report);
    std::cout << '\n' << format_comparison(c, cfg.baseline_path, path);
    regressed = c.regressed();
  }
  for (const auto& c : report.cases)
    if (c.expected || c.unexpected_pass)
      std::cout << (c.unexpected_pass ? "unexpected pass: " : "known failure: ") << c.id << " — " << c.expectation << '\n';
  if (written != Written::All) return kExitUsage;
  if (g_interrupted) {
    std::cerr << "mpscheck: interrupted; " << report.cases.size() << " finished cases are in " << path
              << "; run again with --resume to finish\n";
    return kExitInterrupted;
  }
  return has_unexpected(report.cases) || regressed ? kExitFindings : kExitOk;
}

// `explore`: variants of the selected op cases, each judged as a case through a worker (core/explore.hpp).
// The run's target, or nothing after one line on stderr saying why it is unavailable.
std::optional<ResolvedTarget> resolve_target_or_say(const Config& cfg) {
  try {
    return resolve_target(cfg.target);
  } catch (const TargetUnavailable& e) {
    std::cerr << "mpscheck: " << e.what() << '\n';
    return std::nullopt;
  }
}

int explore_command(const Config& cfg, const Registry& registry) {
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
  if (auto bad = unwritable_file("--report-dir", out_path)) {
    std::cerr << "mpscheck: " << *bad << '\n';
    return kExitUsage;
  }
  const RunLoopOptions loop = run_loop_options(cfg, target.spec);
  ExploreOptions options;
  options.case_budget_s = cfg.explore_budget_s;
  options.run_budget_s = cfg.explore_run_budget_s;
  options.seed = cfg.seed;
  std::cerr << fmt::format("mpscheck {} | explore | target {} | {} cases, {} replayed | {:g} s per case, {:g} s per run | "
                           "seed {}\n",
                           kVersion, target.spec.str(), selected.size(), replay.size(), options.case_budget_s,
                           options.run_budget_s, cfg.seed);
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
  // Each variant as a verdict-only case on the one worker, with the op timeout.
  const RunCase run = [&](const std::string& id) {
    CaseResult r;
    try {
      r = runner.run(id, cfg.timeout_for_op(), /*time=*/false);
    } catch (const WorkerStartError& e) {
      stopped = e.what();
      r.id = id;
      r.status = Status::Error;
      r.phase = "reference";  // not a finding: nothing ran
      r.message = e.what();
    }
    return r;
  };
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
  if (stopped) {  // what ran is in the file; the rest could not
    std::cerr << "mpscheck: " << *stopped << "; the cases explored so far are in " << out_path << '\n';
    return kExitCannotRun;
  }
  std::cout << fmt::format("explored {} cases, {} variants: {} finding{}{}; {}\n", outcome.cases.size(), outcome.variants,
                           outcome.findings.size(), outcome.findings.size() == 1 ? "" : "s",
                           outcome.run_budget_spent ? " (the run's budget was spent)" : "", out_path);
  for (const auto& f : outcome.findings) std::cout << "finding: " << f.id << " — " << f.summary << '\n';
  if (g_interrupted) return kExitInterrupted;
  return outcome.findings.empty() ? kExitOk : kExitFindings;
}

int run_cases(int argc, char** argv, const Config& cfg) {
  const std::unique_ptr<CaseCatalog> catalog = load_catalog(cfg);
  const Registry& registry = catalog->registry();
  if (cfg.command == Command::Repro) return print_reproducer(cfg, registry);
  if (cfg.command == Command::Explore) return explore_command(cfg, registry);
  const std::vector<RegisteredWorkload> selected = select_cases(cfg, registry);
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
  const c10::ScalarType computes_in = target.spec.float_dtype();
  if (!cfg.model_path.empty() && is_pt2_path(cfg.model_path)) {
    // Every model the run loads is in the package and loads here, before anything runs.
    try {
      check_pt2(pt2_options(std::filesystem::absolute(cfg.model_path).string(), cfg.model_inputs, cfg.eager_path,
                            cfg.model_for),
                to_device(target.spec), computes_in);
    } catch (const BadModelInput& e) {
      std::cerr << "mpscheck: " << e.what() << '\n';
      return kExitUsage;
    }
  } else if (!cfg.model_path.empty() && (computes_in == c10::kHalf || computes_in == c10::kBFloat16)) {
    try {
      check_torchscript_computes_in(
          torchscript_options(std::filesystem::absolute(cfg.model_path).string(), cfg.model_inputs, cfg.model_for),
          computes_in);
    } catch (const GraphTracedInFloat32& e) {
      std::cerr << "mpscheck: " << e.what() << '\n';
      return kExitModelDtype;
    }
  }
  const RunInputs inputs = read_run_inputs(cfg);
  OpenedJournal journal = open_journal(cfg, target.spec);
  size_t twins = 0;
  const std::vector<PlannedCase> plan = plan_cases(cfg, selected, target.spec, &twins);
  const RunLoopOptions loop = run_loop_options(cfg, target.spec);

  if (cfg.threads > 0) at::set_num_threads(cfg.threads);
  RunReport report;
  report.environment = collect_environment({target.spec.str(), cfg.seed});
  report.run = {{"target", target.spec.str()},   {"seed", cfg.seed},
                {"quick", cfg.quick},             {"min_time_s", cfg.min_time()},
                {"selected", selected.size()},    {"filters", cfg.selection.filters},
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
  ConsoleReporter console(std::cout, isatty(STDOUT_FILENO), use_color(STDOUT_FILENO));
  const auto run_start = std::chrono::steady_clock::now();
  RunOutcome outcome = execute_plan(plan, journal.done, loop, timed_runner, *journal.journal, console);
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
  return report_run(cfg, report, inputs, target, registry);
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

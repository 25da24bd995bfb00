#include "core/run_setup.hpp"

#include <mpscheck/dtype_names.hpp>

#include "core/pt2_workload.hpp"
#include "core/reference_cache.hpp"
#include "core/run_plan.hpp"
#include "core/torchscript_workload.hpp"
#include "core/worker.hpp"
#include "core/report_outputs.hpp"

#include <ATen/Parallel.h>
#include <fmt/format.h>

#include <algorithm>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>

namespace mpscheck::app {

namespace {

void on_interrupt(int) { g_interrupted = 1; }

}  // namespace

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGXFSZ, SIG_IGN);  // a file-size limit makes the journal's write fail with EFBIG, reported as such
}

ReproTarget repro_target(const TargetSpec& spec, std::uint64_t seed, bool quick) {
  const c10::ScalarType dtype = spec.float_dtype();
  ReproTarget rt;
  rt.device = spec.device;
  rt.dtype = dtype_name(dtype);
  rt.seed = seed;
  rt.quick = quick;
  return rt;
}

std::optional<ResolvedTarget> resolve_target_or_say(const Config& cfg) {
  try {
    return resolve_target(cfg.target);
  } catch (const TargetUnavailable& e) {
    std::cerr << "mpscheck: " << e.what() << '\n';
    return std::nullopt;
  }
}

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

std::vector<RegisteredWorkload> select_cases(const Config& cfg, const Registry& registry) {
  auto selected = registry.select(cfg.selection);
  if (!cfg.shard.empty()) selected = take_shard(selected, parse_shard(cfg.shard));
  return selected;
}

void check_user_model(const Config& cfg, const ResolvedTarget& target) {
  if (cfg.model_path.empty()) return;
  const c10::ScalarType computes_in = target.spec.float_dtype();
  if (is_pt2_path(cfg.model_path)) {
    // Every model the run loads is in the package and loads here, before anything runs.
    try {
      check_pt2(pt2_options(std::filesystem::absolute(cfg.model_path).string(), cfg.model_inputs, cfg.eager_path,
                            cfg.model_for),
                to_device(target.spec), computes_in);
    } catch (const BadModelInput& e) {
      std::cerr << "mpscheck: " << e.what() << '\n';
      throw Exit{kExitUsage};
    }
  } else if (computes_in == c10::kHalf || computes_in == c10::kBFloat16) {
    try {
      check_torchscript_computes_in(
          torchscript_options(std::filesystem::absolute(cfg.model_path).string(), cfg.model_inputs, cfg.model_for),
          computes_in);
    } catch (const GraphTracedInFloat32& e) {
      std::cerr << "mpscheck: " << e.what() << '\n';
      throw Exit{kExitModelDtype};
    }
  }
}

RunInputs read_run_inputs(const Config& cfg, bool listing) {
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
  if (listing) return in;
  if (auto bad = unwritable_outputs(cfg)) {
    std::cerr << "mpscheck: " << *bad << '\n';
    throw Exit{kExitUsage};
  }
  return in;
}

namespace {

// A resumed journal's results whose case now computes from other files (a plugin rebuilt, a model
// file replaced, other --input specs or --model-for files) are dropped, so exactly those cases run
// again; the rest are marked resumed. Says on stderr which were dropped and why.
void keep_unchanged(JournalContents& previous, const std::map<std::string, std::string>& sources, OpenedJournal& j) {
  // A case listed twice (run again after an earlier change) counts by its latest line, whose
  // source previous.sources holds.
  for (auto& r : previous.results) {
    r.resumed = true;
    j.done[r.id] = std::move(r);
  }
  std::vector<std::string> changed;
  for (auto it = j.done.begin(); it != j.done.end();) {
    const auto now = sources.find(it->first);
    if (now != sources.end() && previous.sources[it->first] != now->second) {
      changed.push_back(it->first);
      it = j.done.erase(it);
    } else {
      ++it;
    }
  }
  if (changed.empty()) return;
  j.rerun = changed.size();
  std::cerr << fmt::format(
      "mpscheck: resume: {} case{} run again: what {} computed from changed since the journal (a plugin file, or "
      "a --model file, its --input specs or --model-for files): {}{}\n",
      changed.size(), changed.size() == 1 ? "" : "s", changed.size() == 1 ? "it" : "they", changed.front(),
      changed.size() > 1 ? fmt::format(" and {} more", changed.size() - 1) : std::string());
}

}  // namespace

OpenedJournal open_journal(const Config& cfg, const TargetSpec& target, const std::vector<PlannedCase>& plan,
                           int jobs) {
  static const std::string torch = current_torch_identity();
  // What every case of the run depends on: a change to any of these makes no old result reusable.
  const nlohmann::json header{{"mpscheck_journal", kJournalFormat},
                              {"target", target.str()},
                              {"seed", cfg.seed},
                              {"quick", cfg.quick},
                              {"torch", torch},
                              {"threads", cfg.threads > 0 ? cfg.threads : at::get_num_threads()},
                              {"jobs", jobs}};
  std::map<std::string, std::string> sources;
  for (const auto& p : plan) sources[p.workload.workload->id()] = case_source(p.workload);
  OpenedJournal j;
  try {
    if (cfg.resume) {
      auto previous = read_journal(cfg.journal_path());
      if (previous.header.value("mpscheck_journal", 0) != kJournalFormat)
        throw JournalError(fmt::format(
            "the journal {} was written by another mpscheck (journal format {}, this one writes {}), which records "
            "other facts about its run; start afresh without --resume",
            cfg.journal_path(), previous.header.value("mpscheck_journal", nlohmann::json()).dump(), kJournalFormat));
      for (const char* key : {"target", "seed", "quick", "torch", "threads", "jobs"}) {
        if (previous.header.value(key, nlohmann::json()) != header[key])
          throw JournalError(
              fmt::format("the journal {} was written with {} {}, this run has {}; resume with the same "
                          "options or start afresh without --resume",
                          cfg.journal_path(), key, previous.header[key].dump(), header[key].dump()));
      }
      keep_unchanged(previous, sources, j);
      j.damaged_lines = previous.damaged_lines;
    }
    j.journal = std::make_unique<Journal>(cfg.journal_path(), header, cfg.resume, std::move(sources));
  } catch (const JournalError& e) {
    std::cerr << "mpscheck: " << e.what() << '\n';
    throw Exit{kExitUsage};
  } catch (const std::runtime_error& e) {  // a plugin or model file that cannot be read for its digest
    std::cerr << "mpscheck: " << e.what() << '\n';
    throw Exit{kExitUsage};
  }
  return j;
}

std::string dtype_policy_text(const TargetSpec& target, size_t twins) {
  const c10::ScalarType reduced = target.float_dtype();
  if (reduced != c10::kBFloat16 && reduced != c10::kHalf) return {};
  const std::string name = dtype_name(reduced);
  const std::string twin = dtype_id(reduced);
  return fmt::format(
      "on {} every f32 case and model computes in {}; {} f32 op case{} the same computation as {} "
      "{} twin{} and run{} once, under the {} id; f16 and bf16 cases compute in their own dtype, "
      "integer and bool cases in theirs",
      target.str(), name, twins, twins == 1 ? " is" : "s are", twins == 1 ? "its" : "their", twin,
      twins == 1 ? "" : "s", twins == 1 ? "s" : "", twin);
}

std::vector<PlannedCase> plan_cases(const Config& cfg, const std::vector<RegisteredWorkload>& all,
                                    const TargetSpec& target, size_t* twins) {
  const c10::ScalarType reduced = target.float_dtype();
  const std::string reduced_short = reduced == c10::kBFloat16 || reduced == c10::kHalf ? dtype_id(reduced) : "";
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
  o.worker.target = target;
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
  if (!cfg.reference_cache.empty()) o.worker.reference_cache = std::filesystem::absolute(cfg.reference_cache).string();
  o.worker.reuse_reference_times = cfg.reuse_reference_times;
  o.worker.op_replay = cfg.op_replay;
  o.jobs = cfg.jobs > 0 ? cfg.jobs : default_jobs(target);
  o.verdict_threads = canonical_verdict_threads(target);
  o.worker.verdict_threads = o.verdict_threads;  // the timed worker judges on them too
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

}  // namespace mpscheck::app

#include "core/config.hpp"
#include "core/host_text.hpp"
#include "reports/version.hpp"
#include "core/workflow.hpp"
#include "reports/reporter.hpp"

#include <cerrno>
#include <cstdlib>
#include <filesystem>

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include <sstream>

namespace mpscheck {

namespace po = boost::program_options;

namespace {

// The option tables are laid out one option per line, as --help prints them.
// clang-format off
po::options_description visible_options() {
  po::options_description select("Choosing cases");
  select.add_options()
      ("all", "run every case (ops and models)")
      ("ops", "run operator cases")
      ("models", "run model cases")
      ("filter", po::value<std::vector<std::string>>()->composing(),
       "REGEX searched in case ids; a leading '-' excludes (repeatable)")
      ("list", "list the selected case ids and tags, run nothing")
      ("model", po::value<std::string>(), "check your own model: a TorchScript FILE.pt (with --input) or a .pt2 package")
      ("input", po::value<std::vector<std::string>>()->composing(),
       "an input of --model: DTYPE[d0,d1,...] or an integer range DTYPE[...]:LO..HI (repeatable, in order)")
      ("model-for", po::value<std::vector<std::string>>()->composing(),
       "DTYPE=FILE: with --model, the same model traced in DTYPE (float64, bfloat16, float16), run where a side "
       "computes in DTYPE (repeatable; scripts/export-hf.py writes them)")
      ("eager", po::value<std::string>(),
       "FILE.pt: with a .pt2 --model, the same model as TorchScript, run eagerly for the CPU float32 reference, the "
       "float64 gold and the rounded-input baseline (scripts/mpscheck-export.py writes both)")
      ("train", "with --model: also compare parameter gradients of the sum of the outputs");
  po::options_description run("Running");
  run.add_options()
      ("target", po::value<std::string>()->default_value("auto"),
       "mps | cuda | cpu, optionally :float16 or :bfloat16 (auto: first accelerator, else cpu:bfloat16)")
      ("quick", "small shapes and few training steps, for CI and tests")
      ("huge", "also the cases tagged huge (past 2^31 elements; each skipped where it does not fit in memory)")
      ("seed", po::value<std::string>()->default_value("0"), "seed for inputs and initial weights (0 to 2^64-1)")
      ("threads", po::value<int>()->default_value(0), "CPU intra-op threads (0: LibTorch's default)")
      ("jobs,j", po::value<int>()->default_value(0),
       "workers for the cases that are not timed (0: the number of cores on cpu targets, 1 on accelerators); "
       "timed cases always run alone")
      ("timeout", po::value<double>(), "seconds before a case is killed (default 300 ops / 1800 models; 60 / 300 with --quick)")
      ("min-time", po::value<double>(), "timing budget per side per case in seconds (default 0.2; 0.02 with --quick; 0 skips timing)")
      ("plugin-dir", po::value<std::vector<std::string>>()->composing(), "also load the plugins in DIR (repeatable)")
      ("no-default-plugins", "do not load the plugins shipped next to the binary")
      ("resume", "continue the run recorded in the report folder's journal, skipping finished cases")
      ("reference-cache", po::value<std::string>(),
       "keep the CPU reference results (outputs, determinism, float64, times) in DIR and reuse them in later runs "
       "with the same LibTorch, CPU, threads, seed, --quick and plugin version")
      ("reuse-reference-times", "with --reference-cache: time only the target, against the cached reference time")
      ("no-op-replay", "judge a model at its outputs only: do not replay its ATen calls one by one on the target");
  po::options_description out("Reports");
  out.add_options()
      ("report-dir", po::value<std::string>()->default_value("mpscheck-report"),
       "folder for the journal and default reports")
      ("verbose", "on a terminal too, print every case's line, not only the findings' (off a terminal every case has its line)");
  for (const Reporter* r : reporters())  // one flag per report format
    if (*r->flag()) out.add_options()(r->flag(), po::value<std::string>(), r->help());
  out.add_options()
      ("expect", po::value<std::string>(), "known failures (docs/ci.md): only unexpected results fail the run")
      ("known-issues", po::value<std::string>(), "the table of upstream issues findings are matched to by fingerprint (default: expectations/known-issues.tsv)")
      ("baseline", po::value<std::string>(), "an earlier report.json: print regressions and fixes; a regression fails the run")
      ("shard", po::value<std::string>(), "run shard I of N (I/N, 1-based), or 'auto': the shard GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS name")
      ("output,o", po::value<std::string>(), "merge: where to write the merged JSON report; expect: the expectations file")
      ("from", po::value<std::string>(), "repro: take the observed values from this report.json; expect: the report to draft from")
      ("script", "repro: print only the Python reproducer")
      ("explore-budget", po::value<double>(), "explore: seconds per selected case (default 60)")
      ("explore-run-budget", po::value<double>(), "explore: seconds for the whole run (default 600)")
      ("cells", "merge: the reports come from several runners (cells), not shards: label each finding as "
                "everywhere, cell-specific or new, in a case x cell matrix (-o JSON, --html)");
  po::options_description misc("Other");
  misc.add_options()
      ("help,h", "show this help")
      ("version", "show the version");
  std::string merge_reports;  // the formats merge can write besides its JSON
  for (const Reporter* r : reporters())
    if (r->in_merge() && r->destination() == Destination::File && std::string(r->flag()) != "json")
      merge_reports += fmt::format("{}--{} F", merge_reports.empty() ? "" : " ", r->flag());
  po::options_description all("Usage: mpscheck [--all | --ops | --models | --filter REGEX] [options]\n"
                              "       mpscheck env\n"
                              "       mpscheck repro CASE_ID [--target T] [--from REPORT.json] [--script]\n"
                              "       mpscheck explore --filter REGEX [--target T] [--explore-budget SEC] [--explore-run-budget SEC]\n"
                              "       mpscheck compare OLD.json NEW.json\n"
                              "       mpscheck expect --from REPORT.json [-o FILE.expect]\n"
                              "       mpscheck merge A.json B.json ... -o OUT.json [" + merge_reports + "]\n"
                              "       mpscheck merge --cells [NAME=]A.json [NAME=]B.json ... -o OUT.json [--html F]\n");
  all.add(select).add(run).add(out).add(misc);
  return all;
}
// clang-format on

// The command line against every option, visible and hidden (the subcommand and its arguments).
po::variables_map parse_options(int argc, const char* const* argv, const po::options_description& options) {
  po::options_description hidden;
  // clang-format off
  hidden.add_options()("worker", "internal: run cases for a host over a pipe")
      ("command", po::value<std::string>(), "subcommand")
      ("arguments", po::value<std::vector<std::string>>(), "subcommand arguments");
  // clang-format on
  po::options_description everything;
  everything.add(options).add(hidden);
  po::positional_options_description positional;
  positional.add("command", 1).add("arguments", -1);

  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(everything).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(fmt::format("{}; see 'mpscheck --help'", e.what()));
  }
  return vm;
}

// The subcommand and its arguments, each checked against what that subcommand takes.
void read_command(const po::variables_map& vm, Config& c) {
  if (vm.count("command")) {
    const std::string cmd = vm["command"].as<std::string>();
    if (cmd == "env")
      c.command = Command::Env;
    else if (cmd == "repro")
      c.command = Command::Repro;
    else if (cmd == "compare")
      c.command = Command::Compare;
    else if (cmd == "merge")
      c.command = Command::Merge;
    else if (cmd == "expect")
      c.command = Command::Expect;
    else if (cmd == "explore")
      c.command = Command::Explore;
    else
      throw UsageError(
          fmt::format("unknown command '{}'; commands: env, repro CASE_ID, compare OLD NEW, merge A B... -o OUT, "
                      "expect --from REPORT, explore --filter REGEX "
                      "(see 'mpscheck --help')",
                      cmd));
  }
  if (vm.count("arguments")) c.arguments = vm["arguments"].as<std::vector<std::string>>();
  if (c.command == Command::Repro && c.arguments.size() != 1)
    throw UsageError("repro takes exactly one case id: mpscheck repro CASE_ID [--target T]");
  if (c.command == Command::Compare && c.arguments.size() != 2)
    throw UsageError("compare takes two reports: mpscheck compare OLD.json NEW.json");
  if (c.command == Command::Merge && (c.arguments.empty() || !vm.count("output")))
    throw UsageError("merge takes reports and an output: mpscheck merge A.json B.json ... -o OUT.json");
  if (c.command != Command::Repro && c.command != Command::Compare && c.command != Command::Merge &&
      !c.arguments.empty())
    throw UsageError(fmt::format("unexpected argument '{}'; see 'mpscheck --help'", c.arguments.front()));
  if (c.command == Command::Expect && !vm.count("from"))
    throw UsageError(
        "expect drafts an expectations file from a report: mpscheck expect --from REPORT.json [-o FILE.expect]");
  if (vm.count("worker")) c.command = Command::Worker;
}

// --seed: a whole number from 0 to 2^64-1, in decimal. Boost reads "-5" into an unsigned as
// 2^64-5, which would run, and record, another seed than the one typed.
std::uint64_t read_seed(const std::string& text) {
  const bool digits = !text.empty() && text.size() <= 20 && text.find_first_not_of("0123456789") == std::string::npos;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = digits ? std::strtoull(text.c_str(), &end, 10) : 0;
  if (!digits || errno == ERANGE || *end != '\0')
    throw UsageError(fmt::format("--seed '{}' is not a whole number from 0 to 18446744073709551615", text));
  return static_cast<std::uint64_t>(v);
}

// Which cases, on which target, how long and where the reports go.
void read_run_options(const po::variables_map& vm, Config& c) {
  c.all = vm.count("all") > 0;
  c.selection.ops = vm.count("ops") > 0;
  c.selection.models = vm.count("models") > 0;
  if (c.all) c.selection.ops = c.selection.models = true;
  if (vm.count("filter")) c.selection.filters = vm["filter"].as<std::vector<std::string>>();
  try {
    CaseFilter check(c.selection.filters);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (vm.count("list") && c.command == Command::Run) c.command = Command::List;

  try {
    c.target = parse_target(vm["target"].as<std::string>());
  } catch (const BadTarget& e) {
    throw UsageError(e.what());
  }
  c.quick = vm.count("quick") > 0;
  c.selection.skip_large = c.quick;
  c.selection.huge = vm.count("huge") > 0;
  c.seed = read_seed(vm["seed"].as<std::string>());
  c.threads = vm["threads"].as<int>();
  if (c.threads < 0) throw UsageError("--threads must be 0 (LibTorch's default) or a positive count");
  c.jobs = vm["jobs"].as<int>();
  if (c.jobs < 0 || c.jobs > 256) throw UsageError("--jobs must be 0 (automatic) or a count of workers from 1 to 256");
  if (vm.count("timeout")) {
    c.timeout_s = vm["timeout"].as<double>();
    if (!(c.timeout_s > 0)) throw UsageError("--timeout must be a positive number of seconds");
  }
  if (vm.count("min-time")) {
    c.min_time_s = vm["min-time"].as<double>();
    if (!(c.min_time_s >= 0)) throw UsageError("--min-time must be 0 or a positive number of seconds");
  }
  if (vm.count("plugin-dir")) c.plugin_dirs = vm["plugin-dir"].as<std::vector<std::string>>();
  c.default_plugins = vm.count("no-default-plugins") == 0;
  c.resume = vm.count("resume") > 0;
  c.report_dir = vm["report-dir"].as<std::string>();
  c.verbose = vm.count("verbose") > 0;
  for (const Reporter* r : reporters())
    if (*r->flag() && vm.count(r->flag())) c.report_destinations[r->flag()] = vm[r->flag()].as<std::string>();
  auto text = [&](const char* key, std::string& out) {
    if (vm.count(key)) out = vm[key].as<std::string>();
  };
  text("expect", c.expect_path);
  text("known-issues", c.known_issues_path);
  text("reference-cache", c.reference_cache);
  c.reuse_reference_times = vm.count("reuse-reference-times") > 0;
  c.op_replay = vm.count("no-op-replay") == 0;
  if (c.reuse_reference_times && c.reference_cache.empty())
    throw UsageError("--reuse-reference-times goes with --reference-cache DIR");
  text("baseline", c.baseline_path);
  text("shard", c.shard);
  text("output", c.output_path);
  text("from", c.from_report);
  c.script_only = vm.count("script") > 0;
  for (const auto& [key, out] : {std::pair<const char*, double*>{"explore-budget", &c.explore_budget_s},
                                 std::pair<const char*, double*>{"explore-run-budget", &c.explore_run_budget_s}}) {
    if (!vm.count(key)) continue;
    if (c.command != Command::Explore)
      throw UsageError(fmt::format("--{} goes with explore: mpscheck explore --filter REGEX --{} SEC", key, key));
    *out = vm[key].as<double>();
    if (!(*out > 0) || *out > 1e7) throw UsageError(fmt::format("--{} must be a positive number of seconds", key));
  }
  c.cells = vm.count("cells") > 0;
  if (c.cells && c.command != Command::Merge)
    throw UsageError("--cells goes with merge: mpscheck merge --cells A.json B.json -o OUT.json");
}

// --shard, with `auto` read from a test runner's GTEST_SHARD_* variables.
void read_shard(Config& c) {
  // A test runner's GTEST_SHARD_* are read only when asked: an mpscheck started inside a sharded
  // test must not silently run a slice of its cases.
  const char* index = std::getenv("GTEST_SHARD_INDEX");
  const char* total = std::getenv("GTEST_TOTAL_SHARDS");
  const bool gtest_shard = index && total && *index && *total;
  if (c.shard == "auto") {
    c.shard.clear();
    if (gtest_shard) {
      const std::string i(index), n(total);
      const bool numbers = i.size() <= 9 && n.size() <= 9 && i.find_first_not_of("0123456789") == std::string::npos &&
                           n.find_first_not_of("0123456789") == std::string::npos;
      if (!numbers)
        throw UsageError(
            fmt::format("--shard auto: GTEST_SHARD_INDEX={} / GTEST_TOTAL_SHARDS={} are not counts; "
                        "unset them or pass --shard I/N",
                        i.substr(0, 20), n.substr(0, 20)));
      c.shard = std::to_string(std::stol(i) + 1) + "/" + n;
      c.shard_note = "from GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS (--shard auto)";
    } else {
      c.shard_note = "--shard auto, but GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS are not set: running every case";
    }
  } else if (gtest_shard && c.shard.empty()) {
    c.shard_note = "GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS are set but ignored; pass --shard auto to run only that slice";
  }
  if (!c.shard.empty()) {
    try {
      parse_shard(c.shard);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
}

// The user's own model: --model, --input, --train, --eager, --model-for.
void read_model_options(const po::variables_map& vm, Config& c) {
  if (vm.count("model")) c.model_path = vm["model"].as<std::string>();
  if (vm.count("input")) c.model_inputs = vm["input"].as<std::vector<std::string>>();
  c.train = vm.count("train") > 0;
  if (vm.count("eager")) c.eager_path = std::filesystem::absolute(vm["eager"].as<std::string>()).string();
  if (!c.eager_path.empty() && !(c.model_path.size() > 4 && c.model_path.substr(c.model_path.size() - 4) == ".pt2"))
    throw UsageError("--eager FILE.pt goes with a .pt2 package as --model: mpscheck --model NAME.pt2 --eager NAME.pt");
  if (c.train && c.model_path.size() > 4 && c.model_path.substr(c.model_path.size() - 4) == ".pt2")
    throw UsageError(
        "--train: a .pt2 package is compiled for inference only; check training with the model's "
        "TorchScript file as --model FILE.pt --train");
  if (vm.count("model-for")) {
    for (const auto& v : vm["model-for"].as<std::vector<std::string>>()) {
      const auto eq = v.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
        throw UsageError(fmt::format("--model-for {}: give DTYPE=FILE, e.g. --model-for bfloat16=model.bfloat16.pt",
                                     v.substr(0, 200)));
      // Absolute here, as --model is in the host: the workers open the same file.
      c.model_for.push_back(v.substr(0, eq + 1) + std::filesystem::absolute(v.substr(eq + 1)).string());
    }
  }
  if (c.model_path.empty() && (!c.model_inputs.empty() || c.train || !c.model_for.empty()))
    throw UsageError("--input, --model-for and --train go with --model FILE.pt");
}

// What crosses to the workers, and the selection a --model run or an explore needs.
void check_selection(Config& c) {
  // What the workers must open byte for byte crosses the worker protocol as JSON text: refused
  // here, in one line, rather than repaired into a name that does not exist. Everything else from
  // the command line is only reported, and is repaired where it enters a report.
  std::vector<std::pair<const char*, std::string>> to_workers = {{"--model", c.model_path},
                                                                 {"--reference-cache", c.reference_cache}};
  for (const auto& d : c.plugin_dirs) to_workers.emplace_back("--plugin-dir", d);
  for (const auto& i : c.model_inputs) to_workers.emplace_back("--input", i);
  for (const auto& f : c.model_for) to_workers.emplace_back("--model-for", f);
  to_workers.emplace_back("--eager", c.eager_path);
  for (const auto& [option, value] : to_workers)
    if (auto refusal = not_utf8(option, value)) throw UsageError(*refusal);
  if (!c.model_path.empty() && c.selection.filters.empty() && !c.selection.ops && !c.selection.models)
    c.selection.filters.push_back("^model/(torchscript|pt2)/");
  const bool chose = c.selection.ops || c.selection.models || !c.selection.filters.empty();
  if (c.command == Command::Explore && (c.selection.filters.empty() || !c.model_path.empty()))
    throw UsageError("explore varies op cases: mpscheck explore --filter REGEX (or a case id it printed) [--target T]");
  if ((c.command == Command::Run) && !chose)
    throw UsageError("nothing selected: pass --all, --ops, --models or --filter REGEX (see 'mpscheck --help')");
}

}  // namespace

Config parse_command_line(int argc, const char* const* argv, std::string* out_text) {
  const po::options_description options = visible_options();
  const po::variables_map vm = parse_options(argc, argv, options);
  Config c;
  if (vm.count("help")) {
    c.command = Command::Help;
    if (out_text) {
      std::ostringstream s;
      s << options;
      *out_text = s.str();
    }
    return c;
  }
  if (vm.count("version")) {
    c.command = Command::Version;
    if (out_text) *out_text = std::string("mpscheck ") + kVersion;
    return c;
  }
  read_command(vm, c);
  read_run_options(vm, c);
  read_shard(c);
  read_model_options(vm, c);
  check_selection(c);
  return c;
}

}  // namespace mpscheck

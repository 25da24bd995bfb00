// Everything a run is configured with, parsed from the command line (core/cli.cpp).
#pragma once

#include "core/registry.hpp"
#include "core/target.hpp"

#include <cstdint>
#include <stdexcept>
#include <map>
#include <string>
#include <vector>

namespace mpscheck {

enum class Command { Run, List, Worker, Env, Repro, Compare, Merge, Expect, Explore, Help, Version };

struct Config {
  Command command = Command::Run;
  Selection selection;
  bool all = false;
  TargetSpec target;
  bool quick = false;
  std::uint64_t seed = 0;
  int threads = 0;         // 0: LibTorch's default
  int jobs = 0;            // verdict-only workers at once; 0: auto (cores on cpu targets, 1 on accelerators)
  double timeout_s = 0;    // 0: per kind (see default_timeout)
  double min_time_s = -1;  // timing budget per side; <0: 0.2 s, or 0.02 s with --quick (5,722 op cases in minutes)
  std::string report_dir = "mpscheck-report";
  std::vector<std::string> plugin_dirs;
  bool default_plugins = true;  // load the plugins shipped next to the binary
  bool resume = false;
  bool verbose = false;                   // --verbose: every case's line on a terminal too, not only the findings'
  std::string reference_cache;            // --reference-cache DIR: CPU reference results kept between runs
  bool reuse_reference_times = false;     // with it: time only the target, against the cached reference time
  bool op_replay = true;                  // model cases: replay their ATen calls (--no-op-replay: off)
  std::vector<std::string> arguments;     // after a subcommand: `repro CASE_ID`
  std::string model_path;                 // --model FILE.pt
  std::vector<std::string> model_inputs;  // --input SPEC, in the model's argument order
  std::vector<std::string> model_for;     // --model-for DTYPE=FILE: the graph computations in DTYPE run, FILE absolute
  std::string eager_path;                 // --eager FILE.pt, absolute: a .pt2 model's eager TorchScript
  bool train = false;                     // --train: also compare parameter gradients
  std::map<std::string, std::string> report_destinations;  // reporter flag -> FILE or DIR (reports/reporters.cpp)
  std::string expect_path;                                 // --expect FILE: known failures
  std::string known_issues_path;  // --known-issues FILE: fingerprints of upstream issues (else the shipped table)
  std::string baseline_path;      // --baseline OLD.json: regressions and fixes
  std::string shard;              // --shard I/N, or --shard auto: GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS
  std::string shard_note;         // where the shard came from, or why GTEST_* were not used
  std::string output_path;        // merge -o OUT.json
  std::string from_report;        // repro --from REPORT.json
  bool script_only = false;
  double explore_budget_s = 60;       // explore: seconds per declared case
  double explore_run_budget_s = 600;  // explore: seconds for the whole run
  bool cells = false;  // merge --cells: the reports are runners side by side, not shards            // repro --script:
                       // the Python reproducer alone

  double min_time() const { return min_time_s >= 0 ? min_time_s : (quick ? 0.02 : 0.2); }
  double timeout_for_model() const { return timeout_s > 0 ? timeout_s : (quick ? 300 : 1800); }
  double timeout_for_op() const { return timeout_s > 0 ? timeout_s : (quick ? 60 : 300); }
  std::string journal_path() const { return report_dir + "/journal.jsonl"; }
  std::string report_path() const {
    const auto it = report_destinations.find("json");
    return it == report_destinations.end() ? report_dir + "/report.json" : it->second;
  }
};

// Bad command line: the message is one line saying what is wrong and what to do.
struct UsageError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// Parses argv. Throws UsageError. Command::Help / Version carry their text in `out_text`.
Config parse_command_line(int argc, const char* const* argv, std::string* out_text = nullptr);

}  // namespace mpscheck

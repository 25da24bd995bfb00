// --jobs: verdict-only cases on several workers give exactly the verdicts of one worker, crashes
// and hangs included; under --quick only the plan's cases are timed, and they run alone.
#include "harness.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

using namespace mpscheck::testing;

namespace {
std::map<std::string, std::string> statuses(const nlohmann::json& report) {
  std::map<std::string, std::string> s;
  for (const auto& [id, c] : cases_by_id(report)) s[id] = c["status"].get<std::string>() + " " + c.value("signal", "");
  return s;
}
}  // namespace

TEST(Jobs, TwoWorkersGiveTheVerdictsOfOneIncludingCrashesAndHangs) {
  // --min-time 0: every case is verdict-only, so with --jobs 2 all of them share two workers.
  const std::vector<std::string> base{"--plugin-dir",
                                      test_plugins_dir(),
                                      "--filter",
                                      "^op/faults/(healthy|segfault|abort|hang|throw|unsupported|nan|wrong)$|"
                                      "^op/activation/(gelu|relu)/f32/",
                                      "--target",
                                      "cpu",
                                      "--quick",
                                      "--timeout",
                                      "4",
                                      "--min-time",
                                      "0"};
  std::map<std::string, std::string> by_jobs[2];
  for (int jobs : {1, 2}) {
    SCOPED_TRACE("--jobs " + std::to_string(jobs));
    const std::string dir = fresh_dir("jobs-" + std::to_string(jobs));
    auto args = base;
    args.insert(args.end(), {"--jobs", std::to_string(jobs)});
    const auto r = run_mpscheck(args, dir);
    ASSERT_EQ(r.exit_code, 1) << r.err;  // the faults are findings
    const auto report = read_json_file(dir + "/mpscheck-report/report.json");
    EXPECT_EQ(report["run"]["jobs"], jobs);
    by_jobs[jobs - 1] = statuses(report);
    EXPECT_EQ(std::filesystem::exists(dir + "/mpscheck-report/worker-2.log"), jobs == 2);
    // Every finished case is in the journal, whatever order the workers finished in.
    const std::string journal = read_text_file(dir + "/mpscheck-report/journal.jsonl");
    EXPECT_EQ(static_cast<size_t>(std::count(journal.begin(), journal.end(), '\n')), by_jobs[jobs - 1].size() + 1);
  }
  ASSERT_GT(by_jobs[0].size(), 10u);
  EXPECT_EQ(by_jobs[0], by_jobs[1]);
  EXPECT_EQ(by_jobs[1].at("op/faults/segfault"), "crash SIGSEGV");
  EXPECT_EQ(by_jobs[1].at("op/faults/hang"), "timeout ");
  EXPECT_EQ(by_jobs[1].at("op/faults/wrong"), "mismatch ");
}

// The whole quick catalog on cpu, verdicts only: one worker on --threads 2 and two workers give the
// same status for every case. The CPU's own float16/bfloat16 kernels answer differently on one
// thread and on two (layer_norm's backward), and 7 cases flipped between mismatch and pass with
// --jobs; every verdict is now computed on the same threads (core/run_loop.hpp).
TEST(Jobs, EveryCaseOfTheQuickCatalogHasOneVerdictWhateverJobsAndThreads) {
  const std::vector<std::string> base{"--all", "--quick", "--target", "cpu", "--min-time", "0"};
  std::map<std::string, std::string> by_split[2];
  const std::vector<std::string> splits[2] = {{"--jobs", "1", "--threads", "2"}, {"--jobs", "2"}};
  for (int k = 0; k < 2; ++k) {
    const std::string dir = fresh_dir("jobs-catalog-" + std::to_string(k));
    auto args = base;
    args.insert(args.end(), splits[k].begin(), splits[k].end());
    const auto r = run_mpscheck(args, dir);
    ASSERT_LE(r.exit_code, 1) << r.err;
    by_split[k] = statuses(read_json_file(dir + "/mpscheck-report/report.json"));
  }
  ASSERT_GT(by_split[0].size(), 4000u);
  std::vector<std::string> differ;
  for (const auto& [id, status] : by_split[0])
    if (by_split[1].count(id) == 0 || by_split[1].at(id) != status)
      differ.push_back(id + ": " + status + "with --jobs 1, " +
                       (by_split[1].count(id) ? by_split[1].at(id) : "absent") + "with --jobs 2");
  EXPECT_EQ(by_split[0].size(), by_split[1].size());
  EXPECT_TRUE(differ.empty()) << differ.size() << " cases differ, the first: " << differ.front();
}

// Run once: the busy rule reads how long the reference's threads waited for a CPU, so a quiet
// machine gives a claim every time, with no retry to mask a rule that misfires.
TEST(Jobs, QuickTimesOnlyThePlannedCasesAndSaysWhich) {
  const std::string dir = fresh_dir("jobs-timed");
  const auto r =
      run_mpscheck({"--plugin-dir", test_plugins_dir(), "--filter", "^op/faults/slow$|^op/activation/gelu/f32/",
                    "--target", "cpu", "--quick", "--jobs", "2"},
                   dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto report = read_json_file(dir + "/mpscheck-report/report.json");
  const auto cases = cases_by_id(report);
  ASSERT_GT(cases.size(), 3u);
  int timed = 0;
  for (const auto& [id, c] : cases) {
    const bool should = id == "op/activation/gelu/f32/contiguous/forward" || id == "op/faults/slow";
    EXPECT_EQ(c["timed"], should) << id;
    EXPECT_EQ(c["reference_time"].is_null(), !should) << id;
    timed += should;
  }
  EXPECT_EQ(report["run"]["timed"], timed);
  EXPECT_NE(r.err.find("2 timed"), std::string::npos) << r.err;
  // The planted 10x slow kernel is called slower: timed alone, and confirmed on fresh instances.
  const auto& slow = cases.at("op/faults/slow");
  EXPECT_EQ(slow["speed_class"], "slower") << slow["speed_note"];
  EXPECT_NE(slow["speed_note"].get<std::string>().find("three rounds"), std::string::npos) << slow["speed_note"];
}

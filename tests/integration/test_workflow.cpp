// CI workflows end to end: expectations, compare, shards + merge, bug reports.
#include "harness.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace mpscheck::testing;

namespace {
const std::vector<std::string> kFaults{"--filter",
                                       "op/faults/(abort|healthy|nan|wrong|unsupported)$",
                                       "--plugin-dir",
                                       test_plugins_dir(),
                                       "--no-default-plugins",
                                       "--target",
                                       "cpu",
                                       "--quick",
                                       "--min-time",
                                       "0.01",
                                       "--timeout",
                                       "20"};

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}
}  // namespace

TEST(Expect, ListedFaultsPassTheRunAndRemovingOneFailsIt) {
  const std::string dir = fresh_dir("expect");
  const std::string lines[] = {"op/faults/abort  crash  # planted abort", "op/faults/nan  nan",
                               "op/faults/wrong  mismatch  # https://example.invalid/issue/1",
                               "op/faults/unsupported  unsupported"};
  {
    std::ofstream f(dir + "/known.expect");
    for (const auto& l : lines) f << l << '\n';
  }
  auto r = run_mpscheck(with(kFaults, {"--expect", "known.expect"}), dir);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  {
    std::ofstream f(dir + "/known.expect");
    for (int i = 1; i < 4; ++i) f << lines[i] << '\n';  // the abort line removed
  }
  r = run_mpscheck(with(kFaults, {"--expect", "known.expect"}), dir);
  EXPECT_EQ(r.exit_code, 1);
  {
    std::ofstream f(dir + "/known.expect");
    for (const auto& l : lines) f << l << '\n';
    f << "op/faults/healthy  mismatch  # fixed upstream since\n";
  }
  r = run_mpscheck(with(kFaults, {"--expect", "known.expect"}), dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("unexpected pass: op/faults/healthy"), std::string::npos) << r.out;
  const auto cases = cases_by_id(read_json_file(dir + "/mpscheck-report/report.json"));
  EXPECT_TRUE(cases.at("op/faults/healthy")["unexpected_pass"].get<bool>());
  EXPECT_TRUE(cases.at("op/faults/nan")["expected"].get<bool>());
}

TEST(Expect, MalformedFileExitsTwoNamingTheLineBeforeRunning) {
  const std::string dir = fresh_dir("expect-bad");
  std::ofstream(dir + "/bad.expect") << "# ok\nop/faults/abort  crash\nop/faults/nan  explodes\n";
  const auto r = run_mpscheck(with(kFaults, {"--expect", "bad.expect"}), dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad.expect:3:"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/mpscheck-report/report.json"));
}

TEST(Compare, NamesExactlyThePlantedRegression) {
  const std::string dir = fresh_dir("compare");
  const std::vector<std::string> args{"--filter",
                                      "op/faults/(healthy|slow)$",
                                      "--plugin-dir",
                                      test_plugins_dir(),
                                      "--no-default-plugins",
                                      "--target",
                                      "cpu",
                                      "--quick",
                                      "--min-time",
                                      "0.05"};
  ASSERT_EQ(run_mpscheck(with(args, {"--json", "old.json"}), dir).exit_code, 0);
  ASSERT_EQ(run_mpscheck(with(args, {"--json", "new.json"}), dir).exit_code, 0);
  auto old_report = read_json_file(dir + "/old.json");
  auto new_report = read_json_file(dir + "/new.json");
  // Plant the regression: in the old report, the slow case had the healthy case's target timing.
  nlohmann::json healthy_time;
  for (auto& c : old_report["cases"])
    if (c["id"] == "op/faults/healthy") healthy_time = c["target_time"];
  for (auto& c : old_report["cases"])
    if (c["id"] == "op/faults/slow") c["target_time"] = healthy_time;
  // Healthy keeps identical timings in both, so only the planted case can differ.
  for (auto& c : new_report["cases"])
    if (c["id"] == "op/faults/healthy") c["target_time"] = healthy_time;
  std::ofstream(dir + "/old.json") << old_report.dump();
  std::ofstream(dir + "/new.json") << new_report.dump();
  const auto r = run_shell("'" + binary() + "' compare old.json new.json", dir);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("Speed regressions (1)\n  op/faults/slow "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Newly failing (0)"), std::string::npos) << r.out;
  const auto same = run_shell("'" + binary() + "' compare new.json new.json", dir);
  EXPECT_EQ(same.exit_code, 0) << same.out;
  const auto bad = run_shell("'" + binary() + "' compare new.json missing.json", dir);
  EXPECT_EQ(bad.exit_code, 2);
}

TEST(Shards, ThreeMergedShardsEqualTheUnshardedRun) {
  const std::string dir = fresh_dir("shards");
  std::vector<std::string> base{"--filter",
                                "op/shape/cat|op/faults/(abort|healthy|nan|wrong|throw)$",
                                "--plugin-dir",
                                test_plugins_dir(),
                                "--target",
                                "cpu",
                                "--quick",
                                "--min-time",
                                "0",
                                "--timeout",
                                "5"};
  run_mpscheck(with(base, {"--json", "all.json", "--report-dir", "r0"}), dir);
  for (int i = 1; i <= 3; ++i)
    run_mpscheck(with(base, {"--shard", std::to_string(i) + "/3", "--json", "s" + std::to_string(i) + ".json",
                             "--report-dir", "r" + std::to_string(i)}),
                 dir);
  const auto m = run_shell("'" + binary() + "' merge s1.json s2.json s3.json -o merged.json", dir);
  EXPECT_EQ(m.exit_code, 1) << m.err;  // the faults are findings
  const auto all = cases_by_id(read_json_file(dir + "/all.json"));
  const auto merged = cases_by_id(read_json_file(dir + "/merged.json"));
  ASSERT_EQ(merged.size(), all.size());
  ASSERT_GT(all.size(), 6u);
  for (const auto& [id, c] : all) {
    ASSERT_TRUE(merged.count(id)) << id;
    EXPECT_EQ(merged.at(id)["status"], c["status"]) << id;
  }
  // Shards are disjoint and GTEST_* variables pick the same split (with --shard auto only).
  const auto s2 = cases_by_id(read_json_file(dir + "/s2.json"));
  run_mpscheck(with(base, {"--shard", "auto", "--json", "g.json", "--report-dir", "rg"}), dir,
               {"GTEST_SHARD_INDEX=1", "GTEST_TOTAL_SHARDS=3"});
  const auto g = cases_by_id(read_json_file(dir + "/g.json"));
  EXPECT_EQ(g.size(), s2.size());
  for (const auto& [id, c] : s2) EXPECT_TRUE(g.count(id)) << id;
}

TEST(BugReports, OneFilePerFindingWithReproducerAndEnvironment) {
  const std::string dir = fresh_dir("bug-reports");
  const auto r = run_mpscheck(with(kFaults, {"--bug-reports", "bugs"}), dir);
  EXPECT_EQ(r.exit_code, 1);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/bugs")) {
    if (e.path().filename() == "fingerprints.md") continue;  // the index by fingerprint, not a report
    ++files;
    const std::string text = read_text_file(e.path().string());
    EXPECT_NE(text.find("### 🐛 Describe the bug"), std::string::npos);
    EXPECT_NE(text.find("### Versions"), std::string::npos);
    EXPECT_NE(text.find("torch_version"), std::string::npos);
  }
  EXPECT_EQ(files, 4);  // abort, nan, wrong, unsupported
  const std::string index = read_text_file(dir + "/bugs/fingerprints.md");
  EXPECT_NE(index.find("(op_faults_wrong.md)"), std::string::npos) << index;
  const std::string wrong = read_text_file(dir + "/bugs/op_faults_wrong.md");
  EXPECT_NE(wrong.find("| `out` |"), std::string::npos) << wrong;
  EXPECT_NE(wrong.find("1 of 256"), std::string::npos) << wrong;
}

TEST(BugReports, ReproFromAReportIncludesThePythonScript) {
  const std::string dir = fresh_dir("repro-from");
  run_mpscheck({"--filter", "op/shape/cat/f32/contiguous/forward", "--target", "cpu", "--quick", "--min-time", "0"},
               dir);
  const auto r = run_mpscheck(
      {"repro", "op/shape/cat/f32/contiguous/forward", "--from", "mpscheck-report/report.json", "--target", "cpu"},
      dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("```python\n# mpscheck reproducer"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("torch.cat([a, b], 0)"), std::string::npos);
  const auto missing = run_mpscheck({"repro", "op/no/such", "--target", "cpu"}, dir);
  EXPECT_EQ(missing.exit_code, 2);
}

// `expect --from` drafts one line per finding (cause and bounds included); fed back, the same run
// exits 0, and the planted wrong element grown from 1e-3 to 0.5 breaks its line's max_abs bound.
TEST(ExpectFrom, DraftedLinesPassTheSameRunAndFailOneThatGetsWorse) {
  const std::string dir = fresh_dir("expect-from");
  const auto first = run_mpscheck(kFaults, dir);
  ASSERT_EQ(first.exit_code, 1) << first.err;
  const auto drafted = run_mpscheck({"expect", "--from", "mpscheck-report/report.json", "-o", "drafted.expect"}, dir);
  ASSERT_EQ(drafted.exit_code, 0) << drafted.err;
  const std::string text = read_text_file(dir + "/drafted.expect");
  int lines = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') ++lines;
  EXPECT_EQ(lines, 4) << text;  // abort, nan, wrong, unsupported
  EXPECT_NE(text.find("^op/faults/wrong$  mismatch  target=cpu  torch>="), std::string::npos) << text;
  EXPECT_NE(text.find("cause=accuracy  max_abs<=0.002"), std::string::npos) << text;
  EXPECT_NE(text.find("^op/faults/abort$  crash"), std::string::npos) << text;
  EXPECT_NE(text.find("cause=unimplemented"), std::string::npos) << text;
  EXPECT_NE(text.find("# out: 1 of 256 elements off"), std::string::npos) << text;

  const auto again = run_mpscheck(with(kFaults, {"--expect", "drafted.expect"}), dir);
  EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
  const auto worse = run_mpscheck(with(kFaults, {"--expect", "drafted.expect"}), dir, {"MPSCHECK_FAULTS_WRONG_BY=0.5"});
  EXPECT_EQ(worse.exit_code, 1) << worse.out << worse.err;
  const auto cases = cases_by_id(read_json_file(dir + "/mpscheck-report/report.json"));
  EXPECT_FALSE(cases.at("op/faults/wrong").value("expected", true));
  EXPECT_NE(cases.at("op/faults/wrong").value("expectation", "").find("max_abs 0.5 > 0.002"), std::string::npos)
      << cases.at("op/faults/wrong").dump();
  EXPECT_TRUE(cases.at("op/faults/nan").value("expected", false));

  const auto broken = run_mpscheck({"expect", "--from", "no-such.json"}, dir);
  EXPECT_EQ(broken.exit_code, 2);
  EXPECT_NE(broken.err.find("no-such.json"), std::string::npos) << broken.err;
}

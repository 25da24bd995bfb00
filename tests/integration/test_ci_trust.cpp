// A CI job is green only when everything it claims was run and judged (issue 48), through the real
// binary: a merge that lacks a shard or holds an interrupted one fails; --resume never reuses a
// result its case no longer computes; a finding that became a skip is not "fixed"; an expectation's
// bounds are exceeded by what no figure measures (a transposed, missing or reshaped output).
// Each of these passed green before.
#include "harness.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

using namespace mpscheck::testing;

namespace {

std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& extra) {
  base.insert(base.end(), extra.begin(), extra.end());
  return base;
}

// The faults plugin's cases matching `filter`, alone, on cpu, verdicts only.
std::vector<std::string> faults(const std::string& filter) {
  return {"--filter", filter, "--plugin-dir", test_plugins_dir(), "--no-default-plugins",
          "--target", "cpu",  "--quick",      "--min-time",       "0"};
}
// Two passing fault cases, one per shard of two.
const std::vector<std::string> kTwoCases = faults("op/faults/(healthy|slow)$");

void write_json(const std::string& path, const nlohmann::json& j) { std::ofstream(path) << j.dump(); }

// The models of tests/fixtures/export_ci_trust.py, exported once for the suite.
class CiTrustModels : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fresh_dir("ci-trust-models");
    const auto r =
        run_shell(std::string("python3 ") + MPSCHECK_SOURCE_DIR + "/tests/fixtures/export_ci_trust.py .", dir_);
    log_ = r.out + r.err;
    exported_ = r.exit_code == 0;
  }
  void SetUp() override { ASSERT_TRUE(exported_) << "python3 with torch is needed to export the models: " << log_; }
  static std::vector<std::string> model(const std::string& variant, const std::string& input = "float32[8,64]") {
    return {"--model",  dir_ + "/" + variant + "/net.pt",
            "--input",  input,
            "--target", "cpu:bfloat16",
            "--quick",  "--min-time",
            "0"};
  }
  static inline std::string dir_, log_;
  static inline bool exported_ = false;
};

constexpr const char* kModelCase = "model/torchscript/net/infer";

}  // namespace

TEST(CiTrust, AMergeWithAMissingOrInterruptedShardFailsAndSaysWhich) {
  const std::string dir = fresh_dir("ci-trust-merge");
  for (int i = 1; i <= 2; ++i) {
    const std::string n = std::to_string(i);
    const auto r =
        run_mpscheck(with(kTwoCases, {"--shard", n + "/2", "--json", "s" + n + ".json", "--report-dir", "r" + n}), dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const std::string merge = "'" + binary() + "' merge ";
  const auto whole = run_shell(merge + "s1.json s2.json -o whole.json", dir);
  EXPECT_EQ(whole.exit_code, 0) << whole.err;
  const auto w = read_json_file(dir + "/whole.json");
  EXPECT_TRUE(w["run"]["complete"].get<bool>());
  EXPECT_EQ(w["run"]["selected"], 2);

  // Shard 2's report never arrived.
  const auto alone = run_shell(merge + "s1.json -o alone.json --markdown alone.md", dir);
  EXPECT_EQ(alone.exit_code, 4) << alone.out << alone.err;
  EXPECT_NE(alone.err.find("shard 2/2 is missing"), std::string::npos) << alone.err;
  const auto a = read_json_file(dir + "/alone.json");
  EXPECT_FALSE(a["run"]["complete"].get<bool>());
  EXPECT_EQ(a["run"]["selected"], 1);
  ASSERT_TRUE(a["run"].contains("incomplete"));
  EXPECT_NE(read_text_file(dir + "/alone.md").find("Incomplete: shard 2/2 is missing"), std::string::npos);

  // Shard 2 was interrupted (the run writes "complete": false then).
  auto s2 = read_json_file(dir + "/s2.json");
  s2["run"]["complete"] = false;
  write_json(dir + "/s2-interrupted.json", s2);
  const auto cut = run_shell(merge + "s1.json s2-interrupted.json -o cut.json", dir);
  EXPECT_EQ(cut.exit_code, 4) << cut.err;
  EXPECT_NE(cut.err.find("s2-interrupted.json is incomplete"), std::string::npos) << cut.err;

  // The same shard twice, and a shard of another run (another seed), are not the whole run either.
  const auto twice = run_shell(merge + "s1.json s1.json -o twice.json", dir);
  EXPECT_EQ(twice.exit_code, 2) << twice.err;  // a case in both: the overlap is an error
  ASSERT_EQ(run_mpscheck(
                with(kTwoCases, {"--shard", "2/2", "--seed", "3", "--json", "other.json", "--report-dir", "r3"}), dir)
                .exit_code,
            0);
  const auto other = run_shell(merge + "s1.json other.json -o other-merged.json", dir);
  EXPECT_EQ(other.exit_code, 4) << other.err;
  EXPECT_NE(other.err.find("other.json ran another command than s1.json"), std::string::npos) << other.err;
}

TEST_F(CiTrustModels, ResumeRunsAgainACaseWhoseModelChangedAndRefusesAnotherThreadCount) {
  const std::string dir = fresh_dir("ci-trust-resume");
  const auto v1 = run_mpscheck(model("v1"), dir);
  ASSERT_EQ(v1.exit_code, 0) << v1.err;
  // v2 is wrong by 1.5x in bfloat16, with another input shape: the old run's result is not its.
  const auto v2 = run_mpscheck(with(model("v2", "float32[1,64]"), {"--resume"}), dir);
  EXPECT_EQ(v2.exit_code, 1) << v2.err;
  EXPECT_NE(v2.err.find("resume: 1 case run again: what it computed from changed"), std::string::npos) << v2.err;
  auto c = cases_by_id(read_json_file(dir + "/mpscheck-report/report.json")).at(kModelCase);
  EXPECT_EQ(c["status"], "mismatch") << c["message"];
  EXPECT_FALSE(c.value("resumed", false));
  EXPECT_EQ(c["outputs"][0]["numel"], 64);  // v2's output, not v1's 8x64

  // Resumed again with nothing changed, the case is the journal's, and says so.
  const auto again = run_mpscheck(with(model("v2", "float32[1,64]"), {"--resume"}), dir);
  EXPECT_EQ(again.exit_code, 1) << again.err;
  c = cases_by_id(read_json_file(dir + "/mpscheck-report/report.json")).at(kModelCase);
  EXPECT_EQ(c["status"], "mismatch");
  EXPECT_TRUE(c.value("resumed", false));

  // Another thread count changes every reference: refused, naming it.
  const auto threads = run_mpscheck(with(model("v2", "float32[1,64]"), {"--resume", "--threads", "7"}), dir);
  EXPECT_EQ(threads.exit_code, 2) << threads.err;
  EXPECT_NE(threads.err.find("was written with threads"), std::string::npos) << threads.err;
}

TEST(CiTrust, AFindingThatBecameASkipIsNoLongerJudgedNotFixed) {
  const std::string dir = fresh_dir("ci-trust-skip");
  const std::vector<std::string> wrong = faults("op/faults/wrong$");
  ASSERT_EQ(run_mpscheck(with(wrong, {"--json", "before.json", "--report-dir", "a"}), dir).exit_code, 1);
  // Now the CPU reference raises as a CPU that lacks the op does, so the case is not judged.
  const auto after =
      run_mpscheck(with(wrong, {"--json", "after.json", "--report-dir", "b", "--baseline", "before.json"}), dir,
                   {"MPSCHECK_FAULTS_CPU_LACKS=1"});
  EXPECT_EQ(after.exit_code, 1) << after.out << after.err;
  EXPECT_EQ(cases_by_id(read_json_file(dir + "/after.json")).at("op/faults/wrong")["status"], "skip");
  const auto cmp = run_shell("'" + binary() + "' compare before.json after.json", dir);
  EXPECT_EQ(cmp.exit_code, 1) << cmp.out;
  EXPECT_NE(cmp.out.find("Newly fixed (0)"), std::string::npos) << cmp.out;
  EXPECT_NE(
      cmp.out.find("No longer judged (a finding is now a skip: not a fix) (1)\n  op/faults/wrong (mismatch -> skip"),
      std::string::npos)
      << cmp.out;
}

TEST_F(CiTrustModels, AnOutputThatComesBackTransposedOrHalvedExceedsAKnownFailuresBounds) {
  const std::string dir = fresh_dir("ci-trust-bounds");
  ASSERT_EQ(run_mpscheck(with(model("known"), {"--json", "known.json", "--report-dir", "k"}), dir).exit_code, 1);
  const auto drafted = run_shell("'" + binary() + "' expect --from known.json -o known.expect", dir);
  ASSERT_EQ(drafted.exit_code, 0) << drafted.err;
  const std::string text = read_text_file(dir + "/known.expect");
  ASSERT_NE(text.find(" outputs="), std::string::npos) << text;
  // The same failure is expected.
  EXPECT_EQ(run_mpscheck(with(model("known"), {"--expect", "known.expect", "--report-dir", "k2"}), dir).exit_code, 0);
  for (const char* variant : {"transposed", "halved"}) {
    SCOPED_TRACE(variant);
    const auto r = run_mpscheck(with(model(variant), {"--expect", "known.expect", "--report-dir", variant}), dir);
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    const auto c = cases_by_id(read_json_file(dir + "/" + variant + "/report.json")).at(kModelCase);
    EXPECT_FALSE(c.value("expected", true));
    EXPECT_NE(c["expectation"].get<std::string>().find("worse than its expected bound"), std::string::npos)
        << c["expectation"];
  }
  // A line with figure bounds only (as drafted before outputs= existed): a halved output has no
  // figure, and still exceeds them.
  std::string figures_only = text;
  for (auto p = figures_only.find(" outputs="); p != std::string::npos; p = figures_only.find(" outputs=")) {
    const auto end = figures_only.find_first_of(" \n", p + 1);
    figures_only.erase(p, end - p);
  }
  ASSERT_NE(figures_only.find("max_abs<="), std::string::npos) << figures_only;
  std::ofstream(dir + "/figures.expect") << figures_only;
  const auto halved = run_mpscheck(with(model("halved"), {"--expect", "figures.expect", "--report-dir", "h2"}), dir);
  EXPECT_EQ(halved.exit_code, 1) << halved.err;
  const auto c = cases_by_id(read_json_file(dir + "/h2/report.json")).at(kModelCase);
  EXPECT_NE(c["expectation"].get<std::string>().find("no bound covers an output the two sides cannot compare"),
            std::string::npos)
      << c["expectation"];
}

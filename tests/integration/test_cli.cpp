// Exit codes and messages a user and a CI job depend on.
#include "harness.hpp"
#include "reports/version.hpp"

#include <gtest/gtest.h>

using namespace mpscheck::testing;

namespace {
int count_lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }
}  // namespace

TEST(CommandLine, MissingTargetExitsThreeListingWhatExists) {
  const auto r = run_mpscheck({"--all", "--target", "mps"}, fresh_dir("cli-mps"));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("available targets: cpu"), std::string::npos) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
}

TEST(CommandLine, BadFlagsExitTwoWithOneLine) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--all", "--bogus"},
                                               {"--all", "--target", "cpu:int3"},
                                               {"--all", "--timeout", "-1"},
                                               {"--filter", "[unclosed"},
                                               {},
                                               {"--all", "--plugin-dir", "/no/such/dir"}}) {
    const auto r = run_mpscheck(args, fresh_dir("cli-bad"));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind("mpscheck: ", 0), 0u) << r.err;
  }
}

TEST(CommandLine, FilterThatMatchesNothingIsBadUsage) {
  const auto r = run_mpscheck({"--filter", "no-such-case-anywhere", "--target", "cpu"}, fresh_dir("cli-nomatch"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no case matches"), std::string::npos) << r.err;
}

TEST(CommandLine, ResumeWithoutAJournalIsBadUsage) {
  const auto r = run_mpscheck({"--filter", "op/shape/cat", "--target", "cpu", "--resume"}, fresh_dir("cli-resume"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("journal"), std::string::npos) << r.err;
}

TEST(CommandLine, ListPrintsIdsWithTagsAndRunsNothing) {
  const std::string dir = fresh_dir("cli-list");
  const auto r = run_mpscheck({"--list", "--all"}, dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("op/shape/cat/f32/contiguous/forward  ["), std::string::npos);
  EXPECT_NE(r.out.find("model/mlp/train  ["), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir + "/mpscheck-report"));
}

TEST(CommandLine, HealthyRunExitsZeroWithAFullReport) {
  const std::string dir = fresh_dir("cli-healthy");
  const auto r = run_mpscheck(
      {"--filter", "op/shape/cat/f32|model/mlp/", "--target", "cpu", "--quick", "--json", "out/r.json"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto report = read_json_file(dir + "/out/r.json");
  EXPECT_EQ(report["schema_version"], mpscheck::kReportSchemaVersion);
  for (const char* key : {"torch_version", "os", "cpu", "threads", "blas", "target", "seed", "variables"})
    EXPECT_TRUE(report["environment"].contains(key)) << key;
  EXPECT_EQ(report["environment"]["target"], "cpu");
  const auto cases = cases_by_id(report);
  ASSERT_TRUE(cases.count("model/mlp/train"));
  // --quick times the models and one contiguous forward per op and dtype; the other variants get
  // their verdict only, and the report says which is which.
  int timed = 0;
  for (const auto& [id, c] : cases) {
    EXPECT_EQ(c["status"], "pass") << id;
    const bool planned = id.rfind("model/", 0) == 0 || id == "op/shape/cat/f32/contiguous/forward";
    EXPECT_EQ(c["timed"], planned) << id;
    if (!planned) {
      EXPECT_TRUE(c["reference_time"].is_null()) << id;
      continue;
    }
    ++timed;
    EXPECT_GT(c["reference_time"]["runs"].get<int>(), 0) << id;
    EXPECT_GT(c["speedup"].get<double>(), 0) << id;
  }
  EXPECT_EQ(report["run"]["timed"], timed);
  EXPECT_GT(cases.size(), static_cast<size_t>(timed)) << "cat has verdict-only variants";
  // Training cases compare the loss at every step and the final parameters.
  const auto& outputs = cases.at("model/mlp/train")["outputs"];
  EXPECT_EQ(outputs[0]["name"], "loss/step0");
  bool has_param = false;
  for (const auto& o : outputs) has_param |= o["name"].get<std::string>().rfind("param/", 0) == 0;
  EXPECT_TRUE(has_param);
}

TEST(CommandLine, AutoTargetFallsBackToReducedPrecisionCpuAndSaysSo) {
  const auto r = run_mpscheck({"--filter", "op/shape/cat/f32/contiguous/forward", "--quick"}, fresh_dir("cli-auto"));
  EXPECT_NE(r.err.find("cpu:bfloat16"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no accelerator"), std::string::npos) << r.err;
}

TEST(CommandLine, NoColorAndNoTtyMeanNoEscapes) {
  const auto r = run_mpscheck({"--filter", "op/shape/cat/f32/contiguous/forward", "--target", "cpu", "--quick"},
                              fresh_dir("cli-color"));
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
}

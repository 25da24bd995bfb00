// Each computation once: on cpu:bfloat16 an f32 op case whose bf16 twin is selected is not run
// again; the header and report.json say what each id computes in. On cpu the f32 cases all run.
#include "harness.hpp"

#include <gtest/gtest.h>

using namespace mpscheck::testing;

TEST(SameComputationRun, AReducedTargetRunsEachComputationOnce) {
  const std::string dir = fresh_dir("twins-bf16");
  const auto r = run_mpscheck(
      {"--ops", "--quick", "--filter", "op/activation/sigmoid/", "--target", "cpu:bfloat16", "--min-time", "0"}, dir);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  EXPECT_NE(r.err.find("4 f32 op cases are the same computation as their bf16 twins"), std::string::npos) << r.err;
  const auto report = read_json_file(dir + "/mpscheck-report/report.json");
  const auto cases = cases_by_id(report);
  EXPECT_EQ(report.at("run").at("same_computation_skipped"), 4);
  EXPECT_FALSE(cases.count("op/activation/sigmoid/f32/contiguous/forward"));
  EXPECT_FALSE(cases.count("op/activation/sigmoid/f32/contiguous/backward"));
  ASSERT_TRUE(cases.count("op/activation/sigmoid/bf16/contiguous/forward"));
  // An f32 case with no bf16 twin still runs, and says it computed in bfloat16.
  ASSERT_TRUE(cases.count("op/activation/sigmoid/f32/transposed/forward"));
  EXPECT_EQ(cases.at("op/activation/sigmoid/f32/transposed/forward").at("dtype"), "bfloat16");
  EXPECT_EQ(cases.at("op/activation/sigmoid/f16/contiguous/forward").at("dtype"), "float16");
  // No two reported cases are one computation: every f32 id left has no bf16 twin in the report.
  for (const auto& [id, c] : cases) {
    const auto at = id.find("/f32/");
    if (at == std::string::npos) continue;
    std::string twin = id;
    twin.replace(at, 5, "/bf16/");
    EXPECT_FALSE(cases.count(twin)) << id;
  }
}

TEST(SameComputationRun, AFloat32TargetRunsEveryF32Case) {
  const std::string dir = fresh_dir("twins-f32");
  const auto r = run_mpscheck(
      {"--ops", "--quick", "--filter", "op/activation/sigmoid/", "--target", "cpu", "--min-time", "0"}, dir);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  const auto report = read_json_file(dir + "/mpscheck-report/report.json");
  const auto cases = cases_by_id(report);
  EXPECT_TRUE(cases.count("op/activation/sigmoid/f32/contiguous/forward"));
  EXPECT_EQ(report.at("run").at("same_computation_skipped"), 0);
  EXPECT_FALSE(report.at("run").contains("dtypes"));
}

// Expectation lines keyed like PyTorch's own MPS xfail lists: by OS version range, chip or GPU
// family, tier and cause; and `expect --from`'s draft, one reasoned line per finding.
#include "core/workflow.hpp"

#include <gtest/gtest.h>

using namespace mpscheck;

namespace {

const nlohmann::json kMac15{{"torch_version", "2.13.0"},
                            {"os", "macOS 15.3"},
                            {"os_version", "15.3"},
                            {"cpu", "Apple M2 Pro"},
                            {"gpu_family", "apple8"}};
const nlohmann::json kMac26{
    {"torch_version", "2.13.0"}, {"os", "macOS 26.1"}, {"cpu", "Apple M1"}};  // no os_version: from "os"

CaseResult finding(Status s) {
  CaseResult r;
  r.id = "op/softmax/softmax/f16/contiguous/forward";
  r.status = s;
  r.target = "mps";
  return r;
}

bool expected_under(const std::string& line, CaseResult c, const nlohmann::json& env) {
  std::vector<CaseResult> cases{std::move(c)};
  apply_expectations(parse_expectations(line, "k.expect"), env, "mps", cases);
  return cases[0].expected && !has_unexpected(cases);
}

std::string parse_error(const std::string& line) {
  try {
    parse_expectations(line, "k.expect");
  } catch (const ExpectationError& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST(ExpectationKeys, AnOsRangeAppliesToItsVersionsOnly) {
  const std::string line = "op/softmax/.*  mismatch  os=macOS os>=15 os<16  # macos-15 image only\n";
  EXPECT_TRUE(expected_under(line, finding(Status::Mismatch), kMac15));
  EXPECT_FALSE(expected_under(line, finding(Status::Mismatch), kMac26));
  EXPECT_TRUE(expected_under("op/softmax/.*  mismatch  os>=26\n", finding(Status::Mismatch), kMac26));
  EXPECT_FALSE(expected_under("op/softmax/.*  mismatch  os>=15.4\n", finding(Status::Mismatch), kMac15));
  // Where the OS version is unknown, a range never applies.
  EXPECT_FALSE(expected_under("op/softmax/.*  mismatch  os>=1\n", finding(Status::Mismatch), {{"os", "unknown"}}));
  EXPECT_EQ(os_version_of(kMac26), "26.1");
}

TEST(ExpectationKeys, ChipAndGpuFamilyMatchTheirTextInAnyCase) {
  EXPECT_TRUE(expected_under("op/softmax/.*  mismatch  chip=m2\n", finding(Status::Mismatch), kMac15));
  EXPECT_FALSE(expected_under("op/softmax/.*  mismatch  chip=M2\n", finding(Status::Mismatch), kMac26));
  EXPECT_TRUE(expected_under("op/softmax/.*  mismatch  gpu=apple8\n", finding(Status::Mismatch), kMac15));
  // No GPU family known (Linux, CPU targets): a gpu= line does not apply.
  EXPECT_FALSE(expected_under("op/softmax/.*  mismatch  gpu=apple8\n", finding(Status::Mismatch), kMac26));
}

TEST(ExpectationKeys, TierIsNativeUnlessTheEnvironmentNamesAnother) {
  EXPECT_TRUE(expected_under("op/softmax/.*  mismatch  tier=native\n", finding(Status::Mismatch), kMac15));
  EXPECT_FALSE(expected_under("op/softmax/.*  mismatch  tier=paravirtual\n", finding(Status::Mismatch), kMac15));
  nlohmann::json hosted = kMac15;
  hosted["tier"] = "paravirtual";
  EXPECT_TRUE(expected_under("op/softmax/.*  *  tier=paravirtual\n", finding(Status::Error), hosted));
}

TEST(ExpectationKeys, CauseSelectsTheKindOfFinding) {
  const std::string accuracy = "op/softmax/.*  *  cause=accuracy\n";
  EXPECT_TRUE(expected_under(accuracy, finding(Status::Mismatch), kMac15));
  EXPECT_TRUE(expected_under(accuracy, finding(Status::Nan), kMac15));
  EXPECT_FALSE(expected_under(accuracy, finding(Status::Crash), kMac15));
  EXPECT_TRUE(expected_under("op/softmax/.*  *  cause=unimplemented\n", finding(Status::Fallback), kMac15));
  EXPECT_TRUE(expected_under("op/softmax/.*  *  cause=crash\n", finding(Status::Timeout), kMac15));
}

TEST(ExpectationKeys, APerformanceLineKnowsASlowCaseAndFlagsOneThatIsNoLongerSlow) {
  CaseResult slow = finding(Status::Pass);
  slow.timed = true;
  slow.target_time = TimingStats{0.002, 0.0019, 0.0021, 50};
  slow.speed_class = SpeedClass::Slower;
  std::vector<CaseResult> cases{slow};
  const auto lines = parse_expectations("op/softmax/.*  *  cause=performance  # slow kernel\n", "k.expect");
  apply_expectations(lines, kMac15, "mps", cases);
  EXPECT_TRUE(cases[0].expected);
  EXPECT_FALSE(has_unexpected(cases));
  cases[0].speed_class = SpeedClass::Similar;
  apply_expectations(lines, kMac15, "mps", cases);
  EXPECT_TRUE(cases[0].unexpected_pass);
  EXPECT_NE(cases[0].expectation.find("no longer slower"), std::string::npos) << cases[0].expectation;
  // Not timed in this run: the line says nothing about it.
  cases[0].timed = false;
  apply_expectations(lines, kMac15, "mps", cases);
  EXPECT_FALSE(cases[0].unexpected_pass || cases[0].expected);
}

TEST(ExpectationKeys, BadKeysStopWithTheFileLineAndWhatToWrite) {
  EXPECT_NE(parse_error("op/x  mismatch  os>=fifteen\n").find("k.expect:1: 'os>=fifteen' needs a version"),
            std::string::npos);
  EXPECT_NE(parse_error("op/x  mismatch  cause=speed\n").find("unknown cause 'speed' (use unimplemented"),
            std::string::npos);
  EXPECT_NE(parse_error("op/x  crash  cause=accuracy\n").find("status 'crash' is never of cause 'accuracy'"),
            std::string::npos);
  EXPECT_NE(parse_error("op/x  mismatch  cause=performance\n").find("takes * as its status"), std::string::npos);
  EXPECT_NE(parse_error("op/x  mismatch  chip=\n").find("'chip=' needs a value"), std::string::npos);
}

TEST(ExpectFrom, OneReasonedLinePerFindingKeyedToTheReportsTargetTorchAndOs) {
  RunReport report;
  report.environment = kMac15;
  report.run = {{"target", "mps:float16"}};
  CaseResult wrong = finding(Status::Mismatch);
  OutputReport o;
  o.name = "out";
  o.numel = 64;
  o.mismatches = 29;
  o.max_abs = 8e-3;
  o.max_rel = 0.31;
  o.ok = false;
  wrong.outputs.push_back(o);
  wrong.attribution = Fragile::Target;
  CaseResult missing = finding(Status::Unsupported);
  missing.id = "op/conv/conv3d/f16/contiguous/forward";
  missing.target = "mps:float16";
  missing.message = "\"slow_conv3d_forward\" not implemented for 'Half'";
  CaseResult fine = finding(Status::Pass);
  fine.id = "op/add";
  report.cases = {wrong, missing, fine};
  const std::string text = expectations_from_report(report, "r.json");
  EXPECT_NE(
      text.find(
          "^op/softmax/softmax/f16/contiguous/forward$  mismatch  target=mps:float16  torch>=2.13 torch<2.14  "
          "os=macOS os>=15 os<16  cause=accuracy  max_abs<=0.016 max_rel<=0.62 count<=37 outputs=out  # out: 29 of 64 "
          "elements off, max abs error 0.008; against float64 the target is the wrong side\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("^op/conv/conv3d/f16/contiguous/forward$  unsupported  target=mps:float16"), std::string::npos)
      << text;
  EXPECT_NE(text.find("cause=unimplemented  # no mps:float16 Half kernel for slow_conv3d_forward"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("op/add"), std::string::npos);
  // Read back, the draft expects exactly these findings on this machine.
  std::vector<CaseResult> cases = report.cases;
  apply_expectations(parse_expectations(text, "drafted.expect"), kMac15, "mps:float16", cases);
  EXPECT_FALSE(has_unexpected(cases));
  apply_expectations(parse_expectations(text, "drafted.expect"), kMac26, "mps:float16", cases);
  EXPECT_TRUE(has_unexpected(cases));  // another macOS major: not the same finding
}

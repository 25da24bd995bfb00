// The device tier (core/device_tier.hpp): a paravirtual GPU by its name, a constrained device by
// the run's memory findings; findings marked with it, the environment naming it, and --expect
// lines keyed tier= matching only on that tier.
#include "core/device_tier.hpp"
#include "core/workflow.hpp"
#include "reports/writers.hpp"

#include <gtest/gtest.h>

using namespace mpscheck;

namespace {

CaseResult result(const std::string& id, Status status, std::int64_t peak = -1, std::int64_t max = -1) {
  CaseResult r;
  r.id = id;
  r.status = status;
  r.target = "mps";
  if (peak >= 0) r.memory = MemoryFigures{peak, "sampled", -1, -1, max};
  return r;
}

}  // namespace

TEST(DeviceTier, TheHostedRunnersVirtualGpuIsParavirtualByItsName) {
  const Tier t = tier_from_facts({"Apple Paravirtual device", 1 << 30});
  EXPECT_EQ(t.name, "paravirtual");
  EXPECT_NE(t.why.find("'Apple Paravirtual device'"), std::string::npos) << t.why;
  EXPECT_EQ(tier_from_facts({"Apple M2 Max", 48LL << 30}).name, "native");
  EXPECT_EQ(tier_from_facts({}).name, "native");
  EXPECT_NE(tier_line("mps", {"Apple Paravirtual device", 1 << 30}, t)
                .find("device mps ('Apple Paravirtual device'; recommends at most 1.00 GiB): tier paravirtual: "),
            std::string::npos);
}

TEST(DeviceTier, ANativeDeviceWhoseCasesNeedMoreThanItRecommendsIsConstrained) {
  const std::vector<CaseResult> fits{result("op/a", Status::Pass, 100, 1000),
                                     result("op/b", Status::Mismatch, 10, 1000)};
  EXPECT_EQ(tier_after_run(Tier{}, fits).name, "native");
  std::vector<CaseResult> over = fits;
  over.push_back(result("model/big/train", Status::Memory, 3 << 20, 1 << 20));
  const Tier t = tier_after_run(Tier{}, over);
  EXPECT_EQ(t.name, "constrained");
  EXPECT_NE(t.why.find("model/big/train needs 3.00 MiB, the device recommends at most 1.00 MiB"), std::string::npos)
      << t.why;
  // A paravirtual device stays paravirtual: its name is the stronger reason.
  EXPECT_EQ(tier_after_run(tier_from_facts({"Apple Paravirtual device", -1}), over).name, "paravirtual");
}

TEST(DeviceTier, FindingsAreMarkedAndExpectationLinesKeyedByTierMatchOnlyThere) {
  std::vector<CaseResult> cases{result("op/softmax/softmax/f16/contiguous/forward", Status::Mismatch),
                                result("op/softmax/softmax/f32/contiguous/forward", Status::Pass)};
  nlohmann::json env = {{"torch_version", "2.13.0"}, {"os", "macOS 15.3"}};
  const auto lines =
      parse_expectations("op/softmax/.*  mismatch  tier=paravirtual  # hosted runner only\n", "t.expect");

  apply_tier(Tier{}, env, cases);
  EXPECT_EQ(env.at("tier"), "native");
  EXPECT_TRUE(cases[0].tier.empty());
  apply_expectations(lines, env, "mps", cases);
  EXPECT_FALSE(cases[0].expected);  // a native device's finding is not the hosted runner's known one

  apply_tier(tier_from_facts({"Apple Paravirtual device", -1}), env, cases);
  EXPECT_EQ(env.at("tier"), "paravirtual");
  EXPECT_NE(env.at("tier_reason").get<std::string>().find("Apple Paravirtual device"), std::string::npos);
  EXPECT_EQ(cases[0].tier, "paravirtual");
  EXPECT_TRUE(cases[1].tier.empty());  // a pass is no finding to mark
  apply_expectations(lines, env, "mps", cases);
  EXPECT_TRUE(cases[0].expected);
  EXPECT_EQ(tier_name(env), "paravirtual");
  EXPECT_NE(tier_sentence(env).find("Tier: paravirtual: the device is 'Apple Paravirtual device'"), std::string::npos);
  EXPECT_NE(finding_detail(cases[0]).find("tier: paravirtual"), std::string::npos);

  RunReport report;
  report.environment = env;
  report.cases = cases;
  EXPECT_NE(render_markdown(report).find("Device tier: **paravirtual**."), std::string::npos);
  EXPECT_NE(render_markdown(report).find("| mismatch (paravirtual) |"), std::string::npos);
  EXPECT_NE(render_html(report).find("Device tier: <b>paravirtual</b>. Tier: paravirtual: "), std::string::npos);
  EXPECT_NE(render_html(report).find("<span class=\"tier\">paravirtual</span>"), std::string::npos);
}

// The opt-in huge cases (--huge: past 2^31 elements) on the sim: skipped with both figures where
// the sim's memory limit cannot hold them, a pass on the clean sim, and a mismatch naming the first
// wrong row under the int32-offset plant (index_select reading rows past element 2^31 from their
// offset wrapped to 32 bits), which no fixed case reaches: the catalog's largest index_select input
// has 2^24 + 4096 elements.
#include "sim_common.hpp"

#include <gtest/gtest.h>

using namespace mpscheck::testing;

namespace {

const char* kHuge = "op/indexing/index_select_huge/i8/huge/forward";

nlohmann::json huge_on_sim(const std::string& dir, const std::vector<std::string>& env, int expected_exit) {
  const auto r = run_mpscheck({"--huge", "--filter", "index_select_huge", "--target", "sim", "--plugin-dir",
                               sim_plugin_dir(), "--min-time", "0"},
                              dir, env);
  EXPECT_EQ(r.exit_code, expected_exit) << r.err << r.out;
  const nlohmann::json report = read_json_file(dir + "/mpscheck-report/report.json");
  EXPECT_EQ(report.at("cases").size(), 1u) << report.dump(2);
  return report.at("cases").at(0);
}

}  // namespace

TEST(SimHuge, OnlyHugeSelectsThemAndTheyAreTaggedWithTheirNeed) {
  const std::string dir = fresh_dir("sim-huge-list");
  const auto all = run_mpscheck({"--list", "--all", "--plugin-dir", sim_plugin_dir()}, dir);
  EXPECT_EQ(all.out.find("_huge/"), std::string::npos) << "--all takes no huge case";
  const auto huge = run_mpscheck({"--list", "--ops", "--huge", "--filter", "_huge/"}, dir);
  EXPECT_NE(huge.out.find(std::string(kHuge) + "  [huge,device-bytes:2147553280,"), std::string::npos) << huge.out;
}

TEST(SimHuge, PastTheSimsMemoryLimitItIsASkipThatSaysWhy) {
  const nlohmann::json c = huge_on_sim(fresh_dir("sim-huge-capped"),
                                       {"MPSCHECK_SIM_MEMORY_LIMIT=1073741824", "MPSCHECK_SIM_BUGS=int32-offset"}, 0);
  EXPECT_EQ(c.at("id"), kHuge);
  EXPECT_EQ(c.at("status"), "skip");
  EXPECT_EQ(c.at("message"),
            "not run: it needs about 2.00 GiB on sim, which recommends at most 1.00 GiB (a huge case runs only where "
            "it fits; run it on a device with more memory)");
}

TEST(SimHuge, RowsPastTwoToTheThirtyFirstReadFromAWrappedOffsetAreAMismatch) {
  const nlohmann::json clean = huge_on_sim(fresh_dir("sim-huge-clean"), {}, 0);
  EXPECT_EQ(clean.at("status"), "pass") << clean.dump(2);
  EXPECT_GT(clean.at("memory").at("peak_allocated_bytes").get<std::int64_t>(), std::int64_t{1} << 31);

  const nlohmann::json planted = huge_on_sim(fresh_dir("sim-huge-planted"), {"MPSCHECK_SIM_BUGS=int32-offset"}, 1);
  EXPECT_EQ(planted.at("status"), "mismatch") << planted.dump(2);
  // Output row 4 is input row 65536, the first that starts past element 2^31; rows 0-3 are right.
  EXPECT_NE(planted.at("message").get<std::string>().find("first at [4, 0]"), std::string::npos)
      << planted.at("message");
}

TEST(SimHuge, TheFixedCatalogsIndexSelectCasesMissThePlant) {
  const std::string dir = fresh_dir("sim-huge-catalog");
  // Without --quick, so index_select_large (2^24 + 4096 elements) runs too.
  const auto r = run_mpscheck({"--filter", "^op/indexing/index_select", "--target", "sim", "--plugin-dir",
                               sim_plugin_dir(), "--min-time", "0", "--expect", sim_expectations()},
                              dir, {"MPSCHECK_SIM_BUGS=int32-offset"});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  const nlohmann::json report = read_json_file(dir + "/mpscheck-report/report.json");
  EXPECT_GE(report.at("cases").size(), 5u);
  for (const auto& c : report.at("cases")) EXPECT_NE(c.at("status"), "mismatch") << c.dump(2);
}

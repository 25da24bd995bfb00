// Explore at a reduced-precision target, with no planted bug: what the catalog's own case design
// makes of sizes it never declared. The sort family's values are tie-free integers only while they
// are exact in the compute dtype (4n <= 256 in bfloat16); at the sizes explore tries, bfloat16
// rounds some together, and a kernel that orders a tie either way is right. These three variants
// were false findings of the no-plant control on cpu:bfloat16 while the indices were compared as
// numbers; checked by what they select, they pass.
#include "harness.hpp"

#include <gtest/gtest.h>

using namespace mpscheck::testing;

TEST(ExploreReduced, SortIndicesAtSizesWhereBfloat16MakesTiesAreJudgedByWhatTheySelect) {
  const std::vector<std::string> ids = {
      "op/sort/argsort/f32/contiguous/forward@x=1x67,key=1x67",
      "op/sort/median_even/f32/contiguous/forward@x=16x129,key=16x129",
      "op/sort/sort_dim0/f32/contiguous/forward@x=72x2,key=72x2",
  };
  const std::string dir = fresh_dir("explore-reduced-sort");
  std::vector<std::string> args = {"explore", "--target", "cpu:bfloat16", "--explore-budget", "30"};
  for (const auto& id : ids) args.insert(args.end(), {"--filter", id});
  const CommandResult r = run_mpscheck(args, dir);
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  const nlohmann::json report = read_json_file(dir + "/mpscheck-report/explore.json");
  EXPECT_TRUE(report.at("findings").empty()) << report.dump(2);
  // Each replayed: its indices differ from the reference's somewhere (a tie ordered the other way)
  // or not, but every one selects the value the reference's selects.
  for (const auto& id : ids) EXPECT_NE(r.out.find("replay " + id + ": pass"), std::string::npos) << id << '\n' << r.out;
}

// Four Bernoulli draws (p is 2x2), all 0 on the reference: its sample's standard error was 0, the
// allowance only rounding, and the target's one draw of 1 a mismatch (the no-plant control's false
// finding on cpu:bfloat16). A sample under SampleStats::kMinDraws judges nothing: the case is a skip
// saying so. At 8x8 (64 draws) the same case is judged, and passes. Dropout of four elements was a
// false finding too: its largest output, max(x) / 0.7, is exact only where some element holding
// max(x) is kept, and of four elements one holds it (dropped with chance 0.3). It is judged by its
// exact scale-back contract alone there, and passes.
TEST(ExploreReduced, RandomStatisticsOfFourDrawsAreNotJudged) {
  const std::string tiny = "op/random/bernoulli/f32/contiguous/forward@p=2x2";
  const std::string judged = "op/random/bernoulli/f32/contiguous/forward@p=8x8";
  const std::string dropout = "op/random/dropout/f32/contiguous/forward@x=2x2";
  const std::string dir = fresh_dir("explore-reduced-random");
  const CommandResult r = run_mpscheck({"explore", "--target", "cpu:bfloat16", "--explore-budget", "30", "--filter",
                                        tiny, "--filter", judged, "--filter", dropout},
                                       dir);
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  const nlohmann::json report = read_json_file(dir + "/mpscheck-report/explore.json");
  EXPECT_TRUE(report.at("findings").empty()) << report.dump(2);
  EXPECT_NE(r.out.find("replay " + tiny + ": skip"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("replay " + judged + ": pass"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("replay " + dropout + ": pass"), std::string::npos) << r.out;
}

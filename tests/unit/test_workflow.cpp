// Expectations, baselines, shards and merging.
#include "core/workflow.hpp"
#include "reports/reporter.hpp"

#include <gtest/gtest.h>

#include <filesystem>

using namespace mpscheck;

namespace {
CaseResult make(const std::string& id, Status s, double target_median = 0) {
  CaseResult r;
  r.id = id;
  r.status = s;
  if (target_median > 0) {
    TimingStats t;
    t.median_s = target_median;
    t.p25_s = target_median * 0.98;
    t.p75_s = target_median * 1.02;
    t.runs = 10;
    r.target_time = t;
    r.reference_time = t;
  }
  return r;
}
const nlohmann::json kEnv{{"torch_version", "2.1.0"}, {"os", "macOS 14.4"}};
}  // namespace

TEST(Expectations, ParsesPatternsStatusesConditionsAndReasons) {
  const auto e = parse_expectations(
      "# known failures\n\n"
      "op/conv/conv3d/.*  unsupported|mismatch  target=mps torch>=2.0 torch<2.3 os=macOS  # pytorch issue 12345\n"
      "op/faults/.*  *\n",
      "x.expect");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].line, 3);
  EXPECT_EQ(e[0].statuses, (std::vector<std::string>{"unsupported", "mismatch"}));
  EXPECT_EQ(e[0].target, "mps");
  EXPECT_EQ(e[0].torch_min, "2.0");
  EXPECT_EQ(e[0].torch_below, "2.3");
  EXPECT_EQ(e[0].reason, "pytorch issue 12345");
  EXPECT_TRUE(e[1].statuses.empty());
}

TEST(Expectations, MalformedLinesNameFileAndLine) {
  auto error_of = [](const std::string& text) {
    try {
      parse_expectations(text, "known.expect");
    } catch (const ExpectationError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error_of("ok  crash\nonly-a-pattern\n").rfind("known.expect:2:", 0), 0u);
  EXPECT_NE(error_of("op/x  exploded\n").find("unknown status 'exploded'"), std::string::npos);
  EXPECT_NE(error_of("op/x  pass\n").find("not a failure status"), std::string::npos);
  EXPECT_NE(error_of("op/(x  crash\n").find("not a valid regular expression"), std::string::npos);
  EXPECT_NE(error_of("op/x  crash  colour=red\n").find("unknown condition"), std::string::npos);
}

TEST(Expectations, ExpectedFindingsUnexpectedPassesAndConditions) {
  const auto e = parse_expectations("op/a  mismatch\nop/b  crash\nop/c  nan  target=mps\nop/d  *  torch<2.0\n", "f");
  std::vector<CaseResult> cases{make("op/a", Status::Mismatch), make("op/b", Status::Pass), make("op/c", Status::Nan),
                                make("op/d", Status::Error), make("op/e", Status::Timeout)};
  apply_expectations(e, kEnv, "mps:float16", cases);
  EXPECT_TRUE(cases[0].expected);
  EXPECT_TRUE(cases[1].unexpected_pass);
  EXPECT_TRUE(cases[2].expected);   // target=mps matches mps:float16
  EXPECT_FALSE(cases[3].expected);  // torch 2.1 is not < 2.0
  EXPECT_FALSE(cases[4].expected);
  EXPECT_TRUE(has_unexpected(cases));
  std::vector<CaseResult> clean{make("op/a", Status::Mismatch)};
  apply_expectations(e, kEnv, "cpu", clean);
  EXPECT_FALSE(has_unexpected(clean));
  apply_expectations(e, kEnv, "cpu", cases);
  EXPECT_FALSE(cases[2].expected);  // target=mps does not match cpu
}

TEST(Expectations, WrongStatusIsStillUnexpected) {
  const auto e = parse_expectations("op/a  mismatch\n", "f");
  std::vector<CaseResult> cases{make("op/a", Status::Crash)};
  apply_expectations(e, kEnv, "cpu", cases);
  EXPECT_FALSE(cases[0].expected);
  EXPECT_TRUE(has_unexpected(cases));
}

TEST(Versions, CompareNumerically) {
  EXPECT_LT(compare_versions("1.13.0", "2.0"), 0);
  EXPECT_EQ(compare_versions("2.1", "2.1.0"), 0);
  EXPECT_GT(compare_versions("2.10", "2.9.1"), 0);
}

TEST(Baseline, NamesExactlyTheRegressedCase) {
  RunReport before, after;
  before.cases = {make("op/a", Status::Pass, 1e-3), make("op/b", Status::Pass, 1e-3), make("op/c", Status::Mismatch),
                  make("op/d", Status::Pass, 1e-3)};
  after.cases = {make("op/a", Status::Pass, 1.01e-3), make("op/b", Status::Pass, 2e-3),
                 make("op/c", Status::Pass, 1e-3), make("op/d", Status::Nan), make("op/new", Status::Pass)};
  const auto c = compare_reports(before, after);
  ASSERT_EQ(c.speed_regressions.size(), 1u);
  EXPECT_EQ(c.speed_regressions[0].rfind("op/b ", 0), 0u);
  ASSERT_EQ(c.newly_failing.size(), 1u);
  EXPECT_EQ(c.newly_failing[0].rfind("op/d ", 0), 0u);
  ASSERT_EQ(c.newly_fixed.size(), 1u);
  EXPECT_EQ(c.newly_fixed[0].rfind("op/c ", 0), 0u);
  EXPECT_EQ(c.added, std::vector<std::string>{"op/new"});
  EXPECT_TRUE(c.regressed());
}

// A finding that became a skip was not shown right: it is "no longer judged", a regression.
TEST(Baseline, AFindingThatBecameASkipIsNoLongerJudgedNotFixed) {
  RunReport before, after;
  before.cases = {make("op/a", Status::Mismatch), make("op/b", Status::Pass)};
  after.cases = {make("op/a", Status::Skip), make("op/b", Status::Skip)};
  const auto c = compare_reports(before, after);
  EXPECT_TRUE(c.newly_fixed.empty());
  ASSERT_EQ(c.no_longer_judged.size(), 1u);  // a pass that became a skip hid no finding
  EXPECT_EQ(c.no_longer_judged[0].rfind("op/a (mismatch -> skip", 0), 0u) << c.no_longer_judged[0];
  EXPECT_TRUE(c.regressed());
  EXPECT_NE(format_comparison(c, "a", "b").find("No longer judged (a finding is now a skip: not a fix) (1)"),
            std::string::npos);
}

TEST(Baseline, OverlappingSpreadsAreNotARegression) {
  RunReport before, after;
  CaseResult a = make("op/a", Status::Pass, 1e-3), b = make("op/a", Status::Pass, 1.2e-3);
  a.target_time->p75_s = 1.5e-3;  // noisy baseline overlaps the new range
  before.cases = {a};
  after.cases = {b};
  EXPECT_FALSE(compare_reports(before, after).regressed());
}

TEST(Shards, SplitIsAPartitionAndParsesOneBased) {
  std::vector<int> ids(10);
  for (int i = 0; i < 10; ++i) ids[i] = i;
  std::vector<int> all;
  for (int i = 1; i <= 3; ++i) {
    const auto part = take_shard(ids, parse_shard(std::to_string(i) + "/3"));
    all.insert(all.end(), part.begin(), part.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, ids);
  EXPECT_EQ(take_shard(ids, parse_shard("1/3")), (std::vector<int>{0, 3, 6, 9}));
  EXPECT_THROW(parse_shard("0/3"), std::invalid_argument);
  EXPECT_THROW(parse_shard("4/3"), std::invalid_argument);
  EXPECT_THROW(parse_shard("three"), std::invalid_argument);
}

TEST(Merge, OverlappingShardsAreRefused) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "mpscheck-merge-test";
  fs::create_directories(dir);
  RunReport a;
  a.run = {{"target", "cpu"}};
  a.cases = {make("op/a", Status::Pass), make("op/b", Status::Pass)};
  write_json_report((dir / "a.json").string(), a);
  RunReport b = a;
  b.cases = {make("op/c", Status::Nan)};
  write_json_report((dir / "b.json").string(), b);
  const RunReport m = merge_reports({(dir / "b.json").string(), (dir / "a.json").string()});
  ASSERT_EQ(m.cases.size(), 3u);
  EXPECT_EQ(m.cases[0].id, "op/a");  // sorted by id
  EXPECT_THROW(merge_reports({(dir / "a.json").string(), (dir / "a.json").string()}), ReportError);
  fs::remove_all(dir);
}

// merge compares shards' commands without the flags that say where a run writes: every report
// format's flag must be one of them, or two shards of one run would look like two runs.
TEST(Merge, EveryReportFormatsFlagIsAPlacementFlag) {
  ASSERT_FALSE(reporters().empty());
  for (const Reporter* r : reporters())
    if (r->destination() == Destination::File)
      EXPECT_TRUE(is_placement_flag(std::string("--") + r->flag())) << r->flag();
  EXPECT_TRUE(is_placement_flag("--shard"));
  EXPECT_FALSE(is_placement_flag("--seed"));
  EXPECT_FALSE(is_placement_flag("--filter"));
}

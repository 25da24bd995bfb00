// `mpscheck explore` against the sim device's shape classes (plugins/sim/sim_bugs.cpp): k-threshold
// (mm wrong from an inner dimension K >= 10000) and size-2^n (softplus wrong on rows a power of two
// >= 2048 long), which no fixed case's shape reaches. Each run has a stated budget, and the test
// asserts the exact threshold and minimal case id it reports, that the id replays as a finding, and
// that with no plant the same subsets give no finding at all.
#include "sim_common.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>

using namespace mpscheck::testing;

namespace {

// Per class: what explore may spend on its subset, in seconds (the run's budget; every case's too).
constexpr const char* kBudget = "60";

struct Explored {
  CommandResult r;
  nlohmann::json report;
  double seconds = 0;
};

Explored explore_on_sim(const std::vector<std::string>& filters, const std::string& bugs, const std::string& dir) {
  std::vector<std::string> args = {"explore", "--target", "sim", "--plugin-dir", sim_plugin_dir(),
                                   "--explore-budget", kBudget, "--explore-run-budget", kBudget};
  for (const auto& f : filters) args.insert(args.end(), {"--filter", f});
  const auto start = std::chrono::steady_clock::now();
  Explored e;
  e.r = run_mpscheck(args, dir, bugs.empty() ? std::vector<std::string>{} : std::vector<std::string>{"MPSCHECK_SIM_BUGS=" + bugs});
  e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  e.report = read_json_file(dir + "/mpscheck-report/explore.json");
  std::cout << "explore " << (bugs.empty() ? "(no plant)" : bugs) << ": " << e.seconds << " s\n" << e.r.out;
  return e;
}

// The subsets: every float32 layout variant of the forward case.
const char* kMatmul = "^op/linalg/mm/f32/.*/forward$";
const char* kSoftplus = "^op/activation/softplus/f32/.*/forward$";

// The findings of a report by their declared case.
std::map<std::string, nlohmann::json> by_base(const nlohmann::json& report) {
  std::map<std::string, nlohmann::json> out;
  for (const auto& f : report.at("findings")) out[f.at("base").get<std::string>()] = f;
  return out;
}

}  // namespace

TEST(SimExplore, KThresholdIsBisectedToThePlantedInnerDimension) {
  const std::string dir = fresh_dir("sim-explore-k");
  const Explored e = explore_on_sim({kMatmul}, "k-threshold", dir);
  EXPECT_EQ(e.r.exit_code, 1) << e.r.err;
  const auto findings = by_base(e.report);
  ASSERT_EQ(findings.size(), 3u) << e.report.dump(2);
  for (const std::string layout : {"contiguous", "transposed", "transposed_b"}) {
    const std::string base = "op/linalg/mm/f32/" + layout + "/forward";
    ASSERT_TRUE(findings.count(base)) << base << '\n' << e.report.dump(2);
    const auto& f = findings.at(base);
    EXPECT_EQ(f.at("id"), base + "@a=1x10000,b=10000x1");
    EXPECT_EQ(f.at("dimension"), "a[1]=b[0]");
    EXPECT_EQ(f.at("first_failing"), 10000);
    EXPECT_EQ(f.at("last_passing"), 9999);
    EXPECT_EQ(f.at("pattern"), "from");
    EXPECT_EQ(f.at("status"), "mismatch");
  }
  EXPECT_NE(e.r.out.find("wrong from a[1]=b[0] = 10000; a[1]=b[0] = 9999 passes"), std::string::npos) << e.r.out;
  EXPECT_LT(e.seconds, 90) << "the budget is " << kBudget << " s plus the worker's start";
  const auto& f = findings.at("op/linalg/mm/f32/contiguous/forward");

  // The printed id is accepted by --filter in a later run, and still fails there.
  const std::string again = fresh_dir("sim-explore-k-replay");
  const Explored r = explore_on_sim({f.at("id").get<std::string>()}, "k-threshold", again);
  EXPECT_EQ(r.r.exit_code, 1) << r.r.err;
  ASSERT_EQ(r.report.at("findings").size(), 1u) << r.report.dump(2);
  EXPECT_EQ(r.report.at("findings")[0].at("id"), f.at("id"));
  EXPECT_EQ(r.report.at("findings")[0].at("status"), "mismatch");
  // One size below the threshold passes as a replay too.
  const std::string below = fresh_dir("sim-explore-k-below");
  const Explored p = explore_on_sim({"op/linalg/mm/f32/contiguous/forward@a=1x9999,b=9999x1"}, "k-threshold", below);
  EXPECT_EQ(p.r.exit_code, 0) << p.r.err << p.r.out;
  EXPECT_TRUE(p.report.at("findings").empty()) << p.report.dump(2);
}

TEST(SimExplore, PowerOfTwoRowsAreFoundAtThePlantedSize) {
  const std::string dir = fresh_dir("sim-explore-2n");
  const Explored e = explore_on_sim({kSoftplus}, "size-2^n", dir);
  EXPECT_EQ(e.r.exit_code, 1) << e.r.err;
  const auto findings = by_base(e.report);
  ASSERT_EQ(findings.size(), 3u) << e.report.dump(2);
  for (const std::string layout : {"contiguous", "transposed", "sliced"}) {
    const std::string base = "op/activation/softplus/f32/" + layout + "/forward";
    ASSERT_TRUE(findings.count(base)) << base << '\n' << e.report.dump(2);
    const auto& f = findings.at(base);
    EXPECT_EQ(f.at("id"), base + "@x=1x2048");
    EXPECT_EQ(f.at("dimension"), "x[1]");
    EXPECT_EQ(f.at("first_failing"), 2048);
    EXPECT_EQ(f.at("last_passing"), 2047);
    EXPECT_EQ(f.at("pattern"), "powers-of-two");
    EXPECT_EQ(f.at("status"), "mismatch");
  }
  EXPECT_NE(e.r.out.find("wrong at x[1] = 2048 (a power of two) and at 4096; 2047, 2049 and 1024 pass"),
            std::string::npos) << e.r.out;
  EXPECT_LT(e.seconds, 90) << "the budget is " << kBudget << " s plus the worker's start";
}

TEST(SimExplore, WithNoPlantTheSameSubsetsHaveNoFinding) {
  const std::string dir = fresh_dir("sim-explore-control");
  const Explored e = explore_on_sim({kMatmul, kSoftplus}, "", dir);
  EXPECT_EQ(e.r.exit_code, 0) << e.r.err << e.r.out;
  EXPECT_TRUE(e.report.at("findings").empty()) << e.report.dump(2);
  // It did explore every case, none cut short by the budget.
  ASSERT_EQ(e.report.at("cases").size(), 6u);
  for (const auto& c : e.report.at("cases")) EXPECT_EQ(c.at("note"), "") << c.dump();
  EXPECT_GT(e.report.at("explore").at("variants").get<int>(), 200);
}

TEST(SimExplore, BadBudgetsAndMisplacedFlagsAreOneLine) {
  const std::string dir = fresh_dir("sim-explore-usage");
  const auto zero = run_mpscheck({"explore", "--filter", kMatmul, "--explore-budget", "0"}, dir);
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_EQ(zero.err, "mpscheck: --explore-budget must be a positive number of seconds\n");
  const auto run = run_mpscheck({"--filter", kMatmul, "--explore-run-budget", "10"}, dir);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.err, "mpscheck: --explore-run-budget goes with explore: mpscheck explore --filter REGEX "
                     "--explore-run-budget SEC\n");
  const auto bad = run_mpscheck({"explore", "--filter", "op/linalg/mm/f32/contiguous/forward@a=1x"}, dir);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("'1x' is not a shape"), std::string::npos) << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
}

TEST(SimExplore, AFindingsIdGivesAPythonReproducerAtItsSizes) {
  const std::string dir = fresh_dir("sim-explore-repro");
  const auto r = run_mpscheck({"repro", "op/linalg/mm/f32/contiguous/forward@a=1x10000,b=10000x1", "--script",
                               "--target", "cpu"}, dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("torch.randn([1, 10000], generator=gen)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("torch.randn([10000, 1], generator=gen)"), std::string::npos) << r.out;
  const auto bad = run_mpscheck({"repro", "op/linalg/mm/f32/contiguous/forward@c=1x2", "--script"}, dir);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("has no input 'c'"), std::string::npos) << bad.err;
}

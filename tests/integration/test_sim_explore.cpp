// `mpscheck explore` against the sim device's shape and layout classes (plugins/sim/sim_bugs.cpp):
// k-threshold (mm wrong from an inner dimension K >= 10000), size-2^n (softplus wrong on rows a power
// of two >= 2048 long) and offset (avg_pool2d wrong for a channels_last input at an odd storage
// offset), which no fixed case's shape or layout reaches (the speed class, cliff:
// test_sim_explore_speed.cpp). Findings must also reach the regular reports (report.json, JUnit) under their variant
// ids. Each run has a stated budget, and the test asserts the exact threshold and minimal case id it reports, that the
// id replays as a finding, and that with no plant the same subsets give no finding at all.
#include "explore_common.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>

using namespace mpscheck::testing;

namespace {

// The subsets: every float32 layout variant of the forward case.
const char* kMatmul = "^op/linalg/mm/f32/.*/forward$";
const char* kSoftplus = "^op/activation/softplus/f32/.*/forward$";
// The offset class's op, as declared (contiguous input): only a layout variant reaches the plant.
const char* kPool = "^op/pool/avg_pool2d/f32/contiguous/forward$";

}  // namespace

TEST(SimExplore, KThresholdIsBisectedToThePlantedInnerDimension) {
  const std::string dir = fresh_dir("sim-explore-k");
  const Explored e = explore_on_sim({kMatmul}, "k-threshold", dir, {"--junit", dir + "/explore.xml"});
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

  // The regular reports carry each finding as a failing case under its minimal variant's id, the
  // threshold in its message; the declared ids are not reported as passes beside them.
  const auto cases = report_cases(dir);
  ASSERT_EQ(cases.size(), 3u);
  const std::string id = f.at("id");
  ASSERT_TRUE(cases.count(id)) << id;
  EXPECT_EQ(cases.at(id).at("status"), "mismatch");
  EXPECT_NE(cases.at(id).at("message").get<std::string>().find("wrong from a[1]=b[0] = 10000; a[1]=b[0] = 9999 passes"),
            std::string::npos)
      << cases.at(id).dump(2);
  EXPECT_FALSE(cases.count("op/linalg/mm/f32/contiguous/forward"));
  const std::string xml = read_text_file(dir + "/explore.xml");
  const std::string testcase = junit_case(xml, "mm/f32/contiguous/forward@a=1x10000,b=10000x1");
  EXPECT_NE(testcase.find("<failure message=\"wrong from a[1]=b[0] = 10000;"), std::string::npos) << xml;
  EXPECT_NE(xml.find("<testsuites tests=\"3\" failures=\"3\""), std::string::npos) << xml;
  // merge reads the explore run's report like any other.
  const auto merged = run_mpscheck({"merge", dir + "/mpscheck-report/report.json", "-o", dir + "/merged.json"}, dir);
  EXPECT_EQ(merged.exit_code, 1) << merged.err;
  EXPECT_NE(read_text_file(dir + "/merged.json").find(id), std::string::npos);

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
            std::string::npos)
      << e.r.out;
  EXPECT_LT(e.seconds, 90) << "the budget is " << kBudget << " s plus the worker's start";
}

TEST(SimExplore, WithNoPlantTheSameSubsetsHaveNoFinding) {
  const std::string dir = fresh_dir("sim-explore-control");
  // Sizes and layouts only (--min-time 0: no speed search, which has its own control below).
  // Every case explored is what the control asserts, so the run's budget is 3x the per-case one: 60 s
  // for the seven cases spent itself in mm's third layout on a quiet machine here (453 variants).
  const Explored e =
      explore_on_sim({kMatmul, kSoftplus, kPool}, "", dir, {"--junit", dir + "/explore.xml", "--min-time", "0"}, "180");
  EXPECT_EQ(e.r.exit_code, 0) << e.r.err << e.r.out;
  EXPECT_TRUE(e.report.at("findings").empty()) << e.report.dump(2);
  // In the regular reports: the six declared cases, each a pass, and no failure.
  const auto cases = report_cases(dir);
  EXPECT_EQ(cases.size(), 7u);
  for (const auto& [id, c] : cases) {
    EXPECT_EQ(id.find('@'), std::string::npos) << id;
    EXPECT_EQ(c.at("status"), "pass") << c.dump(2);
  }
  const std::string xml = read_text_file(dir + "/explore.xml");
  EXPECT_NE(xml.find("<testsuites tests=\"7\" failures=\"0\""), std::string::npos) << xml;
  // It did explore every case, none cut short by the budget.
  ASSERT_EQ(e.report.at("cases").size(), 7u);
  for (const auto& c : e.report.at("cases")) EXPECT_EQ(c.at("note"), "") << c.dump();
  EXPECT_GT(e.report.at("explore").at("variants").get<int>(), 200);
}

TEST(SimExplore, AChannelsLastInputAtAnOddOffsetIsFoundAndItsLayoutNamed) {
  const std::string dir = fresh_dir("sim-explore-offset");
  const Explored e = explore_on_sim({kPool}, "offset", dir, {"--junit", dir + "/explore.xml"});
  EXPECT_EQ(e.r.exit_code, 1) << e.r.err;
  const std::string base = "op/pool/avg_pool2d/f32/contiguous/forward";
  const std::string id = base + "@x=1x2x2x2+cl+off1";
  const auto findings = by_base(e.report);
  ASSERT_EQ(findings.size(), 1u) << e.report.dump(2);
  const auto& f = findings.at(base);
  EXPECT_EQ(f.at("id"), id);
  EXPECT_EQ(f.at("pattern"), "layout");
  EXPECT_EQ(f.at("layout"), "x channels_last at storage offset 1");
  EXPECT_EQ(f.at("status"), "mismatch");
  const std::string summary =
      "wrong for x channels_last at storage offset 1; at offset 0 it passes, 2 passes and 3 "
      "fails (odd offsets), x contiguous at storage offset 1 passes";
  EXPECT_EQ(f.at("summary"), summary);
  EXPECT_LT(e.seconds, 60) << "the budget is " << kBudget << " s";
  const auto cases = report_cases(dir);
  ASSERT_TRUE(cases.count(id)) << read_text_file(dir + "/mpscheck-report/report.json");
  EXPECT_EQ(cases.at(id).at("status"), "mismatch");
  EXPECT_EQ(cases.at(id).at("message").get<std::string>().rfind(summary, 0), 0u);
  EXPECT_NE(junit_case(read_text_file(dir + "/explore.xml"), "avg_pool2d/f32/contiguous/forward@x=1x2x2x2+cl+off1")
                .find("<failure"),
            std::string::npos);

  // The id replays; the same input at an even offset does not fail.
  const Explored again = explore_on_sim({id}, "offset", fresh_dir("sim-explore-offset-replay"));
  EXPECT_EQ(again.r.exit_code, 1) << again.r.err << again.r.out;
  const Explored even = explore_on_sim({base + "@x=1x2x2x2+cl+off2"}, "offset", fresh_dir("sim-explore-offset-even"));
  EXPECT_EQ(even.r.exit_code, 0) << even.r.err << even.r.out;

  // The reproducer rebuilds that exact layout: Python's tensor has the offset and the strides.
  const auto repro = run_mpscheck({"repro", id, "--script", "--target", "cpu"}, dir);
  ASSERT_EQ(repro.exit_code, 0) << repro.err;
  EXPECT_NE(repro.out.find("torch.randn([1, 2, 2, 2], generator=gen)"), std::string::npos) << repro.out;
  std::ofstream(dir + "/case.py") << repro.out << "\nx = make_inputs('cpu', torch.float32)[1]['x']\n"
                                  << "print('layout', x.storage_offset(), tuple(x.stride()), tuple(x.shape))\n";
  const auto py = run_shell("python3 case.py", dir);
  ASSERT_EQ(py.exit_code, 0) << py.err << "\n(the test needs python3 with torch: scripts/install-deps.sh)";
  EXPECT_NE(py.out.find("layout 1 (8, 1, 4, 2) (1, 2, 2, 2)"), std::string::npos) << py.out;
}

// The budget is hard: a variant still running when it ends (here the declared case, which the
// hang plant never lets return) is stopped then, not at the op's --timeout, and is no verdict.
TEST(SimExplore, AVariantStillRunningWhenTheBudgetEndsIsStoppedAndIsNoFinding) {
  const std::string dir = fresh_dir("sim-explore-budget");
  const auto start = std::chrono::steady_clock::now();
  const CommandResult r =
      run_mpscheck({"explore", "--target", "sim", "--plugin-dir", sim_plugin_dir(), "--filter",
                    "^op/binary/logaddexp/f32/contiguous/forward$", "--explore-budget", "3", "--timeout", "120"},
                   dir, {"MPSCHECK_SIM_BUGS=hang"});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_LT(seconds, 20) << "the budget is 3 s, the op's timeout 120 s";
  const auto report = read_json_file(dir + "/mpscheck-report/explore.json");
  ASSERT_EQ(report.at("cases").size(), 1u);
  EXPECT_EQ(report.at("cases")[0].at("note"), "not explored: the budget was spent");
  EXPECT_TRUE(report.at("findings").empty());
  const auto cases = report_cases(dir);
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases.begin()->second.at("status"), "skip");
}

TEST(SimExplore, BadBudgetsAndMisplacedFlagsAreOneLine) {
  const std::string dir = fresh_dir("sim-explore-usage");
  const auto zero = run_mpscheck({"explore", "--filter", kMatmul, "--explore-budget", "0"}, dir);
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_EQ(zero.err, "mpscheck: --explore-budget must be a positive number of seconds\n");
  const auto run = run_mpscheck({"--filter", kMatmul, "--explore-run-budget", "10"}, dir);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.err,
            "mpscheck: --explore-run-budget goes with explore: mpscheck explore --filter REGEX "
            "--explore-run-budget SEC\n");
  const auto bad = run_mpscheck({"explore", "--filter", "op/linalg/mm/f32/contiguous/forward@a=1x"}, dir);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("'1x' is not a shape"), std::string::npos) << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
}

TEST(SimExplore, AFindingsIdGivesAPythonReproducerAtItsSizes) {
  const std::string dir = fresh_dir("sim-explore-repro");
  const auto r = run_mpscheck(
      {"repro", "op/linalg/mm/f32/contiguous/forward@a=1x10000,b=10000x1", "--script", "--target", "cpu"}, dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("torch.randn([1, 10000], generator=gen)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("torch.randn([10000, 1], generator=gen)"), std::string::npos) << r.out;
  const auto bad = run_mpscheck({"repro", "op/linalg/mm/f32/contiguous/forward@c=1x2", "--script"}, dir);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("has no input 'c'"), std::string::npos) << bad.err;
  // A layout the input's rank cannot take, or a word that is no layout: one line, exit 2.
  for (const std::string& id : {std::string("op/linalg/mm/f32/contiguous/forward@a=24x40+cl"),
                                std::string("op/linalg/mm/f32/contiguous/forward@a=24x40+wide")}) {
    const auto r = run_mpscheck({"repro", id, "--script"}, dir);
    EXPECT_EQ(r.exit_code, 2) << id;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

// The sim's `cpu-scalar` class: mul on the sim device uses a CPU 0-dim operand rounded to float16.
// Every fixed case moves all its inputs to the device (a Python number, a * 1.75, reaches the op as a
// wrapped number, which the plant leaves alone), so the catalog alone passes; explore's +cpu layout
// finds it at the smallest sizes, the scalar named.
TEST(SimExplore, ACpuZeroDimOperandIsFoundWithTheScalarNamedAndTheCatalogAloneMissesIt) {
  const std::string catalog = fresh_dir("sim-cpu-scalar-catalog");
  const auto c = run_mpscheck(on_sim({"--filter", "^op/binary/mul"}), catalog, {"MPSCHECK_SIM_BUGS=cpu-scalar"});
  EXPECT_EQ(c.exit_code, 0) << c.err << c.out;
  EXPECT_EQ(count_findings(read_json_file(catalog + "/mpscheck-report/report.json")), 0) << c.out;

  const std::string dir = fresh_dir("sim-explore-cpu-scalar");
  const std::string base = "op/binary/mul/f32/contiguous/forward";
  const Explored e = explore_on_sim({"^" + base + "$"}, "cpu-scalar", dir);
  EXPECT_EQ(e.r.exit_code, 1) << e.r.err << e.r.out;
  const auto findings = by_base(e.report);
  ASSERT_EQ(findings.size(), 1u) << e.report.dump(2);
  const auto& f = findings.at(base);
  const std::string id = base + "@a=+cpu,b=2x1";
  EXPECT_EQ(f.at("id"), id);
  EXPECT_EQ(f.at("pattern"), "layout");
  EXPECT_EQ(f.at("layout"), "a as a 0-dim tensor on the CPU");
  EXPECT_EQ(f.at("status"), "mismatch");
  EXPECT_EQ(f.at("summary"), "wrong for a as a 0-dim tensor on the CPU; a contiguous passes");
  EXPECT_LT(e.seconds, 60) << "the budget is " << kBudget << " s";

  // The id replays as a finding; with no plant it passes (the sim takes the CPU scalar honestly).
  EXPECT_EQ(explore_on_sim({id}, "cpu-scalar", fresh_dir("sim-cpu-scalar-replay")).r.exit_code, 1);
  EXPECT_EQ(explore_on_sim({id}, "", fresh_dir("sim-cpu-scalar-honest")).r.exit_code, 0);

  // The reproducer leaves the scalar on the CPU, a 0-dim tensor of the drawn value.
  const auto repro = run_mpscheck({"repro", id, "--script", "--target", "cpu"}, dir);
  ASSERT_EQ(repro.exit_code, 0) << repro.err;
  EXPECT_NE(repro.out.find("base = torch.tensor((torch.randn([], generator=gen)).item(), dtype=dtype)"),
            std::string::npos)
      << repro.out;
  std::ofstream(dir + "/case.py") << repro.out << "\na = make_inputs('meta', torch.float32)[1]['a']\n"
                                  << "print('scalar', a.device, a.dim(), a.dtype)\n";
  const auto py = run_shell("python3 case.py", dir);
  ASSERT_EQ(py.exit_code, 0) << py.err << "\n(the test needs python3 with torch: scripts/install-deps.sh)";
  EXPECT_NE(py.out.find("scalar cpu 0 torch.float32"), std::string::npos) << py.out;
}

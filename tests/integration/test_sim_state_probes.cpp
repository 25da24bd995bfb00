// `mpscheck explore`'s state probes against the sim device's state classes (plugins/sim/sim_bugs.cpp),
// which no fixed case runs into (plugins/sim/recall.tsv records the catalog missing each):
// dirty-state (mm wrong on its first call after a free of 64 MiB or more on the device), thread (the
// process aborts when two threads are inside sim kernels at once) and leak (bmm leaks a host block
// the size of its operands and output per call). For each, explore of one case finds it within its budget under
// the probe's id (`BASE@~dirty`, `BASE@~threads2`, `BASE@...~repeat20`), with the status that says
// what happened; --filter ID replays it; and with no plant the same cases give no finding.
#include "explore_common.hpp"

#include <gtest/gtest.h>

#include <chrono>

using namespace mpscheck::testing;

namespace {

const std::string kMm = "op/linalg/mm/f32/contiguous/forward";
// The leak class's case: matmul of batches reaches the sim's bmm; its size search grows no output
// quadratically (bmm's own does, to GiBs).
const std::string kBatched = "op/linalg/matmul_batched/f32/contiguous/forward";

// Explores `base` under the plant `bug`: one finding, of the state pattern, from `probe`, with
// `status`; then replays its id and expects the same status. Returns the finding.
nlohmann::json found_by_probe(const std::string& base, const std::string& bug, const std::string& probe,
                              const std::string& status) {
  const Explored e = explore_on_sim({"^" + base + "$"}, bug, fresh_dir("sim-state-" + bug));
  EXPECT_EQ(e.r.exit_code, 1) << e.r.err << e.r.out;
  EXPECT_LT(e.seconds, 90) << "the budget is " << kBudget << " s plus the worker's start";
  const auto& findings = e.report.at("findings");
  EXPECT_EQ(findings.size(), 1u) << e.report.dump(2);
  if (findings.size() != 1) return {};
  const nlohmann::json f = findings[0];
  EXPECT_EQ(f.at("base"), base);
  EXPECT_EQ(f.at("pattern"), "state");
  EXPECT_EQ(f.at("probe"), probe);
  EXPECT_EQ(f.at("status"), status) << f.dump(2);
  const std::string id = f.at("id");
  EXPECT_EQ(id.rfind(base + "@", 0), 0u) << id;
  EXPECT_EQ(id.substr(id.size() - probe.size() - 1), "~" + probe) << id;

  // The printed id is accepted by --filter in a later run, and fails there the same way.
  const Explored again = explore_on_sim({id}, bug, fresh_dir("sim-state-" + bug + "-replay"));
  EXPECT_EQ(again.r.exit_code, 1) << again.r.err << again.r.out;
  EXPECT_EQ(again.report.at("findings").size(), 1u) << again.report.dump(2);
  if (again.report.at("findings").size() == 1) {
    EXPECT_EQ(again.report.at("findings")[0].at("id"), id);
    EXPECT_EQ(again.report.at("findings")[0].at("status"), status);
  }
  return f;
}

}  // namespace

TEST(SimStateProbes, AKernelWrongAfterALargeFreeIsFoundByTheDirtyProbe) {
  const nlohmann::json f = found_by_probe(kMm, "dirty-state", "dirty", "mismatch");
  if (f.is_null()) return;
  EXPECT_EQ(f.at("id"), kMm + "@~dirty");
  const std::string summary = f.at("summary");
  EXPECT_EQ(summary.rfind("wrong after the device's memory was dirtied", 0), 0u) << summary;
  const std::string message = f.at("message");
  EXPECT_EQ(message.rfind("run after the device's memory was dirtied (blocks of 72.0 MiB, 17.0 MiB,", 0), 0u)
      << message;
  EXPECT_NE(message.find("4 of 384 elements outside tolerance"), std::string::npos) << message;
}

TEST(SimStateProbes, ACrashUnderTwoThreadsIsFoundByTheThreadsProbe) {
  const nlohmann::json f = found_by_probe(kMm, "thread", "threads2", "crash");
  if (f.is_null()) return;
  EXPECT_EQ(f.at("id"), kMm + "@~threads2");
  EXPECT_EQ(f.at("summary"), "crashes when 2 threads run it at once; on one thread it passes");
  const std::string message = f.at("message");
  EXPECT_NE(message.find("SIGABRT"), std::string::npos) << message;
  EXPECT_NE(message.find("sim: two threads inside sim kernels at once"), std::string::npos) << message;
}

TEST(SimStateProbes, ALeakPerCallIsFoundByTheRepeatProbeAsAMemoryFinding) {
  const nlohmann::json f = found_by_probe(kBatched, "leak", "repeat20", "memory");
  if (f.is_null()) return;
  const std::string id = f.at("id");
  // At a passing size variant (larger than declared), not at the declared sizes.
  EXPECT_NE(id, kBatched + "@~repeat20");
  const std::string message = f.at("message");
  EXPECT_EQ(message.rfind("memory grows with repetition: RSS grew ", 0), 0u) << message;
  EXPECT_NE(message.find("over 17 calls"), std::string::npos) << message;
  EXPECT_NE(message.find("while the sim's allocated bytes stayed at"), std::string::npos) << message;
  const std::string summary = f.at("summary");
  EXPECT_EQ(summary.rfind("process memory grows when it runs 20 times at ", 0), 0u) << summary;
  // In the regular report the leak is blocked (no smaller batch cures it), with its growth per call.
  const auto cases =
      report_cases(std::string(MPSCHECK_BUILD_DIR) + "/test-tmp/sim-state-leak");  // found_by_probe's run
  ASSERT_TRUE(cases.count(id)) << id;
  const nlohmann::json& c = cases.at(id);
  EXPECT_EQ(c.at("recommendation"), "blocked") << c.dump(2);
  EXPECT_NE(c.at("reason").get<std::string>().find("with every call"), std::string::npos) << c.dump(2);
  EXPECT_GT(c.at("memory").at("growth_per_call_bytes").get<std::int64_t>(), 1 << 20) << c.dump(2);
}

TEST(SimStateProbes, WithNoPlantTheProbesRunAndFindNothing) {
  const std::string dir = fresh_dir("sim-state-control");
  // Both cases, each with its own 60 s.
  const Explored e = explore_on_sim({"^" + kMm + "$", "^" + kBatched + "$"}, "", dir, {}, "120");
  EXPECT_EQ(e.r.exit_code, 0) << e.r.err << e.r.out;
  EXPECT_TRUE(e.report.at("findings").empty()) << e.report.dump(2);
  ASSERT_EQ(e.report.at("cases").size(), 2u);
  for (const auto& c : e.report.at("cases"))
    EXPECT_EQ(c.at("note").get<std::string>().find("not explored"), std::string::npos) << c.dump();
  // The repeat probe, the last of the three, ran on each case: the worker's log has its figures.
  const std::string log = read_text_file(dir + "/mpscheck-report/worker.log");
  for (const std::string& base : {kMm, kBatched}) {
    const size_t at = log.find("mpscheck worker: " + base + "@");
    ASSERT_NE(at, std::string::npos) << base << '\n' << log;
    EXPECT_NE(log.find("~repeat20: RSS ", at), std::string::npos) << log;
  }
  // The probes' ids replayed with no plant pass too.
  const Explored replay =
      explore_on_sim({kMm + "@~dirty", kMm + "@~threads2", kBatched + "@~repeat20"}, "", fresh_dir("sim-state-replay"));
  EXPECT_EQ(replay.r.exit_code, 0) << replay.r.err << replay.r.out;
  EXPECT_TRUE(replay.report.at("findings").empty()) << replay.report.dump(2);
  // A probe that is none is refused in one line.
  const auto bad = run_mpscheck({"explore", "--filter", kMm + "@~wet"}, dir);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("'~wet' is not a state probe"), std::string::npos) << bad.err;
  // repro takes a probe's id: the script says the state first.
  const auto repro = run_mpscheck({"repro", kMm + "@~threads2", "--script", "--target", "cpu"}, dir);
  EXPECT_EQ(repro.exit_code, 0) << repro.err;
  EXPECT_EQ(repro.out.rfind("# " + kMm + "@~threads2: mpscheck ran it from 2 threads at once\n", 0), 0u) << repro.out;
}

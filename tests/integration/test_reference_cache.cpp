// --reference-cache through the binary: a second run reuses the CPU side and reaches the same
// verdicts, against the same target or another; a changed seed or a damaged entry is recomputed.
#include "harness.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace mpscheck::testing;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kSelection{
    "--plugin-dir",
    test_plugins_dir(),
    "--filter",
    "^op/faults/(healthy|wrong|nan|slow|stalled_reference|nondeterministic_other_output)$|"
    "^op/activation/gelu/f32/|^op/reduction/sum/f32/contiguous/|^model/mlp/",
    "--quick",
    "--timeout",
    "20"};

struct RunResult {
  int exit_code;
  std::map<std::string, nlohmann::json> cases;
};

RunResult run(const std::string& name, const std::string& cache, std::vector<std::string> extra) {
  const std::string dir = fresh_dir("refcache-" + name);
  auto args = kSelection;
  if (!cache.empty()) args.insert(args.end(), {"--reference-cache", cache});
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = run_mpscheck(args, dir);
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  return {r.exit_code, cases_by_id(read_json_file(dir + "/mpscheck-report/report.json"))};
}

// What must not depend on where the reference came from: status, message, figures.
std::map<std::string, std::string> verdicts(const RunResult& r) {
  std::map<std::string, std::string> v;
  for (const auto& [id, c] : r.cases) v[id] = c["status"].dump() + c["message"].dump() + c["outputs"].dump();
  return v;
}

int count_cached(const RunResult& r) {
  int n = 0;
  for (const auto& [id, c] : r.cases) n += c.value("reference_cached", false);
  return n;
}

}  // namespace

TEST(ReferenceCacheRun, ASecondRunReusesTheReferenceAndReachesTheSameVerdicts) {
  const std::string cache = fresh_dir("refcache-store");
  const RunResult uncached = run("none", "", {"--target", "cpu:bfloat16", "--min-time", "0"});
  const RunResult first = run("first", cache, {"--target", "cpu", "--min-time", "0"});
  EXPECT_EQ(count_cached(first), 0);
  ASSERT_GT(first.cases.size(), 8u);
  EXPECT_EQ(first.cases.at("op/faults/wrong")["status"], "mismatch");

  // Against the same target: every case from the cache, every verdict the same.
  const RunResult again = run("again", cache, {"--target", "cpu", "--min-time", "0"});
  EXPECT_EQ(count_cached(again), static_cast<int>(again.cases.size()));
  EXPECT_EQ(verdicts(again), verdicts(first));

  // Against another target: the CPU side is the same, so it is reused, and the verdicts are those
  // of a run with no cache at all.
  const RunResult other = run("other", cache, {"--target", "cpu:bfloat16", "--min-time", "0"});
  EXPECT_EQ(count_cached(other), static_cast<int>(other.cases.size()));
  EXPECT_EQ(verdicts(other), verdicts(uncached));
  EXPECT_EQ(other.exit_code, uncached.exit_code);
}

TEST(ReferenceCacheRun, AnotherSeedOrADamagedEntryIsRecomputed) {
  const std::string cache = fresh_dir("refcache-damage");
  const RunResult first = run("d-first", cache, {"--target", "cpu", "--min-time", "0"});
  const RunResult seed = run("d-seed", cache, {"--target", "cpu", "--min-time", "0", "--seed", "5"});
  EXPECT_EQ(count_cached(seed), 0);  // written under seed 0: never used for seed 5
  // Damage every entry: each is recomputed, and the verdicts do not change.
  int damaged = 0;
  for (const auto& f : fs::directory_iterator(cache)) {
    std::fstream s(f.path(), std::ios::in | std::ios::out | std::ios::binary);
    s.seekp(-12, std::ios::end);
    s.put('\x7f');
    ++damaged;
  }
  ASSERT_GT(damaged, 8);
  const RunResult after = run("d-after", cache, {"--target", "cpu", "--min-time", "0"});
  EXPECT_EQ(count_cached(after), 0);
  EXPECT_EQ(verdicts(after), verdicts(first));
}

// A reused reference time only screens. A case it leaves similar keeps the very figures of run 1,
// marked as reused; a claim it suggests is settled by fresh interleaved rounds of both sides. The
// planted stalled reference is the trap: run 1 timed its reference while it slept (so run 1 made no
// claim), and the target alone is far faster than that stale time. Trusting it would call the
// target faster; the fresh rounds see the stall again and refuse the claim.
TEST(ReferenceCacheRun, ReusedReferenceTimesOnlyScreenAndAClaimIsRetimedFresh) {
  const std::string cache = fresh_dir("refcache-times");
  const RunResult first = run("t-first", cache, {"--target", "cpu"});
  ASSERT_EQ(first.cases.at("op/faults/stalled_reference")["speed_class"], "similar");
  const RunResult reused = run("t-reused", cache, {"--target", "cpu", "--reuse-reference-times"});
  int reused_count = 0;
  for (const auto& [id, c] : reused.cases) {
    const bool timed = c["timed"].get<bool>() && c["status"] == "pass";
    if (!timed) {
      EXPECT_FALSE(c.value("reference_time_reused", false)) << id;
      continue;
    }
    const bool claimed =
        c.value("speed_note", "").find("no claim") != std::string::npos || c["speed_class"] != "similar";
    // Run 1 kept no reference time from a round the machine was busy for; such a case is timed anew.
    const bool kept = first.cases.at(id).value("speed_note", "").find("busy") == std::string::npos;
    EXPECT_EQ(c.value("reference_time_reused", false), !claimed && kept) << id;
    if (claimed || !kept) continue;
    ++reused_count;
    EXPECT_EQ(c["reference_time"], first.cases.at(id)["reference_time"]) << id;  // the very figures of run 1
  }
  // Reuse happens (its count falls on a busy machine, whose rounds keep no reference time).
  EXPECT_GE(reused_count, 1);

  const auto& slow = reused.cases.at("op/faults/slow");
  EXPECT_EQ(slow["speed_class"], "slower");
  EXPECT_FALSE(slow.value("reference_time_reused", false));
  EXPECT_NE(slow["speed_note"].get<std::string>().find("three rounds"), std::string::npos) << slow["speed_note"];

  const auto& stalled = reused.cases.at("op/faults/stalled_reference");
  EXPECT_EQ(stalled["speed_class"], "similar") << stalled.value("speed_note", "");
  EXPECT_FALSE(stalled.value("reference_time_reused", false));
  EXPECT_NE(stalled.value("speed_note", "").find("busy"), std::string::npos) << stalled.value("speed_note", "");
}

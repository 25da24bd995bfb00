// Memory per case and the device tier through the real binary, on the sim device: every case's
// figures reach the JSON and the other reports, a case past the sim's recommended maximum (or its
// hard limit) is a `memory` finding, a sim that calls itself "Apple Paravirtual device" is the
// paravirtual tier, and --expect lines keyed tier= match on that tier only.
#include "sim_common.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

using namespace mpscheck::testing;

namespace {

// A few small cases of different sizes: cat's forward and backward, contiguous and not.
const std::vector<std::string> kCases{"--filter", "^op/shape/cat/f32/", "--min-time", "0"};

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& more) {
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

std::int64_t peak_of(const nlohmann::json& c) { return c.at("memory").at("peak_allocated_bytes").get<std::int64_t>(); }

}  // namespace

TEST(SimMemory, EveryCaseHasItsFiguresAndTheyReachEveryReport) {
  const std::string dir = fresh_dir("sim-memory-figures");
  const auto r = run_mpscheck(on_sim(with(kCases, {"--csv", "r.csv", "--markdown", "r.md", "--html", "r.html"})), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const auto report = read_json_file(dir + "/mpscheck-report/report.json");
  ASSERT_GE(report.at("cases").size(), 2u);
  for (const auto& c : report.at("cases")) {
    ASSERT_TRUE(c.contains("memory")) << c.dump();
    const auto& m = c.at("memory");
    EXPECT_GT(peak_of(c), 0) << c.at("id");
    EXPECT_EQ(m.at("peak_source"), "counter") << c.at("id");
    EXPECT_GE(m.at("driver_peak_bytes").get<std::int64_t>(), peak_of(c)) << c.at("id");  // whole pages
    EXPECT_GT(m.at("process_peak_bytes").get<std::int64_t>(), 1 << 20) << c.at("id");
    EXPECT_EQ(m.at("recommended_max_bytes").get<std::int64_t>(), std::int64_t{8} << 30) << c.at("id");
  }
  EXPECT_EQ(report.at("environment").at("tier"), "native");
  EXPECT_EQ(report.at("environment").at("device_name"), "mpscheck sim device");
  EXPECT_NE(r.err.find("mpscheck: device sim ('mpscheck sim device'; recommends at most 8.00 GiB): tier native"),
            std::string::npos)
      << r.err;
  const std::string csv = read_text_file(dir + "/r.csv");
  EXPECT_NE(csv.find("peak_allocated_bytes,driver_peak_bytes,process_peak_bytes,recommended_max_bytes"),
            std::string::npos);
  EXPECT_NE(csv.find("," + std::to_string(peak_of(report.at("cases").at(0))) + ","), std::string::npos) << csv;
  EXPECT_NE(read_text_file(dir + "/r.md").find("## Memory on the target ("), std::string::npos);
  EXPECT_NE(read_text_file(dir + "/r.html").find("<th>peak memory</th>"), std::string::npos);
  EXPECT_NE(r.out.find("Memory on the target: largest peak "), std::string::npos) << r.out;
}

TEST(SimMemory, ACaseOverTheRecommendedMaximumIsAMemoryFindingAndTheDeviceConstrained) {
  // The first run's peaks; a maximum between the smallest and the largest splits the cases.
  const std::string dir = fresh_dir("sim-memory-over");
  ASSERT_EQ(run_mpscheck(on_sim(kCases), dir).exit_code, 0);
  std::vector<std::int64_t> peaks;
  const auto first = read_json_file(dir + "/mpscheck-report/report.json");
  for (const auto& c : first.at("cases")) peaks.push_back(peak_of(c));
  std::sort(peaks.begin(), peaks.end());
  ASSERT_LT(peaks.front(), peaks.back());
  const std::int64_t max = (peaks.front() + peaks.back()) / 2;

  const auto r = run_mpscheck(on_sim(with(kCases, {"--markdown", "r.md"})), dir,
                              {"MPSCHECK_SIM_RECOMMENDED_MAX=" + std::to_string(max)});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto report = read_json_file(dir + "/mpscheck-report/report.json");
  int over = 0, under = 0;
  for (const auto& c : report.at("cases")) {
    const bool is_over = peak_of(c) > max;
    EXPECT_EQ(c.at("status"), is_over ? "memory" : "pass") << c.dump();
    if (is_over) {
      ++over;
      EXPECT_NE(c.at("message").get<std::string>().find("the device recommends"), std::string::npos) << c.dump();
      EXPECT_EQ(c.at("recommendation"), "reduce memory");
      EXPECT_EQ(c.at("tier"), "constrained");
    } else {
      ++under;
    }
  }
  EXPECT_GT(over, 0);
  EXPECT_GT(under, 0);
  EXPECT_EQ(report.at("environment").at("tier"), "constrained");
  EXPECT_NE(r.err.find("mpscheck: tier constrained: the device's memory is below what the selected cases need"),
            std::string::npos)
      << r.err;
  EXPECT_NE(read_text_file(dir + "/r.md").find("Device tier: **constrained**."), std::string::npos);

  // Known there: a line keyed to the constrained tier accepts it; one keyed to native does not.
  // (Only the cases over it are listed: a listed case that passes is an unexpected pass.)
  std::string constrained, native;
  for (const auto& c : report.at("cases")) {
    if (c.at("status") != "memory") continue;
    constrained += c.at("id").get<std::string>() + "  memory  tier=constrained  # small device\n";
    native += c.at("id").get<std::string>() + "  memory  tier=native\n";
  }
  std::ofstream(dir + "/constrained.expect") << constrained;
  std::ofstream(dir + "/native.expect") << native;
  const std::vector<std::string> env{"MPSCHECK_SIM_RECOMMENDED_MAX=" + std::to_string(max)};
  EXPECT_EQ(run_mpscheck(on_sim(with(kCases, {"--expect", "constrained.expect"})), dir, env).exit_code, 0);
  EXPECT_EQ(run_mpscheck(on_sim(with(kCases, {"--expect", "native.expect"})), dir, env).exit_code, 1);
}

TEST(SimMemory, RunningOutOfTheSimsMemoryIsAMemoryFindingNotAnError) {
  const std::string dir = fresh_dir("sim-memory-oom");
  // Room for the probe's 4x4 matrices, not for a case's tensors.
  const auto r = run_mpscheck(on_sim(kCases), dir, {"MPSCHECK_SIM_MEMORY_LIMIT=512"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto report = read_json_file(dir + "/mpscheck-report/report.json");
  for (const auto& c : report.at("cases")) {
    EXPECT_EQ(c.at("status"), "memory") << c.dump();
    EXPECT_NE(c.at("message").get<std::string>().find("sim backend out of memory"), std::string::npos) << c.dump();
    EXPECT_NE(c.at("message").get<std::string>().find("the device recommends at most 512 B"), std::string::npos)
        << c.dump();
  }
}

TEST(SimMemory, WithoutAPeakCounterThePeakIsSampled) {
  const std::string dir = fresh_dir("sim-memory-sampled");
  const auto r = run_mpscheck(on_sim(kCases), dir, {"MPSCHECK_SIM_NO_PEAK=1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto report = read_json_file(dir + "/mpscheck-report/report.json");
  for (const auto& c : report.at("cases")) {
    EXPECT_EQ(c.at("memory").at("peak_source"), "sampled") << c.dump();
    EXPECT_GT(peak_of(c), 0) << c.dump();
  }
}

TEST(SimTier, ASimNamedLikeTheHostedRunnersGpuIsParavirtualAndItsFindingsSaySo) {
  const std::string dir = fresh_dir("sim-tier-paravirtual");
  const std::vector<std::string> env{"MPSCHECK_SIM_DEVICE_NAME=Apple Paravirtual device",
                                     "MPSCHECK_SIM_RECOMMENDED_MAX=1"};
  const auto r = run_mpscheck(on_sim(with(kCases, {"--html", "r.html", "--markdown", "r.md"})), dir, env);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("mpscheck: device sim ('Apple Paravirtual device'; recommends at most 1 B): tier paravirtual"),
            std::string::npos)
      << r.err;
  const auto report = read_json_file(dir + "/mpscheck-report/report.json");
  EXPECT_EQ(report.at("environment").at("tier"), "paravirtual");
  for (const auto& c : report.at("cases")) EXPECT_EQ(c.at("tier"), "paravirtual") << c.dump();
  EXPECT_NE(read_text_file(dir + "/r.md").find("Device tier: **paravirtual**."), std::string::npos);
  EXPECT_NE(read_text_file(dir + "/r.html").find("<span class=\"tier\">paravirtual</span>"), std::string::npos);
  EXPECT_NE(r.out.find("[tier paravirtual]"), std::string::npos) << r.out;
  std::ofstream(dir + "/hosted.expect") << "^op/shape/cat/.*  *  tier=paravirtual  # hosted runner\n";
  EXPECT_EQ(run_mpscheck(on_sim(with(kCases, {"--expect", "hosted.expect"})), dir, env).exit_code, 0);
}

TEST(SimFingerprint, FindingsAreGroupedByFingerprintAndMatchedToTheKnownIssueTable) {
  const std::string dir = fresh_dir("sim-fingerprint");
  // A made-up row (example#7 points nowhere): the memory findings of cat, on any dtype and layout.
  std::ofstream(dir + "/known.tsv") << "op/shape/cat  *  *  memory  example#7  -  2.13  # test row\n";
  const std::vector<std::string> env{"MPSCHECK_SIM_RECOMMENDED_MAX=1"};
  const auto r = run_mpscheck(
      on_sim(with(kCases, {"--known-issues", "known.tsv", "--markdown", "r.md", "--bug-reports", "bugs"})), dir, env);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto report = read_json_file(dir + "/mpscheck-report/report.json");
  const auto& prints = report.at("fingerprints");
  ASSERT_FALSE(prints.empty());
  std::size_t covered = 0;
  for (const auto& p : prints) {
    EXPECT_EQ(p.at("known"), "known: example#7 (still broken in 2.13)") << p.dump();
    EXPECT_EQ(p.at("op"), "op/shape/cat");
    covered += p.at("cases").size();
  }
  EXPECT_EQ(covered, report.at("cases").size());
  // Forward and backward of one layout share a fingerprint: fewer groups than findings.
  EXPECT_LT(prints.size(), report.at("cases").size());
  EXPECT_NE(read_text_file(dir + "/r.md").find("| known: example#7 (still broken in 2.13) |"), std::string::npos);
  EXPECT_NE(read_text_file(dir + "/bugs/fingerprints.md").find("known: example#7"), std::string::npos);
  // Without the row, the same findings are new; a malformed table stops the run before it starts.
  std::ofstream(dir + "/empty.tsv") << "# nothing known\n";
  ASSERT_EQ(run_mpscheck(on_sim(with(kCases, {"--known-issues", "empty.tsv"})), dir, env).exit_code, 1);
  const auto fresh = read_json_file(dir + "/mpscheck-report/report.json");
  for (const auto& p : fresh.at("fingerprints")) EXPECT_EQ(p.at("known"), "new");
  std::ofstream(dir + "/bad.tsv") << "op/shape/cat * * memory\n";
  const auto bad = run_mpscheck(on_sim(with(kCases, {"--known-issues", "bad.tsv"})), dir, env);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("bad.tsv:1: a row needs seven fields"), std::string::npos) << bad.err;
}

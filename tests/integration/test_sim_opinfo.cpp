// OpInfo's samples as cases (core/opinfo_cases.hpp), through the real binary and the export the
// build makes (build/plugins/opinfo-calls.pt, scripts/export-opinfo.py): the cases are listed with a
// quick selection, a bug the sim plants in one ATen op is a mismatch in the OpInfo cases that call it
// at every dtype while the same cases pass on the honest device, and a crashing op is that op's crash
// while the run goes on.
#include "harness.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <set>
#include <sstream>

namespace {

using namespace mpscheck::testing;

std::set<std::string> listed(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"--list", "--filter", "^op/opinfo/"};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = run_mpscheck(args, fresh_dir("sim-opinfo-list"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> ids;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("op/opinfo/", 0) == 0) ids.insert(line.substr(0, line.find(' ')));
  return ids;
}

nlohmann::json run_on(const std::string& target, const std::string& filter, const std::string& bugs,
                      const std::string& name) {
  const std::string dir = fresh_dir(name);
  std::vector<std::string> env;
  if (!bugs.empty()) env.push_back("MPSCHECK_SIM_BUGS=" + bugs);
  const auto r = run_mpscheck({"--plugin-dir", test_plugins_dir() + "/sim", "--target", target, "--filter", filter,
                               "--min-time", "0", "--json", "r.json"},
                              dir, env);
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.out << r.err;
  return read_json_file(dir + "/r.json");
}

TEST(SimOpInfo, TheBuildsExportGivesCasesPerDtypeAndQuickKeepsOneSamplePerEntry) {
  ASSERT_TRUE(std::filesystem::exists(std::string(MPSCHECK_BUILD_DIR) + "/plugins/opinfo-calls.pt"))
      << "the build exports OpInfo's samples (target opinfo_calls); without them there are no op/opinfo cases";
  const auto all = listed({});
  const auto quick = listed({"--quick"});
  EXPECT_GT(all.size(), 6000u);
  EXPECT_LT(quick.size(), all.size());
  EXPECT_GT(quick.size(), 2000u);
  for (const auto& id : quick) EXPECT_TRUE(all.count(id)) << id;
  for (const char* dtype : {"f32", "f16", "bf16"})
    EXPECT_TRUE(all.count(std::string("op/opinfo/nn.functional.gelu/") + dtype + "/s0-gelu/forward")) << dtype;
  // Each case is one ATen call in the catalog's id shape: op/opinfo/<entry>/<dtype>/s<k>-<op>/<direction>.
  const std::regex shape(R"(^op/opinfo/[^/]+/(f32|f16|bf16)/s[0-9]+-[A-Za-z0-9_.-]+/(forward|backward)$)");
  for (const auto& id : all) EXPECT_TRUE(std::regex_match(id, shape)) << id;
}

// The sim's `backward` class halves aten::threshold_backward (ReLU's gradient) on the device. OpInfo's
// relu and threshold samples 2 and 3 ([5, 5] and [5, 10, 5]) reach it with gradients to halve (its
// samples 0 and 1 are a 0-dim tensor and five zeros of relu's output: nothing there to get wrong).
TEST(SimOpInfo, APlantedGradientIsAMismatchAtEveryDtypeAndTheHonestDevicePasses) {
  const std::string filter = "^op/opinfo/nn.functional.(relu|threshold)/[^/]+/s[23]-threshold_backward/backward$";
  for (const char* target : {"sim", "sim:float16", "sim:bfloat16"}) {
    const auto planted = cases_by_id(run_on(target, filter, "backward", std::string("sim-opinfo-bw-") + target));
    ASSERT_GE(planted.size(), 4u) << target;
    for (const auto& [id, c] : planted)
      EXPECT_EQ(c["status"], "mismatch") << target << " " << id << ": " << c["message"];
    const auto honest = cases_by_id(run_on(target, filter, "", std::string("sim-opinfo-honest-") + target));
    ASSERT_EQ(honest.size(), planted.size()) << target;
    for (const auto& [id, c] : honest) EXPECT_EQ(c["status"], "pass") << target << " " << id << ": " << c["message"];
  }
}

// The sim's `abort` class kills the process in aten::logit: each OpInfo logit case is a crash of its
// own, and the cases after it still run in a fresh worker.
TEST(SimOpInfo, ACrashingOpIsThatCasesCrashAndTheRunGoesOn) {
  const auto report = run_on("sim", "^op/opinfo/(logit|nn.functional.gelu)/f32/s0-", "abort", "sim-opinfo-abort");
  const auto cases = cases_by_id(report);
  int crashes = 0, passes = 0;
  for (const auto& [id, c] : cases) {
    if (id.find("/logit/") != std::string::npos && id.find("-logit/") != std::string::npos) {
      EXPECT_EQ(c["status"], "crash") << id << ": " << c["message"];
      ++crashes;
    } else if (id.find("/nn.functional.gelu/") != std::string::npos) {
      EXPECT_EQ(c["status"], "pass") << id << ": " << c["message"];
      ++passes;
    }
  }
  EXPECT_GE(crashes, 1);
  EXPECT_GE(passes, 2);
  EXPECT_EQ(report["run"]["complete"], true) << report["run"].dump();
}

}  // namespace

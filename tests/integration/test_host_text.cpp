// Host text through the real binary (issue 23 items 6 and 8): argv, paths and environment values
// that are not UTF-8 reach the reports repaired, or are refused with exit 2 and one line, never an
// abort; a plugin that links another LibTorch is refused in one line, never a crash.
#include "harness.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace mpscheck::testing;
namespace fs = std::filesystem;

namespace {
int count_lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }
const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD
}  // namespace

TEST(HostText, ALatin1ReportFolderAndOutputPathGetTheirReports) {
  const std::string dir = fresh_dir("host-text-report-dir");
  const std::string report_dir = dir + "/r\xE9sultats\xFF";  // Latin-1 "é", and a byte no encoding has
  const std::vector<std::string> args = {"--ops",      "--filter", "^op/activation/relu/f32/contiguous/forward$",
                                         "--quick",    "--target", "cpu",
                                         "--min-time", "0",        "--report-dir",
                                         report_dir};
  auto r = run_mpscheck(args, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;  // was 134: nlohmann threw on the command line after every case had run
  // The report is where the bytes say, and it parses.
  ASSERT_TRUE(fs::exists(report_dir + "/report.json")) << r.err;
  const auto report = read_json_file(report_dir + "/report.json");
  EXPECT_EQ(cases_by_id(report).at("op/activation/relu/f32/contiguous/forward")["status"], "pass");
  const std::string command = report["run"]["command"];
  EXPECT_NE(command.find("r" + kReplacement + "sultats" + kReplacement), std::string::npos) << command;
  // A report path of its own in Latin-1 too.
  auto with_json = args;
  with_json.insert(with_json.end(), {"--json", dir + "/caf\xE9.json"});
  r = run_mpscheck(with_json, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto json = read_json_file(dir + "/caf\xE9.json");
  EXPECT_NE(json["run"]["command"].get<std::string>().find("caf" + kReplacement + ".json"), std::string::npos);
}

TEST(HostText, AFilterAndEnvironmentValuesThatAreNotUtf8AreRepairedInTheReport) {
  const std::string dir = fresh_dir("host-text-filter-env");
  const auto r = run_mpscheck({"--ops", "--filter", "^op/activation/relu/f32/contiguous/forward$|\xFF\xFE", "--quick",
                               "--target", "cpu", "--min-time", "0"},
                              dir, {"PYTORCH_MPSCHECK_TEST=caf\xE9", "OPENBLAS_MPSCHECK_TEST=\xC3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto report = read_json_file(dir + "/mpscheck-report/report.json");
  EXPECT_EQ(report["run"]["filters"][0], "^op/activation/relu/f32/contiguous/forward$|" + kReplacement + kReplacement);
  EXPECT_EQ(report["environment"]["variables"]["PYTORCH_MPSCHECK_TEST"], "caf" + kReplacement);
  EXPECT_EQ(report["environment"]["variables"]["OPENBLAS_MPSCHECK_TEST"], kReplacement);
  // `mpscheck env` prints the same repaired values.
  const auto env = run_mpscheck({"env"}, dir, {"PYTORCH_MPSCHECK_TEST=caf\xE9"});
  EXPECT_EQ(env.exit_code, 0) << env.err;
  EXPECT_NE(env.out.find("caf" + kReplacement), std::string::npos) << env.out;
}

TEST(HostText, WhatTheWorkersMustOpenIsRefusedInOneLineWhenNotUtf8) {
  const std::string dir = fresh_dir("host-text-model");
  // The worker gets --model, --plugin-dir, --reference-cache and --input as JSON text. The files
  // exist: the refusal comes before anything reads them.
  std::ofstream(dir + "/m\xE9.pt") << "not read";
  std::ofstream(dir + "/m.pt") << "not read";
  const std::vector<std::pair<std::string, std::vector<std::string>>> runs = {
      {"--model", {"--model", "m\xE9.pt", "--input", "float32[2,3]"}},
      {"--plugin-dir", {"--ops", "--plugin-dir", "plugins\xFF"}},
      {"--reference-cache", {"--ops", "--reference-cache", "cache\xE9"}},
      {"--input", {"--model", "m.pt", "--input", "float32[2,3]\xFF"}},
  };
  for (auto [option, args] : runs) {
    args.insert(args.end(), {"--quick", "--target", "cpu"});
    const auto r = run_mpscheck(args, dir);
    EXPECT_EQ(r.exit_code, 2) << option << ": " << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind("mpscheck: " + option + " '", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("is not valid UTF-8"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\xFF'), std::string::npos) << "the line itself is UTF-8: " << r.err;
  }
}

TEST(OneLibTorchHost, APluginLinkingAnotherLibTorchIsSkippedInOneLineNotACrash) {
  const std::string dir = fresh_dir("host-other-libtorch");
  const std::string plugin_dir = fixtures_dir() + "/fixture_links_other_libtorch";
  const auto r = run_mpscheck({"--no-default-plugins", "--plugin-dir", plugin_dir, "--list", "--all"}, dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;         // the fixture's fake libc10 aborts (134) if it is ever loaded
  EXPECT_EQ(count_lines(r.err), 2) << r.err;  // the refusal, then "0 cases"
  const std::string expected = "mpscheck: skipped plugin " + plugin_dir +
                               "/fixture_links_other_libtorch.so: links "
                               "libc10.so.1.13 (";
  EXPECT_EQ(r.err.rfind(expected, 0), 0u) << r.err;
  EXPECT_NE(r.err.find("another LibTorch than this mpscheck's ("), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/libc10.so)"), std::string::npos) << r.err;
}

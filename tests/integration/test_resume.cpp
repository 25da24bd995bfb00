// Killing the host loses no finished case, and --resume finishes the rest.
#include "harness.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

using namespace mpscheck::testing;

TEST(Resume, SigkilledHostKeepsFinishedCasesAndResumeFinishesTheRest) {
  const std::string dir = fresh_dir("resume");
  const std::string args = " --filter 'op/faults/(abort|hang|healthy|nan)$' --plugin-dir '" + test_plugins_dir() +
                           "' --no-default-plugins --target cpu --quick --min-time 0.01";
  // In id order: abort (crash), hang (blocks the run), healthy, nan.
  run_shell("'" + binary() + "'" + args + " --timeout 120 >host.out 2>&1 & echo $! > host.pid", dir);
  const std::string journal = dir + "/mpscheck-report/journal.jsonl";
  std::string text;
  for (int i = 0; i < 600; ++i) {  // the abort case finishes in about a second
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    try {
      text = read_text_file(journal);
    } catch (...) {
    }
    if (std::count(text.begin(), text.end(), '\n') >= 2) break;
  }
  ASSERT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << "header + the abort case, then hang blocks";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  run_shell("kill -9 $(cat host.pid)", dir);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_NE(read_text_file(journal).find("op/faults/abort"), std::string::npos);

  const auto r = run_shell("'" + binary() + "'" + args + " --timeout 2 --resume", dir);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("resuming: 1 cases already in the journal"), std::string::npos) << r.err;
  const auto cases = cases_by_id(read_json_file(dir + "/mpscheck-report/report.json"));
  ASSERT_EQ(cases.size(), 4u);
  EXPECT_EQ(cases.at("op/faults/abort")["status"], "crash");
  EXPECT_EQ(cases.at("op/faults/hang")["status"], "timeout");
  EXPECT_EQ(cases.at("op/faults/healthy")["status"], "pass");
  EXPECT_EQ(cases.at("op/faults/nan")["status"], "nan");
  // The abort case ran once: one journal line for it.
  const std::string final_journal = read_text_file(journal);
  size_t n = 0;
  for (size_t p = final_journal.find("\"op/faults/abort\""); p != std::string::npos;
       p = final_journal.find("\"op/faults/abort\"", p + 1))
    ++n;
  EXPECT_EQ(n, 1u);
}

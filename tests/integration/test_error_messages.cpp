// Errors read for what they mean, through the real binary (issue 23 item 4): the fixture plugin's
// target side fails with real messages (tests/fixtures/error_messages.cpp).
#include "harness.hpp"

#include <gtest/gtest.h>

using namespace mpscheck::testing;

namespace {
int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::vector<std::string> args() {
  // In id order: cuda_717, dtype, fallback, float64, healthy, shape; one worker's log to count in.
  return {"--no-default-plugins",
          "--plugin-dir",
          fixtures_dir() + "/fixture_error_messages",
          "--filter",
          "^op/errors/",
          "--target",
          "cpu",
          "--quick",
          "--min-time",
          "0",
          "--jobs",
          "1"};
}
}  // namespace

TEST(ErrorMessages, EachRealMessageGetsTheStatusItMeans) {
  const std::string dir = fresh_dir("error-messages");
  const auto r = run_mpscheck(args(), dir);
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const auto cases = cases_by_id(read_json_file(dir + "/mpscheck-report/report.json"));
  EXPECT_EQ(cases.at("op/errors/cuda_717")["status"], "error") << cases.at("op/errors/cuda_717")["message"];
  EXPECT_EQ(cases.at("op/errors/dtype")["status"], "error");
  EXPECT_EQ(cases.at("op/errors/shape")["status"], "error");
  EXPECT_EQ(cases.at("op/errors/float64")["status"], "unsupported");
  EXPECT_EQ(cases.at("op/errors/fallback")["status"], "fallback") << cases.at("op/errors/fallback")["message"];
  const std::string fallback = cases.at("op/errors/fallback")["message"];
  EXPECT_NE(fallback.find("Falling back on CPU"), std::string::npos) << fallback;
  EXPECT_EQ(cases.at("op/errors/healthy")["status"], "pass");
  // A sticky device error replaces the worker on any target, the CPU included; nothing else does there.
  EXPECT_EQ(count_of(read_text_file(dir + "/mpscheck-report/worker.log"), ": ready, "), 2);
}

TEST(ErrorMessages, OnAnAcceleratorEveryTargetFailureGetsAFreshWorker) {
  const std::string dir = fresh_dir("error-messages-accelerator");
  const auto r = run_mpscheck(args(), dir, {"MPSCHECK_TEST_FRESH_WORKER_AFTER_ERROR=1"});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  // The first worker, one after cuda_717 and one after dtype (shape is the last case); not after
  // the fallback, the declared float64 gap or the pass.
  EXPECT_EQ(count_of(read_text_file(dir + "/mpscheck-report/worker.log"), ": ready, "), 3);
}

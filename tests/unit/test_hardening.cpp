// The host's defences against what a worker or a user hands it: protocol lines, bounded waits,
// --input specs.
#include "core/worker.hpp"
#include "core/worker_protocol.hpp"
#include "core/user_regex.hpp"
#include "core/input_spec.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

using namespace mpscheck;

TEST(WorkerProtocol, ReadyMessages) {
  EXPECT_TRUE(parse_ready_message(R"({"ready":true,"cases":3})").ok);
  EXPECT_EQ(parse_ready_message(R"({"ready":true,"cases":3})").cases, 3u);
  const WorkerReady no = parse_ready_message(R"({"ready":false,"error":"plugin x: cannot load"})");
  EXPECT_FALSE(no.ok);
  EXPECT_EQ(no.error, "plugin x: cannot load");
  for (const char* bad : {"", "garbage", "[1]", R"({"cases":3})", R"({"ready":"yes"})", "{\"ready\":tr"})
    EXPECT_THROW(parse_ready_message(bad), ProtocolError) << bad;
}

TEST(WorkerProtocol, AResultForAnotherCaseIsAnErrorNotThatCasesResult) {
  EXPECT_EQ(parse_result_message(R"({"id":"a","status":"pass"})", "a").status, Status::Pass);
  EXPECT_THROW(parse_result_message(R"({"id":"b","status":"pass"})", "a"), ProtocolError);
  EXPECT_THROW(parse_result_message(R"({"id":"a","status":"bogus"})", "a"), ProtocolError);
  EXPECT_THROW(parse_result_message(R"({"id":"a","status":"pass","outputs":5})", "a"), ProtocolError);
  EXPECT_THROW(parse_result_message("\xff\xfe", "a"), ProtocolError);
}

TEST(BoundedWait, GivesUpAtItsDeadlineAndReapsAfterSigkill) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    signal(SIGTERM, SIG_IGN);
    for (;;) pause();
  }
  const auto t0 = std::chrono::steady_clock::now();
  int st = 0;
  EXPECT_FALSE(wait_for_exit(child, 0.2, &st));  // still running: no answer, but no hang either
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  kill(child, SIGKILL);
  ASSERT_TRUE(wait_for_exit(child, 10, &st));
  EXPECT_TRUE(WIFSIGNALED(st));
  EXPECT_EQ(WTERMSIG(st), SIGKILL);
  EXPECT_EQ(describe_wait_status(st).rfind("SIGKILL", 0), 0u) << describe_wait_status(st);
}

TEST(InputSpec, GoodSpecs) {
  const InputSpec a = parse_input_spec("float32[1,3,224,224]");
  EXPECT_EQ(a.dtype, c10::kFloat);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{1, 3, 224, 224}));
  const InputSpec b = parse_input_spec(" int64[ 1 , 128 ]:-5..30522 ");
  EXPECT_EQ(b.dtype, c10::kLong);
  EXPECT_EQ(b.lo, -5);
  EXPECT_EQ(b.hi, 30522);
  EXPECT_TRUE(parse_input_spec("bool[]").shape.empty());
}

TEST(InputSpec, BadSpecsAreBadModelInputNeverAnotherException) {
  for (const char* bad :
       {"float32", "float32[", "float32[1,,2]", "float32[1,]", "float32[-1]", "float32[1]:0..5", "int64[2]:5..1",
        "int64[2]:a..b", "quux[2]", "float32[99999999999999999999]", "float32[100000,100000,100000]", "[2]",
        "int64[2]:0..99999999999999999999", "float32[2] trailing"}) {
    try {
      parse_input_spec(bad);
      ADD_FAILURE() << bad << " parsed";
    } catch (const BadModelInput& e) {
      EXPECT_NE(std::string(e.what()).find("--input"), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << bad << " threw " << e.what();
    }
  }
  // A very long spec is refused, not a stack overflow (std::regex recursed once per character).
  EXPECT_THROW(parse_input_spec("float32[" + std::string(200000, '1') + "]"), BadModelInput);
  EXPECT_THROW(parse_input_spec("float32[" + std::string(200000, ' ') + "1]x"), BadModelInput);
}

TEST(UserRegex, CountsAndLengthsStdRegexCannotTakeAreRefused) {
  EXPECT_TRUE(std::regex_search("op/conv/conv2d", user_regex("conv{1,2}")));
  EXPECT_TRUE(std::regex_search("a{99999}", user_regex("a\\{99999\\}")));  // escaped braces are literal
  EXPECT_THROW(user_regex("a{1001}"), std::regex_error);
  EXPECT_THROW(user_regex("a{2,99999999999999999999}"), std::regex_error);  // overflowed libstdc++'s parser
  EXPECT_THROW(user_regex(std::string(1001, 'a')), std::regex_error);
  EXPECT_THROW(user_regex("(a)\\99999999999999999999"), std::regex_error);  // a back-reference overflowed it too
  EXPECT_TRUE(std::regex_search("op/hardening/tiny/00001", user_regex("tiny/00001$")));
  EXPECT_THROW(user_regex("op/sort/.**"), std::regex_error);  // hung regex_match for over 10 s
  EXPECT_TRUE(std::regex_search("op/sort/x", user_regex("op/.*?/x")));
  EXPECT_THROW(user_regex("("), std::regex_error);
}

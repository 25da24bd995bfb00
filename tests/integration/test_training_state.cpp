// Issue 47 item 3 through the real binary: a network's gradients judged by the size and shape of
// their error in units of the dtype's rounding, against what honest rounding gives (the CPU's own
// run in the dtype on the sim, the rounded-operation baseline on a CPU target). A Linear's weight
// gradient 10% off, up or down, on every element, with every forward value exact, is a mismatch
// naming it on every target; LibTorch's own honest float16/bfloat16 gradients of a GELU MLP with a
// log-softmax head and of an attention block (whose key bias has an exactly-zero gradient) pass.
// Before: the planted gradient passed on sim:bfloat16 ("as close to float64 as ... the CPU's own
// bfloat16 run"), and both honest models were mismatches on cpu:bfloat16 and cpu:float16
// ("grad/key.bias: the target is 1.7e+14% too large on average").
#include "harness.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace mpscheck::testing;

namespace {

class TrainingState : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fresh_dir("training-state-models");
    const auto r =
        run_shell(std::string("python3 ") + MPSCHECK_SOURCE_DIR + "/tests/fixtures/export_training_state.py .", dir_);
    log_ = r.out + r.err;
    exported_ = r.exit_code == 0;
  }
  void SetUp() override { ASSERT_TRUE(exported_) << "python3 with torch is needed to export the models: " << log_; }

  // Trains one model on one target and returns its training case.
  static nlohmann::json train(const std::string& model, const std::string& target, int expected_exit) {
    std::string where = target;
    for (char& c : where)
      if (c == ':') c = '-';
    const std::string dir = fresh_dir("training-state-" + model + "-" + where);
    const std::string input = model == "attention_block" ? "float32[4,16,32]" : "float32[64,128]";
    const auto r =
        run_mpscheck({"--plugin-dir", test_plugins_dir() + "/sim", "--model", dir_ + "/" + model + ".pt", "--input",
                      input, "--train", "--target", target, "--quick", "--min-time", "0", "--json", "r.json"},
                     dir);
    EXPECT_EQ(r.exit_code, expected_exit) << r.out << r.err;
    return cases_by_id(read_json_file(dir + "/r.json")).at("model/torchscript/" + model + "/train");
  }

  static inline std::string dir_, log_;
  static inline bool exported_ = false;
};

}  // namespace

TEST_F(TrainingState, AGradientTenPercentOffElementByElementIsAMismatchOnEveryTarget) {
  // Planted off the CPU on the sim (the CPU's own run is the honest witness), in the dtype on a CPU target.
  const std::pair<const char*, const char*> runs[] = {{"grad_noise_device", "sim"},
                                                      {"grad_noise_device", "sim:float16"},
                                                      {"grad_noise_device", "sim:bfloat16"},
                                                      {"grad_noise_dtype", "cpu:float16"},
                                                      {"grad_noise_dtype", "cpu:bfloat16"}};
  for (const auto& [model, target] : runs) {
    SCOPED_TRACE(target);
    const auto c = train(model, target, 1);
    EXPECT_EQ(c["status"], "mismatch") << c["message"];
    EXPECT_EQ(c["attribution"], "target");
    const std::string m = c["message"].get<std::string>();
    // The plant is in the model's own code, on the device only: every ATen call the CPU reference
    // made replays right alone, the message says so first, and the wrong gradient leads the rest.
    EXPECT_EQ(m.rfind("no ATen call of the model is wrong alone on the target", 0), 0u) << m;
    EXPECT_NE(m.find("the network diverges as a whole. grad/mid.weight: "), std::string::npos) << m;
    if (std::string(target) != "sim") {
      EXPECT_NE(m.find("errors honest"), std::string::npos) << "judged by the size of its errors: " << m;
    }
  }
}

TEST_F(TrainingState, HonestReducedGradientsPassWithTheComparisonThatClearedThem) {
  for (const char* model : {"gelu_mlp", "attention_block"}) {
    for (const char* target : {"cpu:bfloat16", "cpu:float16", "sim:bfloat16"}) {
      SCOPED_TRACE(std::string(model) + " on " + target);
      const auto c = train(model, target, 0);
      EXPECT_EQ(c["status"], "pass") << c["message"];
      const std::string m = c.value("message", "");
      if (m.empty()) continue;  // every gradient inside the plain tolerance and its screen
      EXPECT_NE(m.find("judged against float64 in units of"), std::string::npos) << m;
      EXPECT_NE(m.find("of its allowance"), std::string::npos) << m;
      EXPECT_EQ(m.find("float32 is the fragile side"), std::string::npos) << m;
      const bool cpu = std::string(target).rfind("cpu", 0) == 0;
      EXPECT_NE(m.find(cpu ? "every operation's result rounded" : "the CPU's own"), std::string::npos) << m;
    }
  }
}

// The faults plugin's channel_gradient: on the first training step only, one output channel of
// fc2's weight gradient 3% low on the target, every value of the forward exact. Before the rule it
// passed on cpu:bfloat16 and cpu:float16, where first-step gradients kept the trajectory tolerance
// (10% of each element), and on sim:bfloat16 inside the family's 2x allowance.
TEST(TrainingStateChannel, OneChannelThreePercentLowOnTheFirstStepIsAMismatchInEveryDtype) {
  for (const char* target : {"cpu", "cpu:float16", "cpu:bfloat16", "sim:bfloat16"}) {
    SCOPED_TRACE(target);
    std::string where = target;
    for (char& c : where)
      if (c == ':') c = '-';
    const std::string dir = fresh_dir("training-state-channel-" + where);
    const auto r =
        run_mpscheck({"--filter", "^model/faults/channel_gradient/train$", "--plugin-dir", test_plugins_dir(),
                      "--plugin-dir", test_plugins_dir() + "/sim", "--no-default-plugins", "--target", target,
                      "--quick", "--min-time", "0", "--json", "r.json"},
                     dir);
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    const auto c = cases_by_id(read_json_file(dir + "/r.json")).at("model/faults/channel_gradient/train");
    EXPECT_EQ(c["status"], "mismatch") << c["message"];
    const std::string m = c["message"].get<std::string>();
    EXPECT_NE(m.find("grad0/fc2.weight"), std::string::npos) << m;
    if (std::string(target) != "cpu") {
      EXPECT_NE(m.find("row 5"), std::string::npos) << "names the channel: " << m;
    }
  }
}

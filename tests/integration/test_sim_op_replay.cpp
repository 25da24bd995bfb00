// A model, op by op (issue 49), through the real binary on the sim device: a model case records its
// ATen calls in the CPU float32 reference run and replays each distinct call alone on the target,
// judged by the op rules. A per-op bug inside a network that the network's own comparison dilutes
// (the sim's batch-row class: a Linear's last batch row ~9 rounding units low) is then a `mismatch`
// that names the op, its shapes and its module, with a one-op Python reproducer; so are a kernel
// wrong from its second call (later-call) and an exp wrong on its small elements (small-elements,
// in a TorchScript model). The honest control (ulp-noise) gives no wrong call.
#include "sim_common.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

using namespace mpscheck::testing;

namespace {

nlohmann::json run_report(const std::vector<std::string>& args, const std::string& dir,
                          const std::vector<std::string>& env = {}) {
  const CommandResult r = run_mpscheck(args, dir, env);
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.out << r.err;
  return read_json_file(dir + "/mpscheck-report/report.json");
}

bool is_finding(const nlohmann::json& c) { return c.at("status") != "pass" && c.at("status") != "skip"; }

// The replayed calls of case `c` found wrong, in the order of their first call.
std::vector<nlohmann::json> wrong_calls(const nlohmann::json& c) {
  std::vector<nlohmann::json> out;
  if (!c.contains("op_replay")) return out;
  for (const auto& call : c.at("op_replay").at("ops"))
    if (is_finding(call)) out.push_back(call);
  return out;
}

std::string safe(std::string s) {
  for (char& ch : s)
    if (ch == ':') ch = '_';
  return s;
}

class SimOpReplay : public ::testing::TestWithParam<std::string> {};

// The network alone passes the plant (--no-op-replay: the judge before issue 49); replayed, each
// Linear of the MLP with 16 outputs or more is a mismatch that names its call.
TEST_P(SimOpReplay, ALinearLowOnTheLastRowOfItsBatchIsNamedByItsCall) {
  const std::string target = GetParam();
  const std::vector<std::string> env = {"MPSCHECK_SIM_BUGS=batch-row"};
  const auto alone =
      run_report(on_sim({"--filter", "^model/mlp/infer$", "--target", target, "--min-time", "0", "--no-op-replay"}),
                 fresh_dir("op-replay-alone-" + safe(target)), env);
  ASSERT_EQ(alone.at("cases").size(), 1u);
  EXPECT_EQ(alone.at("cases").at(0).at("status"), "pass") << alone.at("cases").at(0).value("message", "");
  EXPECT_FALSE(alone.at("cases").at(0).contains("op_replay"));

  const std::string dir = fresh_dir("op-replay-batch-row-" + safe(target));
  const auto report =
      run_report(on_sim({"--filter", "^model/mlp/infer$", "--target", target, "--min-time", "0"}), dir, env);
  ASSERT_EQ(report.at("cases").size(), 1u);
  const auto& c = report.at("cases").at(0);
  const std::string message = c.value("message", "");
  EXPECT_EQ(c.at("status"), "mismatch") << message;
  EXPECT_NE(
      message.find(
          "distinct ATen calls of the model are wrong alone on the target: aten::addmm (float32[512], float32[64, "),
      std::string::npos)
      << message;
  EXPECT_NE(message.find(") in layers.0, 1 call: mismatch: "), std::string::npos) << message;
  EXPECT_NE(message.find("The whole network passed its own comparison"), std::string::npos) << message;
  const auto wrong = wrong_calls(c);
  ASSERT_FALSE(wrong.empty()) << c.dump(1).substr(0, 3000);
  for (const auto& call : wrong) {
    EXPECT_EQ(call.at("op"), "aten::addmm") << call.dump();
    EXPECT_EQ(call.at("status"), "mismatch") << call.dump();
    EXPECT_EQ(call.at("module").get<std::string>().rfind("layers.", 0), 0u) << call.dump();
    EXPECT_NE(call.at("arguments").get<std::string>().find("float32[64, "), std::string::npos) << call.dump();
    EXPECT_EQ(call.value("fingerprint", "").rfind("op/aten/addmm ", 0), 0u) << call.dump();
    EXPECT_NE(call.value("reproducer", "").find("return torch.ops.aten.addmm.default("), std::string::npos);
  }
  // Every other call (relu, the 10-output head the plant leaves alone) is right alone.
  for (const auto& call : c.at("op_replay").at("ops"))
    if (call.at("op") != "aten::addmm" || call.at("module") == "layers.2")
      EXPECT_EQ(call.at("status"), "pass") << call.dump();
}

// A kernel right on its first call with a weight and 5% high on every later one: the replay calls
// each op twice in a row on one target instance, and the second call names it.
TEST_P(SimOpReplay, AKernelWrongFromItsSecondCallIsNamedByItsCall) {
  const std::string target = GetParam();
  const auto report = run_report(on_sim({"--filter", "^model/mlp/infer$", "--target", target, "--min-time", "0"}),
                                 fresh_dir("op-replay-later-call-" + safe(target)), {"MPSCHECK_SIM_BUGS=later-call"});
  ASSERT_EQ(report.at("cases").size(), 1u);
  const auto& c = report.at("cases").at(0);
  EXPECT_EQ(c.at("status"), "mismatch");
  const auto wrong = wrong_calls(c);
  ASSERT_FALSE(wrong.empty()) << c.dump(1).substr(0, 3000);
  EXPECT_EQ(wrong.front().at("op"), "aten::addmm");
  EXPECT_EQ(wrong.front().at("module"), "layers.0");
  EXPECT_EQ(wrong.front().value("message", "").rfind("call 2 differs from call 1 in out", 0), 0u) << wrong.front();
}

// --train records the backward's calls too: a weight-gradient kernel (input^T @ grad) 10% off on every
// element, up and down in turn, is a wrong call of autograd's node for the Linear.
TEST_P(SimOpReplay, AWeightGradientKernelWrongOnEveryElementIsNamedByItsBackwardCall) {
  const std::string target = GetParam();
  const auto report = run_report(on_sim({"--filter", "^model/mlp/train$", "--target", target, "--min-time", "0"}),
                                 fresh_dir("op-replay-weight-grad-" + safe(target)), {"MPSCHECK_SIM_BUGS=weight-grad"});
  ASSERT_EQ(report.at("cases").size(), 1u);
  const auto& c = report.at("cases").at(0);
  EXPECT_EQ(c.at("status"), "mismatch");
  const auto wrong = wrong_calls(c);
  ASSERT_FALSE(wrong.empty()) << c.dump(1).substr(0, 3000);
  for (const auto& call : wrong) {
    EXPECT_EQ(call.at("op"), "aten::mm") << call.dump();
    EXPECT_TRUE(call.at("backward").get<bool>()) << call.dump();
    EXPECT_EQ(call.at("module").get<std::string>().rfind("backward of AddmmBackward", 0), 0u) << call.dump();
    EXPECT_NE(call.at("arguments").get<std::string>().find(" strides (1, "), std::string::npos) << call.dump();
  }
}

// The honest control: arithmetic and matmuls rounding the other way near a midpoint. No replayed call
// of a network of linear layers, of convolutions or of their training is wrong alone.
TEST_P(SimOpReplay, TheUlpNoiseControlGivesNoWrongCall) {
  const std::string target = GetParam();
  const auto report =
      run_report(on_sim({"--filter", "^model/(mlp|lenet5|mnist_cnn)/", "--target", target, "--min-time", "0"}),
                 fresh_dir("op-replay-ulp-noise-" + safe(target)), {"MPSCHECK_SIM_BUGS=ulp-noise"});
  ASSERT_EQ(report.at("cases").size(), 6u);
  for (const auto& c : report.at("cases")) {
    ASSERT_TRUE(c.contains("op_replay")) << c.at("id");
    EXPECT_GT(c.at("op_replay").at("replayed").get<int>(), 0) << c.at("id");
    for (const auto& call : wrong_calls(c)) ADD_FAILURE() << c.at("id") << ": " << call.dump();
  }
}

INSTANTIATE_TEST_SUITE_P(EveryDtype, SimOpReplay, ::testing::Values("sim", "sim:float16", "sim:bfloat16"),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           const auto colon = p.param.find(':');
                           return colon == std::string::npos ? std::string("float32") : p.param.substr(colon + 1);
                         });

// The one-op reproducer of a wrong call runs with torch alone: on the CPU in bfloat16 it passes (the
// op is right there), and with the sim's plant written into its target side it fails, naming it.
TEST(SimOpReplayScript, TheReproducerPassesOnTheCpuAndFailsWithThePlant) {
  if (run_shell("python3 -c 'import torch'", fresh_dir("op-replay-python")).exit_code != 0)
    FAIL() << "python3 with torch is not installed: scripts/install-deps.sh installs it";
  const std::string dir = fresh_dir("op-replay-script");
  const auto report =
      run_report(on_sim({"--filter", "^model/mlp/infer$", "--target", "sim:bfloat16", "--min-time", "0"}), dir,
                 {"MPSCHECK_SIM_BUGS=batch-row"});
  const auto wrong = wrong_calls(report.at("cases").at(0));
  ASSERT_FALSE(wrong.empty());
  std::string script = wrong.front().at("reproducer").get<std::string>();
  const std::string device = "DEVICE = \"sim\"\n";
  ASSERT_NE(script.find(device), std::string::npos) << script.substr(0, 2000);
  script.replace(script.find(device), device.size(), "DEVICE = \"cpu\"\n");
  { std::ofstream(dir + "/cpu.py") << script; }
  const auto cpu = run_shell("python3 cpu.py", dir);
  EXPECT_EQ(cpu.exit_code, 0) << cpu.out << cpu.err;
  EXPECT_NE(cpu.out.find("verdict: cpu in bfloat16 computes this op within what honest bfloat16 rounding explains"),
            std::string::npos)
      << cpu.out;
  // The plant, in Python: the target side's last batch row 3.5% low.
  const std::string at = "\nname = str(DTYPE)";
  ASSERT_NE(script.find(at), std::string::npos);
  script.insert(script.find(at),
                "\n_honest_run = run\n\n\ndef run(device, dtype, round_to=None):\n"
                "    y = _honest_run(device, dtype, round_to)\n"
                "    if dtype == DTYPE and round_to is None:\n"
                "        y[-1] *= 0.965\n"
                "    return y\n\n");
  { std::ofstream(dir + "/planted.py") << script; }
  const auto planted = run_shell("python3 planted.py", dir);
  EXPECT_EQ(planted.exit_code, 1) << planted.out << planted.err;
  EXPECT_NE(planted.out.find("verdict: cpu in bfloat16 is the wrong side of this op: "), std::string::npos)
      << planted.out;
}

}  // namespace

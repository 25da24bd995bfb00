// `mpscheck --model` with graphs traced in one dtype (issue 29 items 1 and 2): a float32 trace that
// cannot compute in bfloat16 stops with exit code 5 and one line saying how to get a file that
// can; a bfloat16 trace given with --model-for runs on the target and is judged against the float32
// reference like any model, so a wrong one is a mismatch; files that are not one model, and
// inputs that do not match the model, exit 2 before anything runs; an error the model raises
// while running is the model's, in its case. Files from tests/fixtures/export_dtype_traced.py.
#include "harness.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

using namespace mpscheck::testing;
namespace fs = std::filesystem;

namespace {

int count_lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

class TracedInOneDtype : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fresh_dir("dtype-traced-models");
    const std::string script = std::string(MPSCHECK_SOURCE_DIR) + "/tests/fixtures/export_dtype_traced.py";
    const auto r = run_shell("python3 " + script + " .", dir_);
    log_ = r.out + r.err;
    exported_ = r.exit_code == 0;
  }
  void SetUp() override { ASSERT_TRUE(exported_) << "python3 with the torch wheel could not export: " << log_; }
  static std::string model(const std::string& file) { return dir_ + "/" + file; }
  static std::vector<std::string> masked(const std::string& target) {
    return {"--model", model("masked.pt"), "--input", "float32[4,16]", "--input", "bool[4,16]", "--target", target,
            "--quick", "--min-time",       "0",       "--json",        "r.json"};
  }

  static inline std::string dir_, log_;
  static inline bool exported_ = false;
};

}  // namespace

TEST_F(TracedInOneDtype, AFloat32TraceOnABfloat16TargetExitsFiveWithOneLineOfAdvice) {
  const std::string dir = fresh_dir("dtype-traced-float32");
  const auto r = run_mpscheck(masked("cpu:bfloat16"), dir);
  EXPECT_EQ(r.exit_code, 5) << r.out << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("masked.pt cannot compute in bfloat16: its graph keeps the float32 it was traced in"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("--model-for bfloat16=FILE"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/r.json")) << "nothing ran, so no report to write";
  // The same file on a float32 target is an ordinary pass.
  const auto f32 = run_mpscheck(masked("cpu"), dir);
  ASSERT_EQ(f32.exit_code, 0) << f32.out << f32.err;
  EXPECT_EQ(cases_by_id(read_json_file(dir + "/r.json")).at("model/torchscript/masked/infer")["status"], "pass");
}

TEST_F(TracedInOneDtype, ABfloat16TraceRunsOnTheTargetAndIsJudgedAgainstFloat32) {
  for (const std::string target : {"cpu:bfloat16", "sim:bfloat16"}) {
    SCOPED_TRACE(target);
    const std::string dir = fresh_dir("dtype-traced-bf16-" + target.substr(0, 3));
    auto args = masked(target);
    args.insert(args.end(), {"--model-for", "bfloat16=" + model("masked.bfloat16.pt"), "--model-for",
                             "float64=" + model("masked.float64.pt")});
    if (target.rfind("sim", 0) == 0) args.insert(args.end(), {"--plugin-dir", test_plugins_dir() + "/sim"});
    const auto r = run_mpscheck(args, dir);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto c = cases_by_id(read_json_file(dir + "/r.json")).at("model/torchscript/masked/infer");
    EXPECT_EQ(c["status"], "pass") << c.dump();
    EXPECT_EQ(c["dtype"], "bfloat16");
    EXPECT_EQ(c["outputs"][0]["target_dtype"], "bfloat16");
    EXPECT_GT(c["outputs"][0]["max_abs"].get<double>(), 0.0) << "computed in bfloat16, so not bit-equal to float32";
  }
}

// A float32 trace that runs with bfloat16 weights but keeps part of its work in float32 is judged
// as it computes, and its case's warnings say which part was not bfloat16.
TEST_F(TracedInOneDtype, AFloat32TraceThatRunsInBfloat16SaysWhatStayedFloat32) {
  const std::string dir = fresh_dir("dtype-traced-upcast");
  const auto r = run_mpscheck({"--model", model("upcast.pt"), "--input", "float32[4,16]", "--target", "cpu:bfloat16",
                               "--quick", "--min-time", "0", "--json", "r.json"},
                              dir);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.out << r.err;
  const auto c = cases_by_id(read_json_file(dir + "/r.json")).at("model/torchscript/upcast/infer");
  bool said = false;
  for (const auto& w : c["warnings"])
    said = said || w.get<std::string>().find(
                       "target: the graph fixes dtype float32 in 1 aten::to: that part computed "
                       "in float32, not in bfloat16") != std::string::npos;
  EXPECT_TRUE(said) << c.dump();
}

// The per-dtype file is a separate trace: if it computes something else, that is a finding named
// against float64, never a pass.
TEST_F(TracedInOneDtype, ABfloat16TraceThatComputesSomethingElseIsAMismatch) {
  const std::string dir = fresh_dir("dtype-traced-off");
  auto args = masked("cpu:bfloat16");
  args.insert(args.end(), {"--model-for", "bfloat16=" + model("masked_off.bfloat16.pt")});
  const auto r = run_mpscheck(args, dir);
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto c = cases_by_id(read_json_file(dir + "/r.json")).at("model/torchscript/masked/infer");
  EXPECT_EQ(c["status"], "mismatch") << c.dump();
  EXPECT_EQ(c["attribution"], "target");
}

TEST_F(TracedInOneDtype, FilesThatAreNotOneModelExitTwoNamingTheFile) {
  const std::string dir = fresh_dir("dtype-traced-other");
  auto args = masked("cpu:bfloat16");
  args.insert(args.end(), {"--model-for", "bfloat16=" + model("other.bfloat16.pt")});
  const auto r = run_mpscheck(args, dir);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("--model-for " + model("other.bfloat16.pt") + ": its 0.weight"), std::string::npos) << r.err;
  for (const std::string& bad : {"int8=" + model("masked.bfloat16.pt"), "bfloat16=" + model("missing.pt")}) {
    auto a = masked("cpu:bfloat16");
    a.insert(a.end(), {"--model-for", bad});
    const auto b = run_mpscheck(a, dir);
    EXPECT_EQ(b.exit_code, 2) << bad << ": " << b.err;
    EXPECT_EQ(count_lines(b.err), 1) << b.err;
    EXPECT_NE(b.err.find("--model-for"), std::string::npos) << b.err;
  }
}

// masked.pt records the inputs it was traced with: a dtype or a rank that does not match is
// refused before anything runs; the count is checked from forward's own arguments.
TEST_F(TracedInOneDtype, InputsOfTheWrongCountDtypeOrRankExitTwoBeforeRunning) {
  const std::string dir = fresh_dir("dtype-traced-inputs");
  const std::vector<std::pair<std::vector<std::string>, std::string>> wrong = {
      {{"float32[4,16]"}, "its forward(x, keep) takes 2 inputs, and --input gives 1"},
      {{"float32[4,16]", "bool[4,16]", "bool[4,16]"}, "takes 2 inputs, and --input gives 3"},
      {{"float32[4,16]", "int64[4,16]:0..2"}, "--input int64[4,16]:0..2 (dtype) does not match its argument keep"},
      {{"float32[64]", "bool[4,16]"}, "--input float32[64] (rank) does not match its argument x"},
  };
  for (const auto& [inputs, says] : wrong) {
    std::vector<std::string> args = {"--model", model("masked.pt"), "--target", "cpu", "--quick"};
    for (const auto& i : inputs) args.insert(args.end(), {"--input", i});
    const auto r = run_mpscheck(args, dir);
    EXPECT_EQ(r.exit_code, 2) << says << ": " << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir + "/mpscheck-report/report.json")) << "nothing ran";
  }
}

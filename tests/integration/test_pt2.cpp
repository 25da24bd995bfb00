// .pt2 packages (torch.export + AOTInductor) through --model: models from tests/fixtures/pt2_models.py
// exported by scripts/mpscheck-export.py as a user would (a ResNet-18 transcribed from torchvision
// at width 16, a small transformer block whose forward torch.jit.script refuses, and a network with
// a reduced-precision branch holding a planted wrong element), then run with the command the helper
// printed. Compiling the packages takes most of its 3 minutes (AOTInductor runs g++), so ctest runs this
// file as its own entry, integration_pt2, labelled pt2. Needs only the pip wheel's python3 torch.
#include "harness.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>

using namespace mpscheck::testing;

namespace {

struct Export {
  std::string name, target, examples, extra;
};

const std::vector<Export>& exports() {
  static const std::vector<Export> e = {
      {"resnet18", "'pt2_models:resnet18(width=16, num_classes=10)'", "--example 'randn(1,3,64,64)'", ""},
      {"transformer", "pt2_models:TinyTransformer", "--example 'randint(0,1000,(2,16))'", ""},
      {"planted_reduced", "'pt2_models:Planted(plant=\"reduced\")'", "--example 'randn(4,32)'", "--no-float64"},
      {"planted_compiled", "'pt2_models:Planted(plant=\"compiled\")'", "--example 'randn(4,32)'",
       "--no-float64 --dtypes none"},
  };
  return e;
}

std::vector<std::string> words_of(const std::string& command) {
  std::istringstream in(command);
  std::vector<std::string> w;
  for (std::string s; in >> s;) {
    if (s.size() >= 2 && s.front() == '\'' && s.back() == '\'') s = s.substr(1, s.size() - 2);  // shell quoting
    w.push_back(s);
  }
  return w;
}

class Pt2 : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fresh_dir("pt2-models");
    if (run_shell("python3 -c 'import torch._inductor'", dir_).exit_code != 0) return;
    available_ = true;
    run_shell(std::string("cp ") + MPSCHECK_SOURCE_DIR + "/tests/fixtures/pt2_models.py .", dir_);
    for (const auto& e : exports()) {
      const auto start = std::chrono::steady_clock::now();
      const auto r = run_shell(std::string("python3 ") + MPSCHECK_SOURCE_DIR + "/scripts/mpscheck-export.py " +
                                   e.target + " " + e.examples + " --out out --name " + e.name + " " + e.extra,
                               dir_);
      seconds_[e.name] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      log_[e.name] = r.out + r.err;
      command_[e.name] = r.exit_code == 0 ? words_of(r.out) : std::vector<std::string>{};
    }
  }

  void SetUp() override {
    if (!available_)
      FAIL() << "python3 has no torch with torch._inductor (scripts/install-deps.sh installs the pip wheel; a missing "
                "test tool fails rather than skipping)";
  }

  // The printed command's arguments (without "mpscheck"), run where the files were exported.
  static std::vector<std::string> printed(const std::string& name) {
    const auto& c = command_[name];
    EXPECT_GE(c.size(), 3u) << log_[name];
    if (c.size() < 3) return {};
    EXPECT_EQ(c[0], "mpscheck");
    return std::vector<std::string>(c.begin() + 1, c.end());
  }

  // Runs mpscheck with `args` plus reports; returns the case (null when there is no report).
  static nlohmann::json run(const std::string& tag, std::vector<std::string> args, int* exit_code = nullptr,
                            std::string* output = nullptr) {
    const std::string d = fresh_dir("pt2-run-" + tag);
    args.insert(args.end(), {"--quick", "--min-time", "0", "--report-dir", d + "/report", "--json", d + "/r.json"});
    const auto r = run_mpscheck(args, dir_);
    if (exit_code) *exit_code = r.exit_code;
    if (output) *output = r.out + r.err;
    std::ifstream f(d + "/r.json");
    if (!f) return nullptr;
    const auto cases = read_json_file(d + "/r.json")["cases"];
    return cases.empty() ? nlohmann::json() : cases[0];
  }

  static inline std::string dir_;
  static inline bool available_ = false;
  static inline std::map<std::string, std::string> log_;
  static inline std::map<std::string, double> seconds_;
  static inline std::map<std::string, std::vector<std::string>> command_;
};

}  // namespace

TEST_F(Pt2, HelperExportsEveryModelAndPrintsItsCommand) {
  for (const auto& e : exports()) {
    SCOPED_TRACE(e.name);
    RecordProperty(e.name + "_export_seconds", std::to_string(seconds_[e.name]));
    std::cerr << e.name << ": exported in " << seconds_[e.name] << " s\n";
    const auto args = printed(e.name);
    ASSERT_FALSE(args.empty()) << log_[e.name];
    EXPECT_EQ(args[0], "--model");
    EXPECT_EQ(args[1], "out/" + e.name + ".pt2");
    EXPECT_NE(std::find(args.begin(), args.end(), "--eager"), args.end()) << log_[e.name];
    EXPECT_NE(std::find(args.begin(), args.end(), "--input"), args.end()) << log_[e.name];
  }
  // torch.jit.script refuses forward(self, tokens, mask=None, **kwargs); the helper traces it instead.
  EXPECT_NE(log_["transformer"].find("torch.jit.script refused"), std::string::npos) << log_["transformer"];
}

TEST_F(Pt2, PrintedCommandRunsAsPrinted) {
  // No --target: auto, which is cpu:bfloat16 on a machine with no accelerator.
  for (const std::string name : {"resnet18", "transformer"}) {
    SCOPED_TRACE(name);
    int code = -1;
    std::string out;
    const auto c = run("printed-" + name, printed(name), &code, &out);
    ASSERT_EQ(code, 0) << out;
    EXPECT_EQ(c["id"], "model/pt2/" + name + "/infer");
    EXPECT_EQ(c["status"], "pass") << c.dump();
  }
}

TEST_F(Pt2, RealNetworksPassOnCpuAndBfloat16) {
  for (const std::string name : {"resnet18", "transformer"}) {
    for (const std::string target : {"cpu", "cpu:bfloat16"}) {
      SCOPED_TRACE(name + " on " + target);
      auto args = printed(name);
      args.insert(args.end(), {"--target", target});
      int code = -1;
      std::string out;
      const auto c = run(name + "-" + target.substr(target.size() - 3), args, &code, &out);
      ASSERT_FALSE(c.is_null()) << out;
      RecordProperty(name + "_" + target, c["status"].get<std::string>());
      EXPECT_EQ(c["status"], "pass") << c.dump();
      EXPECT_EQ(c["dtype"], target == "cpu" ? "float32" : "bfloat16");
      for (const auto& o : c["outputs"]) EXPECT_EQ(o["target_dtype"], c["dtype"]) << o.dump();
    }
  }
  // The transformer's dict output is named by its keys, on the eager and the compiled side alike.
  auto args = printed("transformer");
  args.insert(args.end(), {"--target", "cpu"});
  std::set<std::string> names;
  const auto c = run("transformer-names", args);
  for (const auto& o : c["outputs"]) names.insert(o["name"].get<std::string>());
  EXPECT_EQ(names, (std::set<std::string>{"out.logits", "out.hidden"}));
}

TEST_F(Pt2, PlantedWrongElementInTheReducedPrecisionBranchIsAMismatch) {
  auto args = printed("planted_reduced");
  ASSERT_FALSE(args.empty());
  auto bf16 = args;
  bf16.insert(bf16.end(), {"--target", "cpu:bfloat16"});
  const auto c = run("planted-bf16", bf16);
  ASSERT_FALSE(c.is_null());
  EXPECT_EQ(c["status"], "mismatch") << c.dump();
  EXPECT_EQ(c["attribution"], "target") << c.dump();
  EXPECT_NE(c["message"].get<std::string>().find("first at [1, 5]"), std::string::npos) << c.dump();
  // The float32 path has no plant: the same package passes on cpu.
  auto cpu = args;
  cpu.insert(cpu.end(), {"--target", "cpu"});
  EXPECT_EQ(run("planted-cpu", cpu)["status"], "pass");
}

TEST_F(Pt2, EagerAgainstCompiledFindsAnErrorOnlyTheCompiledCodeHas) {
  // A 1% error in one element that only the exported graph holds, as an inductor codegen error
  // would: the eager TorchScript reference and its float64 gold put it on the compiled side.
  auto args = printed("planted_compiled");
  ASSERT_FALSE(args.empty());
  args.insert(args.end(), {"--target", "cpu"});
  const auto c = run("compiled-cpu", args);
  ASSERT_FALSE(c.is_null());
  EXPECT_EQ(c["status"], "mismatch") << c.dump();
  EXPECT_EQ(c["attribution"], "target") << c.dump();
  EXPECT_NE(c["message"].get<std::string>().find("first at [2, 7]"), std::string::npos) << c.dump();
}

TEST_F(Pt2, PackageAloneReadsItsInputsAndJudgesAgainstItsFloat64Model) {
  // No --input (the package records them) and no --eager: the package's cpu_float32 model is the
  // reference and its cpu_float64 model the gold.
  int code = -1;
  std::string out;
  const auto c = run("alone", {"--model", "out/resnet18.pt2", "--target", "cpu:bfloat16"}, &code, &out);
  ASSERT_EQ(code, 0) << out;
  EXPECT_EQ(c["status"], "pass") << c.dump();
  EXPECT_EQ(c["outputs"][0]["shape"], nlohmann::json::array({1, 10})) << c.dump();
  // Without a float64 model or an eager model there is no gold: the message says what the verdict rests on.
  const auto p = run("alone-planted", {"--model", "out/planted_reduced.pt2", "--target", "cpu:bfloat16"});
  EXPECT_EQ(p["status"], "mismatch") << p.dump();
  EXPECT_NE(p["message"].get<std::string>().find("the verdict rests on the plain tolerance"), std::string::npos)
      << p.dump();
}

TEST_F(Pt2, BadPackagesStopTheRunWithOneLineAndExitCode2) {
  ASSERT_EQ(
      run_shell("head -c 3000 out/resnet18.pt2 > truncated.pt2 && cp out/resnet18.pt torchscript.pt2", dir_).exit_code,
      0);
  // Another archive version, and a model compiled by another torch release (its recorded version).
  const std::string edit = R"PY(
import json, zipfile
def rewrite(dst, edit):
    with zipfile.ZipFile("out/planted_compiled.pt2") as zi, zipfile.ZipFile(dst, "w") as zo:
        for info in zi.infolist():
            zo.writestr(info, edit(info.filename, zi.read(info.filename)))
rewrite("version1.pt2", lambda n, d: b"1" if n.endswith("/archive_version") else d)
def older(n, d):
    if not n.endswith("_metadata.json"):
        return d
    j = json.loads(d)
    j["mpscheck.torch_version"] = "2.12.0"
    return json.dumps(j).encode()
rewrite("torch212.pt2", older)
)PY";
  { std::ofstream(dir_ + "/edit.py") << edit; }
  ASSERT_EQ(run_shell("python3 edit.py", dir_).exit_code, 0);
  const std::string eager = "out/planted_compiled.pt";
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"--model", "truncated.pt2"}, "is not a readable .pt2 package"},
      {{"--model", "torchscript.pt2"}, "it is TorchScript, name it FILE.pt"},
      {{"--model", "missing.pt2"}, "no such file"},
      {{"--model", "version1.pt2", "--eager", eager, "--target", "cpu"}, "is a .pt2 archive of version 1"},
      {{"--model", "torch212.pt2", "--eager", eager, "--target", "cpu"}, "was compiled by torch 2.12.0"},
      {{"--model", "out/planted_compiled.pt2", "--target", "cpu:bfloat16"},
       "holds no model compiled for cpu in bfloat16"},
      {{"--model", "out/resnet18.pt2", "--target", "sim", "--plugin-dir", test_plugins_dir() + "/sim"},
       "holds no model compiled for sim in float32"},
      {{"--model", "out/resnet18.pt2", "--target", "cpu"}, "would compare the package's cpu_float32 model with itself"},
      {{"--model", "out/resnet18.pt2", "--input", "float32[1,3,32,32]", "--target", "cpu:bfloat16"},
       "does not match the inputs its model cpu_bfloat16 was compiled for (float32[1,3,64,64])"},
      {{"--model", "out/resnet18.pt2", "--train"}, "compiled for inference only"},
      {{"--model", "out/resnet18.pt", "--eager", "out/resnet18.pt", "--input", "float32[1,3,64,64]"},
       "--eager FILE.pt goes with a .pt2 package"},
  };
  for (const auto& [args, expected] : bad) {
    SCOPED_TRACE(args[1]);
    auto a = args;
    a.insert(a.end(), {"--quick", "--report-dir", dir_ + "/bad-report"});
    const auto r = run_mpscheck(a, dir_);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.out.find("pass"), std::string::npos) << r.out;
  }
}

TEST_F(Pt2, APackageFromAotiCompileAndPackageIsItsDevicesFloat32Model) {
  // torch._inductor.aoti_compile_and_package writes one model named "model" and records no inputs.
  const std::string compile = R"PY(
import torch, pt2_models
torch.manual_seed(0)
m = pt2_models.Planted().eval()
ep = torch.export.export(m, (torch.randn(4, 32),))
torch._inductor.aoti_compile_and_package(ep, package_path="plain.pt2")
)PY";
  { std::ofstream(dir_ + "/plain.py") << compile; }
  const auto made = run_shell("python3 plain.py", dir_);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  // The same weights as the helper's planted_compiled.pt (same class, same seed); its plant only
  // acts while exporting, which this module's plant="none" never does.
  const auto r =
      run_mpscheck({"--model", "plain.pt2", "--eager", "out/planted_compiled.pt", "--target", "cpu", "--quick"}, dir_);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("records no inputs; give them with --input"), std::string::npos) << r.err;
  int code = -1;
  std::string out;
  const auto c =
      run("plain",
          {"--model", "plain.pt2", "--input", "float32[4,32]", "--eager", "out/planted_compiled.pt", "--target", "cpu"},
          &code, &out);
  ASSERT_EQ(code, 0) << out;
  EXPECT_EQ(c["status"], "pass") << c.dump();
  // Only float32 on the CPU: a bfloat16 target has no model to run.
  const auto bf16 =
      run_mpscheck({"--model", "plain.pt2", "--input", "float32[4,32]", "--target", "cpu:bfloat16", "--quick"}, dir_);
  EXPECT_EQ(bf16.exit_code, 2);
  EXPECT_NE(bf16.err.find("holds no model compiled for cpu in bfloat16"), std::string::npos) << bf16.err;
}

TEST_F(Pt2, HelperRefusesWhatItCannotExportWithOneLine) {
  const std::string helper = std::string("python3 ") + MPSCHECK_SOURCE_DIR + "/scripts/mpscheck-export.py ";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"pt2_models:Planted --example 'rand(4,32)' --out refused", "is not randn(d0,d1,...)"},
      {"no_such_module:Net --example 'randn(4,32)' --out refused", "cannot import no_such_module"},
      {"pt2_models:BasicBlock --example 'randn(4,32)' --out refused", "cannot build pt2_models:BasicBlock"},
      {"pt2_models:Planted --example 'randn(4,31)' --out refused", "the model raised on the --example inputs"},
      {"pt2_models:Planted --example 'int64[4,32]' --out refused", "give integers a range"},
  };
  for (const auto& [args, expected] : bad) {
    SCOPED_TRACE(args);
    const auto r = run_shell(helper + args, dir_);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_EQ(r.err.rfind("mpscheck-export: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;  // no command printed
  }
}

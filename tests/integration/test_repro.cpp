// The Python reproducer of an op case rebuilds exactly the inputs mpscheck used: run under the
// python3 whose torch is the LibTorch mpscheck was built against (scripts/install-deps.sh installs
// both from one wheel), its CPU float32 results equal mpscheck's own reference outputs.
#include "harness.hpp"

#include "core/layer_repro.hpp"
#include "core/plugin_host.hpp"
#include "core/registry.hpp"

#include <gtest/gtest.h>
#include <torch/version.h>

#include <filesystem>
#include <map>
#include <fstream>
#include <set>

using namespace mpscheck;
using namespace mpscheck::testing;
namespace fs = std::filesystem;

namespace {

// The python3 on PATH, when its torch is the version mpscheck was built against; else why not.
std::string python_with_matching_torch(std::string& why) {
  const auto r =
      run_shell("python3 -c 'import torch; print(torch.__version__.split(\"+\")[0])'", fresh_dir("python-probe"));
  const std::string version = r.out.substr(0, r.out.find_first_of("\r\n"));
  if (r.exit_code == 0 && version == TORCH_VERSION) return "python3";
  why = r.exit_code != 0 ? "python3 cannot import torch (" + r.err.substr(0, 200) + ")"
                         : "python3's torch is " + version + ", mpscheck was built against " + TORCH_VERSION;
  return {};
}

// One forward and one backward case from every op family (sorted ids: deterministic picks).
std::vector<const Workload*> sample(const Registry& registry) {
  Selection s;
  s.ops = true;
  s.skip_large = true;
  std::map<std::string, std::set<std::string>> seen;
  std::vector<const Workload*> out;
  for (const auto& w : registry.select(s)) {
    const std::string id = w.workload->id();
    // float32 cases: their script runs the target side in float32 too, on any CPU PyTorch.
    // Random ops draw from the global generator on purpose: compared by statistics, not values.
    if (id.rfind("op/faults/", 0) == 0 || id.find("/f32/") == std::string::npos || w.workload->is_random()) continue;
    const std::string family = id.substr(3, id.find('/', 3) - 3);
    const std::string mode = id.substr(id.rfind('/') + 1);
    if (seen[family].insert(mode).second) out.push_back(w.workload);
  }
  return out;
}

}  // namespace

TEST(Reproducer, PythonRebuildsTheSameInputsForEveryFamily) {
  std::string why;
  const std::string python = python_with_matching_torch(why);
  ASSERT_FALSE(python.empty()) << why << ": run scripts/install-deps.sh (pip install torch==" << TORCH_VERSION << ")";
  PluginHost host;
  host.load_directory(std::string(MPSCHECK_BUILD_DIR) + "/plugins");
  const Registry registry(host.workloads());
  const auto cases = sample(registry);
  ASSERT_GE(cases.size(), 20u);
  const std::string dir = fresh_dir("repro-python");
  int checked = 0;
  for (const Workload* w : cases) {
    SCOPED_TRACE(w->id());
    ReproTarget target;
    target.seed = 3;
    const std::string script = w->reproducer(target);
    ASSERT_FALSE(script.empty());
    { std::ofstream(dir + "/case.py") << script; }
    const auto r = run_shell("MPSCHECK_REPRO_JSON=values.json " + python + " case.py", dir);
    ASSERT_EQ(r.exit_code, 0) << r.err.substr(0, 2000);
    const auto values = read_json_file(dir + "/values.json");
    mpscheck::Setup setup;
    setup.seed = 3;
    const Outputs outs = w->instantiate(setup, Placement{})->run();
    ASSERT_EQ(values.size(), outs.size());
    for (const auto& o : outs) {
      ASSERT_TRUE(values.contains(o.name)) << o.name;
      const at::Tensor mine = o.value.detach().flatten().to(at::kDouble);
      const auto& theirs = values[o.name];
      const int64_t n = std::min<int64_t>(mine.numel(), 16);
      ASSERT_EQ(static_cast<int64_t>(theirs.size()), n) << o.name;
      for (int64_t i = 0; i < n; ++i) {
        const double a = mine[i].item<double>();
        if (theirs[i].is_null()) {  // non-finite on the Python side
          EXPECT_FALSE(std::isfinite(a)) << o.name << "[" << i << "]";
          continue;
        }
        const double b = theirs[i].get<double>();
        EXPECT_NEAR(a, b, 1e-5 * (1 + std::abs(a))) << o.name << "[" << i << "]";
      }
    }
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

namespace {

// The k-th output named `name` of a trace (k 1-based).
at::Tensor call_of(const Outputs& trace, const std::string& name, int call) {
  for (const auto& o : trace)
    if (o.name == name && --call == 0) return o.value;
  return {};
}

}  // namespace

// A localised model finding becomes an op-level reproducer: `repro` with no report runs the case,
// saves the diverging layer's input and parameters where torch.load reads them, and its bug report
// carries a script that runs that layer's op alone. The script's float32 side must be the very
// layer output mpscheck traced, and it says which side is wrong against float64. The case is the
// faults plugin's network with a biased fc2 on its target side: a finding on every CPU. (DCGAN's
// honest bfloat16 training was one on some CPUs and a pass on an AVX2-only AMD EPYC, where its
// bfloat16 kernels land as close to float64 as float32 does.)
TEST(LayerReproducer, APlantedLayerOnBfloat16GivesTheDivergingLayersOpInPython) {
  std::string why;
  const std::string python = python_with_matching_torch(why);
  ASSERT_FALSE(python.empty()) << why << ": run scripts/install-deps.sh (pip install torch==" << TORCH_VERSION << ")";
  const std::string dir = fresh_dir("layer-repro");
  const std::string id = "model/faults/planted_fc2/infer";
  const auto repro = run_mpscheck({"repro", id, "--target", "cpu:bfloat16", "--quick", "--report-dir", "out",
                                   "--plugin-dir", test_plugins_dir(), "--no-default-plugins"},
                                  dir);
  ASSERT_EQ(repro.exit_code, 0) << repro.err;
  const std::string& issue = repro.out;
  EXPECT_NE(issue.find("gives **mismatch** on cpu:bfloat16"), std::string::npos) << issue.substr(0, 2000);
  EXPECT_NE(issue.find("This op-level reproducer runs that layer's op alone"), std::string::npos)
      << issue.substr(0, 3000);
  const auto at = issue.find("LAYER = \"");
  ASSERT_NE(at, std::string::npos) << issue.substr(0, 3000);
  const std::string layer = issue.substr(at + 9, issue.find('"', at + 9) - at - 9);
  EXPECT_NE(issue.find("The model diverges first at layer `" + layer + "`"), std::string::npos);
  ASSERT_TRUE(fs::exists(dir + "/out/repro/model_faults_planted_fc2_infer.layer.pt")) << repro.err;
  EXPECT_EQ(read_text_file(dir + "/out/repro/model_faults_planted_fc2_infer.layer.py"),
            issue.substr(issue.find("```python\n") + 10,
                         issue.find("```", issue.find("```python\n") + 10) - issue.find("```python\n") - 10));

  const auto py = run_shell(
      "MPSCHECK_REPRO_JSON=figures.json " + python + " out/repro/model_faults_planted_fc2_infer.layer.py", dir);
  ASSERT_TRUE(py.exit_code == 0 || py.exit_code == 1) << py.err.substr(0, 2000);
  EXPECT_NE(py.out.find("layer " + layer), std::string::npos) << py.out;
  EXPECT_NE(py.out.find("verdict: cpu in bfloat16 "), std::string::npos) << py.out;
  const auto figures = read_json_file(dir + "/figures.json");
  EXPECT_EQ(figures.at("layer"), layer);
  EXPECT_EQ(py.exit_code == 1, !figures.at("wrong").empty());
  // float32 is close to float64, the bfloat16 target much less so.
  const double f32 = figures.at("figures").at("cpu float32").at("rmse").get<double>();
  const double bf16 = figures.at("figures").at("cpu bfloat16").at("rmse").get<double>();
  EXPECT_LT(f32 * 100, bf16) << py.out;

  // The script's float32 side is the layer output mpscheck's own reference traced, value for value.
  const std::string call_text = issue.substr(issue.find("CALL = \"") + 8, 20);
  const int call = call_text.rfind(" (call ", 0) == 0 ? std::stoi(call_text.substr(7)) : 1;
  PluginHost host;
  host.load_directory(test_plugins_dir());
  const Registry registry(host.workloads());
  const RegisteredWorkload* w = registry.find(id);
  ASSERT_NE(w, nullptr);
  mpscheck::Setup setup;
  setup.quick = true;
  const at::Tensor traced = call_of(w->workload->instantiate(setup, Placement{})->trace_layers(), layer, call);
  ASSERT_TRUE(traced.defined()) << layer << " call " << call;
  const at::Tensor mine = traced.flatten().to(at::kDouble);
  const auto& theirs = figures.at("float32");
  ASSERT_EQ(static_cast<int64_t>(theirs.size()), std::min<int64_t>(mine.numel(), 16));
  for (size_t i = 0; i < theirs.size(); ++i)
    EXPECT_NEAR(mine[i].item<double>(), theirs[i].get<double>(), 1e-5 * (1 + std::abs(mine[i].item<double>()))) << i;
}

// The script's verdict: a target that computes the op 3% too large is the wrong side (exit 1); one
// that computes it in honest bfloat16 is not (exit 0), and the script says the error came in with
// the layer's input.
TEST(LayerReproducer, ScriptBlamesTheTargetOnlyWhenTheOpItselfIsWrong) {
  std::string why;
  const std::string python = python_with_matching_torch(why);
  ASSERT_FALSE(python.empty()) << why;
  CaseResult finding;
  finding.id = "model/planted/infer";
  finding.first_diverging_layer = "fc";
  ReproTarget target;
  target.dtype = "bfloat16";
  at::manual_seed(0);
  LayerCall call;
  call.tensors = {{"x", at::randn({64, 32})}, {"weight", at::randn({16, 32})}};
  const std::string dir = fresh_dir("layer-repro-verdict");
  struct Planted {
    const char* python;
    int exit_code;
    const char* says;
  };
  for (const Planted& p :
       {Planted{"torch.nn.functional.linear(x, weight) * (1.03 if x.dtype == torch.bfloat16 else 1.0)", 1,
                "is the wrong side of this op: "},
        Planted{"torch.nn.functional.linear(x, weight)", 0, "does not reproduce the finding"}}) {
    SCOPED_TRACE(p.python);
    call.python = p.python;
    const LayerScript files = write_layer_files(finding, call, target, dir);
    const auto py = run_shell(python + " " + files.script_path, dir);
    EXPECT_EQ(py.exit_code, p.exit_code) << py.out << py.err.substr(0, 2000);
    EXPECT_NE(py.out.find(p.says), std::string::npos) << py.out;
    if (p.exit_code == 1) {
      EXPECT_NE(py.out.find("% too large on average"), std::string::npos) << py.out;
    }
  }
}

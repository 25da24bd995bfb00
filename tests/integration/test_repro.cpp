// The Python reproducer of an op case rebuilds exactly the inputs mpscheck used: run under the
// python3 whose torch is the LibTorch mpscheck was built against (scripts/install-deps.sh installs
// both from one wheel), its CPU float32 results equal mpscheck's own reference outputs.
#include "harness.hpp"

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

namespace {

// The python3 on PATH, when its torch is the version mpscheck was built against; else why not.
std::string python_with_matching_torch(std::string& why) {
  const auto r = run_shell("python3 -c 'import torch; print(torch.__version__.split(\"+\")[0])'", fresh_dir("python-probe"));
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
    {
      std::ofstream(dir + "/case.py") << script;
    }
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

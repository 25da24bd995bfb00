// The test-only sim device (plugins/sim) as LibTorch sees it: a PrivateUse1 backend named "sim"
// that mpscheck's target code finds, copies that round-trip, an allocator with statistics and a
// size limit, a CPU fallback that autograd runs through, memory the host cannot read by accident, and
// the fused RNN cells LibTorch calls on any device but the CPU.
#include "core/device_memory.hpp"
#include "core/plugin_host.hpp"
#include "core/target.hpp"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>

#include <csignal>
#include <cstdint>
#include <string>
#include <vector>
#include <dlfcn.h>

using namespace mpscheck;

namespace {

const std::string kSimDir = std::string(MPSCHECK_TEST_PLUGINS_DIR) + "/sim";

void load_sim() {
  static PluginHost* host = [] {
    auto* h = new PluginHost();  // never unloaded, like every LibTorch plugin
    h->load_directory(kSimDir);
    return h;
  }();
  (void)host;
}

template <class Fn>
Fn sim_symbol(const char* name) {
  void* lib = ::dlopen((kSimDir + "/mpscheck_sim.so").c_str(), RTLD_NOW | RTLD_NOLOAD);
  return lib ? reinterpret_cast<Fn>(::dlsym(lib, name)) : nullptr;
}

struct Stats {
  std::size_t current, peak, count;
};
Stats stats() {
  std::size_t s[3] = {0, 0, 0};
  auto fn = sim_symbol<void (*)(std::size_t*)>("mpscheck_sim_memory_stats");
  if (fn) fn(s);
  return {s[0], s[1], s[2]};
}

// LibTorch's autograd engine sizes its per-device queues once, at the first backward of the
// process, from the device types registered then: a sim registered after another test's CPU
// backward has no queue, and a backward on it fails the engine's internal assert. mpscheck loads
// its plugins before any case runs; a run of this binary that includes these tests loads the sim
// before its first test, and one that does not leaves every other test as it was.
class LoadSimFirst : public ::testing::Environment {
 public:
  void SetUp() override {
    const ::testing::UnitTest& all = *::testing::UnitTest::GetInstance();
    for (int i = 0; i < all.total_test_suite_count(); ++i) {
      const ::testing::TestSuite& suite = *all.GetTestSuite(i);
      if (std::string(suite.name()) == "SimDevice" && suite.should_run()) return load_sim();
    }
  }
};
[[maybe_unused]] ::testing::Environment* const kLoadSimFirst = ::testing::AddGlobalTestEnvironment(new LoadSimFirst);

class SimDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    load_sim();
    ASSERT_NE(sim_symbol<void (*)(std::size_t*)>("mpscheck_sim_memory_stats"), nullptr);
  }
  const c10::Device sim{c10::DeviceType::PrivateUse1, 0};
};

}  // namespace

TEST_F(SimDevice, TargetCodeFindsItAfterThePluginLoads) {
  const auto devices = available_devices();
  EXPECT_NE(std::find(devices.begin(), devices.end(), "sim"), devices.end());
  EXPECT_EQ(resolve_target(parse_target("sim:float16")).spec.str(), "sim:float16");
  EXPECT_EQ(to_device(parse_target("sim")), c10::Device(c10::DeviceType::PrivateUse1, -1));
  EXPECT_THROW(resolve_target(parse_target("tpu")), TargetUnavailable);
  EXPECT_THROW(parse_target("Sim"), BadTarget);
  EXPECT_NO_THROW(synchronize(sim));
}

TEST_F(SimDevice, CopiesRoundTripWithStridesAndDtypes) {
  const at::Tensor host = at::randn({6, 5});
  const at::Tensor on_sim = host.to(sim);
  EXPECT_TRUE(on_sim.is_privateuseone());
  EXPECT_TRUE(at::equal(on_sim.cpu(), host));
  EXPECT_TRUE(at::equal(on_sim.t().contiguous().cpu(), host.t().contiguous()));
  EXPECT_TRUE(at::equal(on_sim.narrow(1, 1, 3).cpu(), host.narrow(1, 1, 3)));
  EXPECT_TRUE(at::equal(host.to(sim, at::kHalf).cpu(), host.to(at::kHalf)));
  EXPECT_FLOAT_EQ(on_sim[2][3].item<float>(), host[2][3].item<float>());
}

TEST_F(SimDevice, UnimplementedOpsRunOnTheCpuKernelsAndAutogradWorks) {
  const at::Tensor a = at::randn({4, 3}), b = at::randn({3, 2});
  EXPECT_TRUE(at::allclose(at::mm(a.to(sim), b.to(sim)).cpu(), at::mm(a, b)));
  const at::Tensor x = a.to(sim).requires_grad_(true);
  at::relu(x * 2).sum().backward();
  EXPECT_TRUE(x.grad().is_privateuseone());
  EXPECT_TRUE(at::equal(x.grad().cpu(), (a > 0).to(at::kFloat) * 2));
}

TEST_F(SimDevice, AllocatorKeepsStatisticsAndFailsPastItsLimit) {
  const Stats before = stats();
  {
    const at::Tensor t = at::empty({1024}, at::TensorOptions().device(sim));
    const Stats during = stats();
    EXPECT_EQ(during.current, before.current + 4096);
    EXPECT_EQ(during.count, before.count + 1);
    EXPECT_GE(during.peak, during.current);
  }
  EXPECT_EQ(stats().current, before.current);
  auto set_limit = sim_symbol<void (*)(std::size_t)>("mpscheck_sim_set_memory_limit");
  ASSERT_NE(set_limit, nullptr);
  set_limit(stats().current + 1000);
  EXPECT_NO_THROW(at::empty({200}, at::TensorOptions().device(sim)));
  EXPECT_THROW(at::empty({300}, at::TensorOptions().device(sim)), c10::OutOfMemoryError);
  set_limit(SIZE_MAX);
}

// mpscheck reads the sim's memory as it reads MPS's and CUDA's, through its c10::DeviceAllocator:
// the peak since the watch began (a tensor freed before the end still counts), the pages it
// mapped, and the recommended maximum (the limit when one is set, else an 8 GiB device).
TEST_F(SimDevice, MemoryWatchReadsThePeakAndTheRecommendedMaximum) {
  constexpr std::int64_t kMiB = 1 << 20;
  {
    MemoryWatch watch(sim);
    { const at::Tensor t = at::empty({kMiB}, at::TensorOptions().device(sim)); }  // 4 MiB, freed
    const MemoryFigures m = watch.figures();
    EXPECT_EQ(m.peak_source, "counter");
    EXPECT_GE(m.peak_allocated, 4 * kMiB);
    EXPECT_LT(m.peak_allocated, 5 * kMiB);
    EXPECT_GE(m.driver_peak, 4 * kMiB);
    EXPECT_EQ(m.recommended_max, std::int64_t{8} << 30);
    EXPECT_GT(m.process_peak, 0);
  }
  auto set_limit = sim_symbol<void (*)(std::size_t)>("mpscheck_sim_set_memory_limit");
  ASSERT_NE(set_limit, nullptr);
  set_limit(64 * kMiB);
  {
    MemoryWatch watch(sim);  // the peak starts again from what is allocated now
    const at::Tensor t = at::empty({1024}, at::TensorOptions().device(sim));
    const MemoryFigures m = watch.figures();
    EXPECT_LT(m.peak_allocated, kMiB);
    EXPECT_GE(m.peak_allocated, 4096);
    EXPECT_EQ(m.recommended_max, 64 * kMiB);
  }
  set_limit(SIZE_MAX);
  EXPECT_EQ(device_memory(c10::Device(c10::kCPU)), nullptr);
}

// Sim memory is protected pages: host code that uses a device pointer without a copy faults at
// once instead of reading plausible numbers.
TEST_F(SimDevice, HostCodeThatSkipsTheCopyFaults) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const at::Tensor on_sim = at::ones({64}).to(sim);
  EXPECT_EXIT(
      {
        const at::Tensor wrongly_on_host = at::from_blob(on_sim.data_ptr(), {64}, at::kFloat);
        std::printf("%f\n", wrongly_on_host.sum().item<float>());
        std::exit(0);
      },
      ::testing::KilledBySignal(SIGSEGV), "");
  // Through a copy, the same memory reads fine.
  EXPECT_FLOAT_EQ(on_sim.cpu().sum().item<float>(), 64.0f);
}

// LibTorch runs LSTM and GRU cells on any non-CPU device through the fused kernels
// (_thnn_fused_*_cell), which the sim implements itself: they must agree with the CPU's cells,
// which are built from plain ops, in the outputs and in every gradient.
namespace {

struct CellCase {
  bool lstm, bias, grad_cy;
};

// Runs one cell step on `device` from leaves copied from the host tensors `leaves` (x, h, [c],
// w_ih, w_hh, [b_ih, b_hh]), backpropagates `grads` into its outputs, and returns the outputs
// and the leaves' gradients on the host.
std::vector<at::Tensor> run_cell(const CellCase& cell, const std::vector<at::Tensor>& leaves,
                                 const std::vector<at::Tensor>& grads, const c10::Device& device,
                                 std::string* grad_fn = nullptr) {
  std::vector<at::Tensor> in;
  for (const auto& t : leaves) in.push_back(t.to(device, t.scalar_type(), false, /*copy=*/true).requires_grad_(true));
  const size_t w = cell.lstm ? 3 : 2;
  const at::Tensor b_ih = cell.bias ? in[w + 2] : at::Tensor(), b_hh = cell.bias ? in[w + 3] : at::Tensor();
  std::vector<at::Tensor> out;
  if (cell.lstm) {
    auto [hy, cy] = at::lstm_cell(in[0], {in[1], in[2]}, in[w], in[w + 1], b_ih, b_hh);
    out = {hy, cy};
  } else {
    out = {at::gru_cell(in[0], in[1], in[w], in[w + 1], b_ih, b_hh)};
  }
  if (grad_fn && out[0].grad_fn()) *grad_fn = out[0].grad_fn()->name();
  std::vector<at::Tensor> roots = {out[0]}, seeds = {grads[0].to(device)};
  if (cell.lstm && cell.grad_cy) roots.push_back(out[1]), seeds.push_back(grads[1].to(device));
  torch::autograd::backward(roots, seeds);
  std::vector<at::Tensor> result;
  for (const auto& t : out) result.push_back(t.detach().cpu());
  for (const auto& t : in) result.push_back(t.grad().defined() ? t.grad().cpu() : at::Tensor());
  return result;
}

}  // namespace

TEST_F(SimDevice, FusedRnnCellsMatchTheCpuCellsForwardAndBackward) {
  constexpr int64_t batch = 5, in = 7, hidden = 6;
  for (const CellCase& cell : {CellCase{true, true, true}, CellCase{true, true, false}, CellCase{true, false, true},
                               CellCase{false, true, false}, CellCase{false, false, false}}) {
    SCOPED_TRACE(std::string(cell.lstm ? "lstm" : "gru") + (cell.bias ? " with biases" : " without biases") +
                 (cell.grad_cy ? ", gradient into cy" : ""));
    at::manual_seed(cell.lstm * 4 + cell.bias * 2 + cell.grad_cy);
    const int64_t gates = (cell.lstm ? 4 : 3) * hidden;
    std::vector<at::Tensor> leaves = {at::randn({batch, in}), at::randn({batch, hidden})};
    if (cell.lstm) leaves.push_back(at::randn({batch, hidden}));
    // Weights on nn.LSTM's scale, and inputs big enough that no gate is linear or saturated.
    leaves.push_back(at::randn({gates, in}) * 0.6);
    leaves.push_back(at::randn({gates, hidden}) * 0.6);
    if (cell.bias) leaves.push_back(at::randn({gates})), leaves.push_back(at::randn({gates}));
    const std::vector<at::Tensor> grads = {at::randn({batch, hidden}), at::randn({batch, hidden})};

    std::string fused;
    const auto cpu = run_cell(cell, leaves, grads, at::kCPU);
    const auto on_sim = run_cell(cell, leaves, grads, sim, &fused);
    // The sim ran the fused kernel (the CPU cell would not reach it).
    EXPECT_NE(fused.find(cell.lstm ? "FusedLstmCell" : "FusedGruCell"), std::string::npos) << fused;
    ASSERT_EQ(cpu.size(), on_sim.size());
    for (size_t k = 0; k < cpu.size(); ++k) {
      SCOPED_TRACE("result " + std::to_string(k));
      ASSERT_TRUE(cpu[k].defined());
      ASSERT_TRUE(on_sim[k].defined());
      ASSERT_EQ(cpu[k].sizes(), on_sim[k].sizes());
      // Not all zero: a gradient that never flowed would match a zero one.
      EXPECT_GT(cpu[k].abs().max().item<float>(), 1e-3);
      EXPECT_TRUE(at::allclose(on_sim[k], cpu[k], 1e-5, 1e-5))
          << "max abs error " << (on_sim[k] - cpu[k]).abs().max().item<float>();
    }
  }
}

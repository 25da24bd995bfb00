// The test-only sim device (plugins/sim) as LibTorch sees it: a PrivateUse1 backend named "sim"
// that mpscheck's target code finds, copies that round-trip, an allocator with statistics and a
// size limit, a CPU fallback that autograd runs through, and memory the host cannot read by accident.
#include "core/plugin_host.hpp"
#include "core/target.hpp"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <csignal>
#include <cstdint>
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

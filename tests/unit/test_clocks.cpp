// Honest clocks: what a timed iteration does and which reference times are kept. A backward op
// case draws its grad_output once per instance, timed training replays the steps a verdict
// checked, and a reference time from a busy round is never stored for --reuse-reference-times.
#include "checks/case_host.hpp"
#include "checks/timed_rounds.hpp"
#include "checks/timing.hpp"
#include "crowd_cores.hpp"

#include <mpscheck/model.hpp>
#include <mpscheck/op.hpp>

#include <ATen/record_function.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace mpscheck;

namespace {

// Random draws on this thread, counted through LibTorch's op observer (every aten op it dispatches).
std::atomic<int> g_draws{0};

std::unique_ptr<at::ObserverContext> count_draws(const at::RecordFunction& fn) {
  const char* name = fn.name();
  if (std::strcmp(name, "aten::randn") == 0) ++g_draws;  // (its normal_ inside is not counted again)
  return nullptr;
}

struct DrawCounter {
  at::CallbackHandle handle;
  DrawCounter() : handle(at::addThreadLocalCallback(at::RecordFunctionCallback(count_draws))) { g_draws = 0; }
  ~DrawCounter() { at::removeCallback(handle); }
  int draws() const { return g_draws.load(); }
};

const Workload& only_backward(Catalog& catalog) {
  for (const auto& w : catalog.workloads())
    if (w->id().ends_with("/backward")) return *w;
  throw std::logic_error("no backward case");
}

at::Tensor output(const Outputs& outs, const std::string& name) {
  for (const auto& o : outs)
    if (o.name == name) return o.value;
  return {};
}

}  // namespace

// The old backward step drew grad_output on the CPU and copied it to the device on every iteration:
// 30-47 us of a 95-150 us iteration. Now it is drawn at the first step and kept, and the gradient
// it gives is the same seeded one (the reference and the target must weigh outputs alike).
TEST(Clocks, BackwardDrawsGradOutputOncePerInstance) {
  for (const c10::ScalarType dtype : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
    Catalog catalog;
    op::Family fam(catalog, "fam");
    fam.dtypes({dtype});
    fam.op(
           "twice", {op::Arg::randn("x", {4, 6})}, [](const at::Tensor& x) { return x * 2; }, "x * 2")
        .add();
    mpscheck::Setup setup;
    setup.seed = 5;
    const auto instance =
        only_backward(catalog).instantiate(setup, Placement{c10::Device(c10::kCPU), dtype, Side::Target});
    const Outputs first = instance->run();
    at::Generator gen = at::detail::createCPUGenerator(setup.seed + 1);
    const at::Tensor expected = (at::randn({4, 6}, gen, at::kFloat).to(dtype) * 2);
    ASSERT_TRUE(output(first, "grad/x").defined());
    EXPECT_TRUE(at::equal(output(first, "grad/x"), expected)) << c10::toString(dtype);
    {
      DrawCounter counter;
      for (int i = 0; i < 5; ++i) instance->iterate();
      EXPECT_EQ(counter.draws(), 0) << c10::toString(dtype) << ": grad_output drawn again in timed iterations";
    }
    // The kept grad_output gives the same gradient again, not an accumulated one.
    EXPECT_TRUE(at::equal(output(instance->run(), "grad/x"), expected)) << c10::toString(dtype);
  }
}

// A fresh instance that is only timed (a confirmation round's) draws once too, at its first step,
// one grad_output for each of its outputs.
TEST(Clocks, AFreshTimedBackwardInstanceDrawsOnce) {
  Catalog catalog;
  op::Family fam(catalog, "fam");
  fam.dtypes({c10::kFloat});
  fam.op(
         "mul_add", {op::Arg::randn("a", {8, 3}), op::Arg::randn("b", {8, 3})},
         [](const op::Tensors& t) {
           return op::Tensors{t[0] * t[1], t[0] + t[1]};
         },
         "(a * b, a + b)")
      .add();
  const auto instance = only_backward(catalog).instantiate(mpscheck::Setup{}, Placement{});
  DrawCounter counter;
  for (int i = 0; i < 4; ++i) instance->iterate();
  EXPECT_EQ(counter.draws(), 2);  // one grad_output per output, at the first step
}

namespace {

// A small network with a batch-norm layer (buffers that training moves), whose forward records
// the state it starts from: the sum of the first weight and of the running mean.
std::vector<std::pair<double, double>>& seen_states() {
  static std::vector<std::pair<double, double>> seen;
  return seen;
}

model::ModelDef<torch::nn::Sequential> recording_def() {
  model::ModelDef<torch::nn::Sequential> def;
  def.name = "recording";
  def.build = [](model::Mode) {
    return torch::nn::Sequential(torch::nn::Linear(6, 4), torch::nn::BatchNorm1d(4), torch::nn::Linear(4, 1));
  };
  def.batch = [](model::Mode, at::Generator& gen) {
    return model::Batch{{at::randn({16, 6}, gen, at::kFloat)}, at::randn({16, 1}, gen, at::kFloat)};
  };
  def.forward = [](torch::nn::Sequential& net, const model::Batch& b) {
    const auto params = net->parameters();
    const auto buffers = net->buffers();
    seen_states().emplace_back(params.at(0).sum().item<double>(), buffers.at(0).sum().item<double>());
    return net->forward(b.inputs.at(0));
  };
  def.loss = [](const at::Tensor& out, const model::Batch& b) { return torch::mse_loss(out, b.target); };
  def.optimizer = model::optimizer<torch::optim::SGD>(torch::optim::SGDOptions(0.5).momentum(0.9));
  def.steps = 3;
  return def;
}

}  // namespace

// Timed training used to step on from wherever run() left the network, thousands of steps past the
// three a verdict compared. Every timed step must start from one of the checked states, in order.
TEST(Clocks, TimedTrainingReplaysTheCheckedSteps) {
  Catalog catalog;
  model::add_model(catalog, recording_def());
  const Workload* train = nullptr;
  for (const auto& w : catalog.workloads())
    if (w->id() == "model/recording/train") train = w.get();
  ASSERT_NE(train, nullptr);
  const auto instance = train->instantiate(mpscheck::Setup{}, Placement{});
  seen_states().clear();
  instance->run();
  const auto checked = seen_states();
  ASSERT_EQ(checked.size(), 3u);
  ASSERT_NE(checked[0], checked[1]);  // the steps move the weights and the statistics
  seen_states().clear();
  for (int i = 0; i < 10; ++i) instance->iterate();
  ASSERT_EQ(seen_states().size(), 10u);
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(seen_states()[i], checked[i % 3]) << "timed step " << i;
  // run() in between rebuilds the network at its last checked step; timing then starts over.
  instance->run();
  seen_states().clear();
  instance->iterate();
  ASSERT_EQ(seen_states().size(), 1u);
  EXPECT_EQ(seen_states()[0], checked[0]);
}

namespace {

// A case whose every iteration sleeps: its threads hold almost no core while timed, as an intra-op
// worker waiting at a barrier does, on a quiet machine.
class SleepingInstance final : public Instance {
 public:
  Outputs run() override { return {{"out", at::zeros({1})}}; }
  void iterate() override { std::this_thread::sleep_for(std::chrono::microseconds(200)); }
};

// A case whose every iteration is crowded off the cores: twice as many spinning threads as there
// are cores spin beside it for 1 ms, so its threads wait in the run queue as on a busy machine.
class CrowdedInstance final : public Instance {
 public:
  Outputs run() override { return {{"out", at::zeros({1})}}; }
  void iterate() override { crowd_.crowd(std::chrono::milliseconds(1)); }

 private:
  mpscheck::testing::CoreCrowd crowd_;
};

template <class I>
class TimedWorkload final : public Workload {
 public:
  std::string id() const override { return "op/test/timed/f32/contiguous/forward"; }
  Kind kind() const override { return Kind::Op; }
  std::unique_ptr<Instance> instantiate(const Setup&, const Placement&) const override { return std::make_unique<I>(); }
};

// A host that times a workload's instances on the CPU and keeps the reference time it is given.
class TimingHost final : public CaseHost {
 public:
  explicit TimingHost(const Workload& w) : w_(w) {}
  void enter_phase(const char*) override {}
  std::string current_phase() override { return "timing"; }
  Outputs run(const Placement&, const char*) override { throw std::logic_error("timing runs nothing"); }
  Outputs trace(const Placement&) override { throw std::logic_error("timing traces nothing"); }
  std::map<std::string, at::Tensor> gold() override { throw std::logic_error("timing needs no gold"); }
  std::vector<std::string> target_warnings() override { return {}; }
  const ReferenceRerun* kept_rerun() override { return nullptr; }
  void keep_rerun(const ReferenceRerun&) override {}
  std::unique_ptr<Instance> instantiate(const Placement& where) override { return w_.instantiate({}, where); }
  void synchronize(const c10::Device&) override {}
  const TimingStats* kept_reference_time(double) override { return nullptr; }
  void keep_reference_time(const TimingStats& time, double) override { kept = time; }
  std::optional<TimingStats> kept;

 private:
  const Workload& w_;
};

}  // namespace

// --reuse-reference-times: a reference time measured while other work crowded the reference off
// its cores used to be stored, and a later run's target-alone screen then settled against it for good.
TEST(Clocks, AReferenceTimeFromABusyRoundIsNotStored) {
  const TimedWorkload<CrowdedInstance> w;
  TimingHost host(w);
  const auto tgt = w.instantiate(mpscheck::Setup{}, Placement{});
  std::unique_ptr<Instance> ref;
  CaseResult r;
  time_case(host, TimingPlan{0.01, false}, c10::Device(c10::kCPU), c10::kFloat, *tgt, ref, r);
  ASSERT_TRUE(r.reference_time.has_value());  // the case is still timed and classed
  EXPECT_TRUE(r.host_busy) << r.speed_note;
  EXPECT_FALSE(host.kept.has_value());
}

// Training cases judged by their dynamics (the first step's gradients and each parameter's update
// are outputs of their own), the reduced-precision baseline of a network (every tapped layer
// and, in training, every parameter after a step rounded to the target's dtype), a def that
// differs by mode, and a def with its own training step.
#include <mpscheck/model.hpp>

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <utility>
#include <vector>

namespace {

using namespace mpscheck;

struct TwoLayerImpl : torch::nn::Module {
  TwoLayerImpl()
      : fc1(register_module("fc1", torch::nn::Linear(8, 16))), fc2(register_module("fc2", torch::nn::Linear(16, 4))) {}
  at::Tensor forward(const at::Tensor& x) {
    const at::Tensor h = model::tap("fc1", fc1->forward(x));
    return model::tap("fc2", fc2->forward(torch::relu(h)));
  }
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(TwoLayer);

model::ModelDef<TwoLayer> two_layer(double lr, int steps) {
  model::ModelDef<TwoLayer> def;
  def.name = "two_layer";
  def.build = [](model::Mode) { return TwoLayer(); };
  def.batch = [](model::Mode, at::Generator& gen) {
    return model::Batch{{at::randn({6, 8}, gen, at::kFloat)}, at::randint(0, 4, {6}, gen, at::kLong)};
  };
  def.loss = model::cross_entropy;
  def.optimizer = model::optimizer<torch::optim::SGD>(torch::optim::SGDOptions(lr));
  def.steps = def.quick_steps = steps;
  return def;
}

std::map<std::string, at::Tensor> run(const model::ModelDef<TwoLayer>& def, bool train, const Placement& where,
                                      bool quick = true) {
  const model::ModelWorkload<TwoLayer> w(def, train);
  std::map<std::string, at::Tensor> out;
  for (auto& o : w.instantiate(Setup{.seed = 3, .quick = quick}, where)->run()) out[o.name] = o.value;
  return out;
}

Placement rounded_to(c10::ScalarType dtype) {
  Placement p;
  p.round_inputs_to = dtype;
  return p;
}

bool representable_in(const at::Tensor& t, c10::ScalarType dtype) { return at::equal(t, t.to(dtype).to(t.dtype())); }

TEST(ModelDynamics, TrainingComparesFirstGradientsAndUpdatesAtTheirOwnScale) {
  // One plain SGD step: the update is -lr times the first gradient, a hundred times smaller than
  // the parameter, and it is an output of its own.
  const double lr = 0.01;
  const auto out = run(two_layer(lr, 1), true, Placement{});
  for (const char* p : {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}) {
    ASSERT_TRUE(out.count(std::string("grad0/") + p)) << p;
    ASSERT_TRUE(out.count(std::string("update/") + p)) << p;
    const at::Tensor grad = out.at(std::string("grad0/") + p), update = out.at(std::string("update/") + p);
    EXPECT_GT(grad.abs().max().item<double>(), 0) << p;
    // (within the rounding of the parameter, whose units are a few thousandths of the update)
    EXPECT_TRUE(at::allclose(update, -lr * grad, 1e-3, 1e-7)) << p;
    EXPECT_LT(update.abs().max().item<double>(), 0.1 * out.at(std::string("param/") + p).abs().max().item<double>());
  }
  EXPECT_TRUE(out.count("loss/step0"));
}

struct NormedImpl : torch::nn::Module {
  NormedImpl()
      : fc(register_module("fc", torch::nn::Linear(8, 16))),
        bn(register_module("bn", torch::nn::BatchNorm1d(16))),
        head(register_module("head", torch::nn::Linear(16, 4))) {}
  at::Tensor forward(const at::Tensor& x) { return head->forward(torch::relu(bn->forward(fc->forward(x)))); }
  torch::nn::Linear fc;
  torch::nn::BatchNorm1d bn;
  torch::nn::Linear head;
};
TORCH_MODULE(Normed);

// Batch norm's running statistics are state the training step writes and only eval mode reads: a
// kernel that updates them wrong changes no loss and no gradient, so they are outputs of their own
// (the sim's bn-stats plant), judged like a parameter's update and final value.
TEST(ModelDynamics, TrainingComparesBatchNormsRunningStatisticsAsState) {
  model::ModelDef<Normed> def;
  def.name = "normed";
  def.build = [](model::Mode) { return Normed(); };
  def.batch = [](model::Mode, at::Generator& gen) {
    return model::Batch{{at::randn({6, 8}, gen, at::kFloat)}, at::randint(0, 4, {6}, gen, at::kLong)};
  };
  def.loss = model::cross_entropy;
  def.optimizer = model::optimizer<torch::optim::SGD>(torch::optim::SGDOptions(0.01));
  def.steps = def.quick_steps = 2;
  const model::ModelWorkload<Normed> w(def, true);
  std::map<std::string, at::Tensor> out;
  for (auto& o : w.instantiate(mpscheck::Setup{.seed = 3, .quick = true}, Placement{})->run()) out[o.name] = o.value;
  for (const char* b : {"bn.running_mean", "bn.running_var"}) {
    ASSERT_TRUE(out.count(std::string("buffer_update/") + b)) << b;
    ASSERT_TRUE(out.count(std::string("buffer/") + b)) << b;
    // Two steps at momentum 0.1 from mean 0 and variance 1: the update is what they moved.
    const at::Tensor update = out.at(std::string("buffer_update/") + b);
    EXPECT_GT(update.abs().min().item<double>(), 0) << b;
    const double start = std::string(b).find("var") != std::string::npos ? 1.0 : 0.0;
    EXPECT_TRUE(at::allclose(out.at(std::string("buffer/") + b) - update, at::full_like(update, start))) << b;
    EXPECT_FALSE(out.count(std::string("update/") + b)) << b << ": a buffer is not a parameter";
  }
  // The step counter too, which the C++ frontend's Module::to makes floating: two steps, exactly.
  ASSERT_TRUE(out.count("buffer_update/bn.num_batches_tracked"));
  EXPECT_EQ(out.at("buffer_update/bn.num_batches_tracked").item<double>(), 2.0);
  EXPECT_FALSE(out.count("grad0/bn.running_mean"));
}

TEST(ModelDynamics, UpdatesCoverEveryStepAndStartFromTheSeededWeights) {
  // Two runs of the same instance agree (reset to the seed), and the update spans all the steps.
  const auto one = run(two_layer(0.05, 1), true, Placement{});
  const auto three = run(two_layer(0.05, 3), true, Placement{});
  EXPECT_TRUE(at::equal(one.at("grad0/fc1.weight"), three.at("grad0/fc1.weight")));
  EXPECT_FALSE(at::allclose(one.at("update/fc1.weight"), three.at("update/fc1.weight")));
  EXPECT_TRUE(at::allclose(three.at("param/fc1.weight") - three.at("update/fc1.weight"),
                           one.at("param/fc1.weight") - one.at("update/fc1.weight")));
}

TEST(ModelDynamics, ReducedPrecisionBaselineRoundsEveryTappedLayer) {
  for (const auto dtype : {at::kBFloat16, at::kHalf}) {
    const auto plain = run(two_layer(0.01, 1), false, Placement{});
    const auto rounded = run(two_layer(0.01, 1), false, rounded_to(dtype));
    // The network's output is its last tapped layer: rounded to the dtype, as the target stores it.
    EXPECT_TRUE(representable_in(rounded.at("out"), dtype)) << c10::toString(dtype);
    EXPECT_FALSE(representable_in(plain.at("out"), dtype)) << c10::toString(dtype);
    // By hand: weights, input and the first layer's output rounded.
    torch::manual_seed(3);
    TwoLayer net;
    {
      torch::NoGradGuard no_grad;
      for (auto& p : net->parameters()) p.set_data(p.to(dtype).to(at::kFloat));
    }
    at::Generator gen = at::detail::createCPUGenerator(3 + 7);
    const at::Tensor x = at::randn({6, 8}, gen, at::kFloat).to(dtype).to(at::kFloat);
    const at::Tensor h = net->fc1->forward(x).to(dtype).to(at::kFloat);
    const at::Tensor y = net->fc2->forward(torch::relu(h)).to(dtype).to(at::kFloat);
    EXPECT_TRUE(at::equal(rounded.at("out"), y.detach())) << c10::toString(dtype);
  }
  EXPECT_EQ(model::tap_rounding(), c10::ScalarType::Undefined) << "a run leaves the thread's tap rounding as it was";
}

TEST(ModelDynamics, ReducedPrecisionTrainingBaselineKeepsItsParametersInThatDtype) {
  // An update smaller than the parameter's unit of rounding is lost on the target; the baseline
  // loses it too, so its update is a whole number of units, like the target's.
  const auto out = run(two_layer(1e-4, 2), true, rounded_to(at::kBFloat16));
  for (const char* p : {"fc1.weight", "fc2.weight"})
    EXPECT_TRUE(representable_in(out.at(std::string("param/") + p), at::kBFloat16)) << p;
  const auto plain = run(two_layer(1e-4, 2), true, Placement{});
  EXPECT_FALSE(representable_in(plain.at("param/fc1.weight"), at::kBFloat16));
}

// The nudged witness (Placement::nudge_parameters) moves each tapped layer's output, and the
// gradient flowing back into it, by one unit of the dtype either way, on top of its parameters: a
// device that rounds each layer's result another way moves it that far, while parameters moved by
// a unit move a layer's output far less (its dot products average the units down).
TEST(ModelDynamics, TheNudgedWitnessMovesEveryTappedLayerAndItsGradientByAUnit) {
  for (const auto dtype : {at::kBFloat16, at::kHalf}) {
    const double unit = model::nudge_unit(dtype);
    Placement p;
    p.dtype = dtype;
    const auto plain = run(two_layer(0.01, 1), false, p);
    const auto plain_train = run(two_layer(0.01, 1), true, p);
    p.nudge_parameters = true;
    const auto nudged = run(two_layer(0.01, 1), false, p);
    const auto nudged_train = run(two_layer(0.01, 1), true, p);
    // By hand, parameters only: what the nudge gave before it reached the layers.
    torch::manual_seed(3);
    TwoLayer net;
    model::detail::nudge_parameters(*net, dtype, 3);
    net->to(dtype);
    at::Generator gen = at::detail::createCPUGenerator(3 + 7);
    const at::Tensor x = at::randn({6, 8}, gen, at::kFloat).to(dtype);
    const at::Tensor params_only = net->forward(x).detach();
    auto rms = [](const at::Tensor& t) { return t.to(at::kDouble).pow(2).mean().sqrt().item<double>(); };
    const at::Tensor out = plain.at("out").to(at::kDouble);
    // Beyond the parameters' nudge, each output element is moved by the last layer's: a unit, then
    // rounded to the dtype (one or two of its spacings, at least half a unit of the element).
    const double layer_move = rms(nudged.at("out").to(at::kDouble) - params_only.to(at::kDouble));
    EXPECT_GT(layer_move, 0.5 * unit * rms(out)) << c10::toString(dtype);
    EXPECT_LT(layer_move, 4 * unit * rms(out)) << c10::toString(dtype);
    // Training: the first layer's gradient moves too (the nudge is differentiable), by a few units.
    const at::Tensor g = plain_train.at("grad0/fc1.weight").to(at::kDouble);
    const double grad_move = rms(nudged_train.at("grad0/fc1.weight").to(at::kDouble) - g);
    EXPECT_GT(grad_move, 0.4 * unit * rms(g)) << c10::toString(dtype);
    EXPECT_LT(grad_move, 16 * unit * rms(g)) << c10::toString(dtype);
  }
  EXPECT_EQ(model::tap_nudge().unit, 0) << "a run leaves the thread's tap nudge off";
}

// A def that differs by mode: each case draws the batch its mode names, and builds its network for it.
TEST(ModelModes, EachCaseBuildsAndDrawsForItsOwnMode) {
  auto def = two_layer(0.01, 1);
  const model::PerMode<int64_t> rows{.infer = 3, .train = 5, .quick = 2};
  auto modes = std::make_shared<std::vector<std::pair<bool, bool>>>();
  def.build = [modes](model::Mode m) {
    modes->push_back({m.quick, m.train});
    return TwoLayer();
  };
  def.batch = [rows](model::Mode m, at::Generator& gen) {
    const int64_t n = rows.of(m);
    return model::Batch{{at::randn({n, 8}, gen, at::kFloat)}, at::randint(0, 4, {n}, gen, at::kLong)};
  };
  EXPECT_EQ(run(def, false, Placement{}, /*quick=*/false).at("out").size(0), 3);
  EXPECT_EQ(run(def, false, Placement{}, /*quick=*/true).at("out").size(0), 2);
  EXPECT_EQ(modes->back(), std::make_pair(true, false));
  // Training at full size: the first layer's traced output has the train batch's rows.
  const model::ModelWorkload<TwoLayer> train(def, true);
  const Outputs trace = train.instantiate(mpscheck::Setup{.seed = 3, .quick = false}, Placement{})->trace_layers();
  ASSERT_FALSE(trace.empty());
  EXPECT_EQ(trace.front().name, "fc1");
  EXPECT_EQ(trace.front().value.size(0), 5);
  EXPECT_EQ(modes->back(), std::make_pair(false, true));
}

// A network with its own training procedure: the train case runs the def's train_step, compares
// the loss it returns, and records the gradients it asks for.
TEST(ModelModes, TheTrainCaseRunsTheDefsOwnStep) {
  auto def = two_layer(0.1, 3);
  auto calls = std::make_shared<int>(0);
  // Two optimizers, one per layer; the step trains fc2 alone and returns two losses.
  def.optimizers = [](TwoLayer& net) {
    model::Optimizers o;
    o.push_back(std::make_unique<torch::optim::SGD>(net->fc1->parameters(), torch::optim::SGDOptions(0.1)));
    o.push_back(std::make_unique<torch::optim::SGD>(net->fc2->parameters(), torch::optim::SGDOptions(0.1)));
    return o;
  };
  def.train_step = [calls](const model::Step<TwoLayer>& step) {
    ++*calls;
    EXPECT_EQ(step.optimizers.size(), 2u);
    for (auto& o : step.optimizers) o->zero_grad();
    const at::Tensor loss = step.def.loss(step.def.forward(step.net, step.batch), step.batch);
    loss.backward();
    step.net->fc1->zero_grad();  // fc1 keeps no gradient: only fc2's are recorded and stepped
    step.record_grads();
    step.optimizers[1]->step();
    return torch::stack({loss.detach(), 2 * loss.detach()});
  };
  const auto out = run(def, true, Placement{});
  EXPECT_EQ(*calls, 3);
  ASSERT_TRUE(out.count("loss/step2"));
  EXPECT_EQ(out.at("loss/step0").numel(), 2);
  EXPECT_TRUE(at::equal(out.at("loss/step0")[1], 2 * out.at("loss/step0")[0]));
  EXPECT_FALSE(out.count("grad0/fc1.weight"));
  ASSERT_TRUE(out.count("grad0/fc2.weight"));
  EXPECT_EQ(out.at("update/fc1.weight").abs().max().item<double>(), 0.0);
  EXPECT_GT(out.at("update/fc2.weight").abs().max().item<double>(), 0.0);
  // The training trace follows the same step: only the gradients it recorded are traced.
  const model::ModelWorkload<TwoLayer> w(def, true);
  std::map<std::string, at::Tensor> trace;
  for (auto& o : w.instantiate(mpscheck::Setup{.seed = 3, .quick = true}, Placement{})->trace_layers())
    trace[o.name] = o.value;
  EXPECT_TRUE(trace.count("fc1") && trace.count("backward/fc2.weight"));
  EXPECT_FALSE(trace.count("backward/fc1.weight"));
  EXPECT_TRUE(at::equal(trace.at("backward/fc2.weight"), out.at("grad0/fc2.weight")));
  // The default step trains both layers, with the one optimizer over every parameter.
  const auto plain = run(two_layer(0.1, 3), true, Placement{});
  EXPECT_EQ(plain.at("loss/step0").numel(), 1);
  EXPECT_GT(plain.at("update/fc1.weight").abs().max().item<double>(), 0.0);
  EXPECT_TRUE(plain.count("grad0/fc1.weight"));
}

// The default step with several optimizers steps each, and records each gradient once.
TEST(ModelModes, TheOrdinaryStepStepsEveryOptimizer) {
  auto def = two_layer(0.1, 1);
  def.optimizers = [](TwoLayer& net) {
    model::Optimizers o;
    o.push_back(std::make_unique<torch::optim::SGD>(net->fc1->parameters(), torch::optim::SGDOptions(0.1)));
    o.push_back(std::make_unique<torch::optim::SGD>(net->fc2->parameters(), torch::optim::SGDOptions(0.1)));
    return o;
  };
  const auto split = run(def, true, Placement{});
  const auto one = run(two_layer(0.1, 1), true, Placement{});
  for (const char* p : {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"})
    EXPECT_TRUE(at::equal(split.at(std::string("update/") + p), one.at(std::string("update/") + p))) << p;
  EXPECT_EQ(split.size(), one.size());
}

}  // namespace

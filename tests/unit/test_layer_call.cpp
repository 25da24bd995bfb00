// A model case captures one call of a named layer (Instance::layer_call) for an op-level
// reproducer: the layer's op spelled in Python, and its input and parameters as they were when
// that call began. Only layers run through model::layer are modules mpscheck can spell.
#include <mpscheck/model.hpp>

#include <gtest/gtest.h>

namespace {

using namespace mpscheck;
namespace nn = torch::nn;

const mpscheck::Setup kSetup{.seed = 3, .quick = true};

// A Sequential stack of spelled layers, run twice per pass (as DCGAN's training step runs its discriminator), and
// a head tapped as code.
struct StackImpl : nn::Module {
  StackImpl()
      : seq(register_module(
            "seq", nn::Sequential(nn::Conv2d(nn::Conv2dOptions(3, 4, 3).stride(2).padding(1)), nn::BatchNorm2d(4),
                                  nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2))))),
        fc(register_module("fc", nn::Linear(4 * 4 * 4, 2))) {}
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor a = stack(x), b = stack(x * 2);
    return model::tap("head", fc->forward((a + b).flatten(1)));
  }
  at::Tensor stack(at::Tensor x) {
    size_t i = 0;
    for (auto& child : *seq) x = model::layer("seq." + std::to_string(i++), child, x);
    return x;
  }
  nn::Sequential seq;
  nn::Linear fc;
};
TORCH_MODULE(Stack);

model::ModelDef<Stack> stack_def() {
  model::ModelDef<Stack> def;
  def.name = "stack";
  def.build = [](model::Mode) { return Stack(); };
  def.batch = [](model::Mode, at::Generator& gen) {
    return model::Batch{{at::randn({2, 3, 8, 8}, gen, at::kFloat)}, at::randint(0, 2, {2}, gen, at::kLong)};
  };
  def.loss = model::cross_entropy;
  def.optimizer = model::optimizer<torch::optim::SGD>(torch::optim::SGDOptions(0.1));
  return def;
}

std::vector<std::string> names(const Outputs& outs) {
  std::vector<std::string> n;
  for (const auto& o : outs) n.push_back(o.name);
  return n;
}

TEST(LayerCall, SpellsAConvWithItsOptionsAndKeepsItsInputAndParameters) {
  const model::ModelWorkload<Stack> w(stack_def(), /*train=*/false);
  auto instance = w.instantiate(kSetup, Placement{});
  const LayerCall call = instance->layer_call("seq.0", 0);
  ASSERT_TRUE(call.missing.empty()) << call.missing;
  EXPECT_EQ(call.python,
            "torch.nn.functional.conv2d(x, weight, bias, stride=(2, 2), padding=(1, 1), dilation=(1, 1), groups=1)");
  EXPECT_EQ(names(call.tensors), (std::vector<std::string>{"x", "weight", "bias"}));
  // The input of the first call is the batch itself; the op on it gives the traced output.
  const Outputs trace = instance->trace_layers();
  ASSERT_EQ(trace.at(0).name, "seq.0");
  const at::Tensor again =
      at::conv2d(call.tensors[0].value, call.tensors[1].value, call.tensors[2].value, {2, 2}, {1, 1});
  EXPECT_TRUE(at::allclose(again, trace.at(0).value));
}

TEST(LayerCall, TheSecondCallOfALayerGetsItsOwnInput) {
  const model::ModelWorkload<Stack> w(stack_def(), /*train=*/false);
  auto instance = w.instantiate(kSetup, Placement{});
  const LayerCall first = instance->layer_call("seq.0", 0), second = instance->layer_call("seq.0", 1);
  ASSERT_TRUE(first.missing.empty() && second.missing.empty());
  EXPECT_TRUE(at::equal(second.tensors[0].value, first.tensors[0].value * 2));
  EXPECT_NE(instance->layer_call("seq.0", 2).missing.find("no call 3 of layer seq.0"), std::string::npos);
}

TEST(LayerCall, BatchNormInTrainingUsesTheBatchStatisticsAndItsSpelledOptions) {
  const model::ModelWorkload<Stack> train(stack_def(), /*train=*/true), infer(stack_def(), /*train=*/false);
  const LayerCall t = train.instantiate(kSetup, Placement{})->layer_call("seq.1", 0);
  const LayerCall i = infer.instantiate(kSetup, Placement{})->layer_call("seq.1", 0);
  EXPECT_EQ(t.python,
            "torch.nn.functional.batch_norm(x, running_mean, running_var, weight, bias, training=True, "
            "momentum=0.1, eps=1e-05)");
  EXPECT_NE(i.python.find("training=False"), std::string::npos) << i.python;
  EXPECT_EQ(names(t.tensors), (std::vector<std::string>{"x", "running_mean", "running_var", "weight", "bias"}));
  const LayerCall leaky = infer.instantiate(kSetup, Placement{})->layer_call("seq.2", 0);
  EXPECT_EQ(leaky.python, "torch.nn.functional.leaky_relu(x, 0.2)");
}

TEST(LayerCall, TappedCodeIsNotOneModuleAndSaysSo) {
  const model::ModelWorkload<Stack> w(stack_def(), /*train=*/false);
  const LayerCall head = w.instantiate(kSetup, Placement{})->layer_call("head", 0);
  EXPECT_TRUE(head.python.empty());
  EXPECT_TRUE(head.tensors.empty());
  EXPECT_NE(head.missing.find("tapped code"), std::string::npos) << head.missing;
}

}  // namespace

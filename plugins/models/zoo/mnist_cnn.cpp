#include "mnist_cnn.h"

#include <mpscheck/model.hpp>

namespace mpscheck::zoo {

MnistCnnImpl::MnistCnnImpl()
    : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 64, 3)))),
      conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(64, 512, 3)))),
      dropout(register_module("dropout", torch::nn::Dropout2d(0.1))),
      fc1(register_module("fc1", torch::nn::Linear(512, 1024))),
      fc2(register_module("fc2", torch::nn::Linear(1024, 10))) {}

torch::Tensor MnistCnnImpl::forward(torch::Tensor x) {
  using model::tap;
  x = torch::max_pool2d(tap("conv1", conv1->forward(x)), 2, 2);
  x = torch::max_pool2d(tap("conv2", conv2->forward(x)), 2, 2);
  x = dropout->forward(x);
  x = std::get<0>(torch::adaptive_max_pool2d(x, {1, 1})).flatten(1);
  return tap("fc2", fc2->forward(torch::relu(tap("fc1", fc1->forward(x)))));
}

}  // namespace mpscheck::zoo

MPSCHECK_CATALOG(mnist_cnn_models) {
  using namespace mpscheck;
  model::ModelDef<zoo::MnistCnn> def;
  def.name = "mnist_cnn";
  def.tags = {"seed", "cnn", "mnist"};
  def.build = [](bool) { return zoo::MnistCnn(); };
  def.batch = [](bool quick, at::Generator& gen) {
    const int64_t n = quick ? 8 : 128;  // the report trained with batch 128
    return model::Batch{{at::rand({n, 1, 28, 28}, gen, at::kFloat)}, at::randint(0, 10, {n}, gen, at::kLong)};
  };
  def.forward = [](zoo::MnistCnn& net, const model::Batch& b) { return net->forward(b.inputs[0]); };
  def.loss = [](const at::Tensor& out, const model::Batch& b) { return torch::cross_entropy_loss(out, b.target); };
  def.optimizer = [](std::vector<at::Tensor> p) {
    return std::make_unique<torch::optim::Adam>(std::move(p), torch::optim::AdamOptions(0.01));
  };
  def.steps = 3;
  model::add_model(catalog, def);
}

#include "lenet5.h"

#include <mpscheck/model.hpp>

namespace mpscheck::mnist {

LeNet5Impl::LeNet5Impl()
    // padding 2 turns MNIST's 28x28 into the 32x32 the original network was drawn for.
    : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 6, 5).padding(2)))),
      conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(6, 16, 5)))),
      fc1(register_module("fc1", torch::nn::Linear(16 * 5 * 5, 120))),
      fc2(register_module("fc2", torch::nn::Linear(120, 84))),
      fc3(register_module("fc3", torch::nn::Linear(84, 10))) {}

torch::Tensor LeNet5Impl::forward(torch::Tensor x) {
  using model::layer;
  x = torch::avg_pool2d(torch::tanh(layer("conv1", conv1, x)), 2);
  x = torch::avg_pool2d(torch::tanh(layer("conv2", conv2, x)), 2).flatten(1);
  x = torch::tanh(layer("fc1", fc1, x));
  x = torch::tanh(layer("fc2", fc2, x));
  return layer("fc3", fc3, x);
}

}  // namespace mpscheck::mnist

MPSCHECK_CATALOG(lenet5_models) {
  using namespace mpscheck;
  auto def = model::image_classifier<mnist::LeNet5>(
      "lenet5", {"seed", "cnn", "mnist", "vision"}, [](model::Mode) { return mnist::LeNet5(); },
      model::mnist_images(64));
  def.optimizer = model::optimizer<torch::optim::SGD>(torch::optim::SGDOptions(0.01).momentum(0.9));
  model::add_model(catalog, def);
}

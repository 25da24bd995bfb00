#include "mnist_cnn.h"

#include <mpscheck/model.hpp>

namespace mpscheck::mnist {

MnistCnnImpl::MnistCnnImpl()
    : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 64, 3)))),
      conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(64, 512, 3)))),
      dropout(register_module("dropout", torch::nn::Dropout2d(0.1))),
      fc1(register_module("fc1", torch::nn::Linear(512, 1024))),
      fc2(register_module("fc2", torch::nn::Linear(1024, 10))) {}

torch::Tensor MnistCnnImpl::forward(torch::Tensor x) {
  using model::layer;
  x = torch::max_pool2d(layer("conv1", conv1, x), 2, 2);
  x = torch::max_pool2d(layer("conv2", conv2, x), 2, 2);
  x = dropout->forward(x);
  x = std::get<0>(torch::adaptive_max_pool2d(x, {1, 1})).flatten(1);
  return layer("fc2", fc2, torch::relu(layer("fc1", fc1, x)));
}

}  // namespace mpscheck::mnist

MPSCHECK_CATALOG(mnist_cnn_models) {
  using namespace mpscheck;
  // The report trained with batch 128.
  auto def = model::image_classifier<mnist::MnistCnn>(
      "mnist_cnn", {"seed", "cnn", "mnist"}, [](model::Mode) { return mnist::MnistCnn(); }, model::mnist_images(128));
  def.optimizer = model::optimizer<torch::optim::Adam>(torch::optim::AdamOptions(0.01));
  def.steps = 3;
  model::add_model(catalog, def);
}

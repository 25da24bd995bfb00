// seed000: the MNIST CNN from the "M1 GPU 6x faster" report.
// Conv(1->64,k3) -> MaxPool(2) -> Conv(64->512,k3) -> MaxPool(2) -> Dropout2d(0.1)
//   -> AdaptiveMaxPool(1) -> Flatten -> Linear(512->1024) -> ReLU -> Linear(1024->10)
#pragma once

#include <torch/torch.h>

namespace mpscheck::mnist {

struct MnistCnnImpl : torch::nn::Module {
  MnistCnnImpl();
  torch::Tensor forward(torch::Tensor x);

  torch::nn::Conv2d conv1, conv2;
  torch::nn::Dropout2d dropout;
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(MnistCnn);

}  // namespace mpscheck::mnist

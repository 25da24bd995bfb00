// Classic LeNet-5 (LeCun et al. 1998) on MNIST-shaped input: the lenet5 row of the seed reports.
// conv(1->6,k5,pad2) -> tanh -> avgpool(2) -> conv(6->16,k5) -> tanh -> avgpool(2)
//   -> Linear(400->120) -> tanh -> Linear(120->84) -> tanh -> Linear(84->10)
#pragma once

#include <torch/torch.h>

namespace mpscheck::mnist {

struct LeNet5Impl : torch::nn::Module {
  LeNet5Impl();
  torch::Tensor forward(torch::Tensor x);

  torch::nn::Conv2d conv1, conv2;
  torch::nn::Linear fc1, fc2, fc3;
};
TORCH_MODULE(LeNet5);

}  // namespace mpscheck::mnist

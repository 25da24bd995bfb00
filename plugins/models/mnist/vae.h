// PyTorch's VAE example (pytorch/examples vae/main.py): the row whose loss went
// 550 -> 4705 -> 1.8e8 -> NaN on MPS while the CPU trained normally.
// 784 -> 400 -> {20 mu, 20 logvar} -> reparameterise -> 20 -> 400 -> 784 sigmoid
#pragma once

#include <torch/torch.h>

namespace mpscheck::mnist {

struct VaeImpl : torch::nn::Module {
  static constexpr int64_t kPixels = 784, kLatent = 20;

  VaeImpl();
  // `eps` is the reparameterisation noise, drawn on CPU by the caller so every device sees the same.
  // Returns [recon (784) | mu (20) | logvar (20)] per row, since a model case has one output tensor.
  torch::Tensor forward(torch::Tensor x, torch::Tensor eps);

  torch::nn::Linear fc1, fc21, fc22, fc3, fc4;
};
TORCH_MODULE(Vae);

}  // namespace mpscheck::mnist

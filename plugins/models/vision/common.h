// Helpers shared by the vision families: seeded image batches and tapped Sequential stacks.
#pragma once

#include <mpscheck/model.hpp>

#include <torch/torch.h>

#include <string>

namespace mpscheck::vision {

// Images in [0, 1) and class labels, drawn on CPU from the case's generator.
inline model::Batch image_batch(at::Generator& gen, int64_t n, int64_t channels, int64_t size, int64_t classes) {
  return model::Batch{{at::rand({n, channels, size, size}, gen, at::kFloat)},
                      at::randint(0, classes, {n}, gen, at::kLong)};
}

// Runs a Sequential child by child, tapping each output as "<prefix>.<index>" like torchvision's names.
inline torch::Tensor forward_tapped(const std::string& prefix, torch::nn::Sequential& seq, torch::Tensor x) {
  size_t index = 0;
  for (auto& layer : *seq) x = model::tap(prefix + "." + std::to_string(index++), layer.forward(x));
  return x;
}

// torchvision's initialisation for conv nets: He-normal (fan_out) convs, unit BatchNorm, zero biases.
inline void init_conv_net(torch::nn::Module& net) {
  torch::NoGradGuard no_grad;
  for (auto& m : net.modules(/*include_self=*/false)) {
    if (auto* conv = m->as<torch::nn::Conv2d>()) {
      torch::nn::init::kaiming_normal_(conv->weight, 0, torch::kFanOut, torch::kReLU);
      if (conv->bias.defined()) torch::nn::init::zeros_(conv->bias);
    } else if (auto* bn = m->as<torch::nn::BatchNorm2d>()) {
      torch::nn::init::ones_(bn->weight);
      torch::nn::init::zeros_(bn->bias);
    }
  }
}

}  // namespace mpscheck::vision

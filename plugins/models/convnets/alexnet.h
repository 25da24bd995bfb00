// AlexNet as torchvision builds it (the "one weird trick" variant: 64-192-384-256-256 channels).
// `narrow` divides every width (convs and classifier) for quick runs.
#pragma once

#include <torch/torch.h>

namespace mpscheck::convnets {

struct AlexNetImpl : torch::nn::Module {
  explicit AlexNetImpl(int64_t num_classes = 1000, double dropout = 0.5, int64_t narrow = 1);
  torch::Tensor forward(torch::Tensor x);

  torch::nn::Sequential features, classifier;
};
TORCH_MODULE(AlexNet);

}  // namespace mpscheck::convnets

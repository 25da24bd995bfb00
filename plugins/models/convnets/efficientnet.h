// EfficientNet-B0..B7 as torchvision builds them: MBConv blocks with squeeze-excitation and SiLU
// from a base stage table, widened and deepened by per-variant multipliers. Stochastic depth is
// off (its per-sample drops are random and could never agree across devices).
#pragma once

#include <torch/torch.h>

namespace mpscheck::convnets {

struct EfficientNetConfig {
  double width_mult, depth_mult, dropout;
};

struct EfficientNetImpl : torch::nn::Module {
  explicit EfficientNetImpl(const EfficientNetConfig& config, int64_t num_classes = 1000);
  torch::Tensor forward(torch::Tensor x);

  torch::nn::Sequential stem;
  torch::nn::ModuleList stages;  // of Sequentials of MBConv blocks
  torch::nn::Sequential head;
  torch::nn::Dropout dropout;
  torch::nn::Linear classifier;
};
TORCH_MODULE(EfficientNet);

EfficientNet efficientnet_b0();
EfficientNet efficientnet_b4(double width_mult = 1.4);  // quick runs narrow it

}  // namespace mpscheck::convnets

// ResNet as torchvision builds it (v1.5: the stride sits on the 3x3 conv of a bottleneck).
// Variants are a config table: block kind and blocks per stage ({2,2,2,2} basic = ResNet-18).
#pragma once

#include <torch/torch.h>

#include <array>

namespace mpscheck::convnets {

struct ResNetConfig {
  bool bottleneck;                // Bottleneck (expansion 4) or BasicBlock (expansion 1)
  std::array<int64_t, 4> blocks;  // per stage layer1..layer4
  int64_t width = 64;             // the stem's channels and layer1's planes; each stage doubles them
};

struct ResNetImpl : torch::nn::Module {
  explicit ResNetImpl(const ResNetConfig& config, int64_t num_classes = 1000);
  torch::Tensor forward(torch::Tensor x);

  torch::nn::Conv2d conv1;
  torch::nn::BatchNorm2d bn1;
  torch::nn::Sequential layer1, layer2, layer3, layer4;
  torch::nn::Linear fc;
};
TORCH_MODULE(ResNet);

ResNet resnet18();
ResNet resnet34();
ResNet resnet50(int64_t width = 64);
ResNet resnet101();

}  // namespace mpscheck::convnets

// VGG as torchvision builds it: a config table of conv widths and pools ('M'), then the
// 25088 -> 4096 -> 4096 -> classes classifier. The seed reports ran VGG16 (config "D").
// `narrow` divides every width (convs and classifier) for quick runs: the same layer sequence
// without the 138M weights.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

namespace mpscheck::convnets {

struct VggImpl : torch::nn::Module {
  // `cfg` lists output channels; 0 stands for a 2x2 max pool.
  VggImpl(const std::vector<int64_t>& cfg, bool batch_norm, int64_t num_classes = 1000, int64_t narrow = 1);
  torch::Tensor forward(torch::Tensor x);

  torch::nn::Sequential features, classifier;
};
TORCH_MODULE(Vgg);

Vgg vgg11();
Vgg vgg13();
Vgg vgg16(int64_t narrow = 1);
Vgg vgg19();

}  // namespace mpscheck::convnets

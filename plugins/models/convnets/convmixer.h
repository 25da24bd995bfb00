// ConvMixer ("Patches Are All You Need?", Trockman & Kolter): a patch-embedding conv, then
// `depth` blocks of residual depthwise conv and pointwise conv, each followed by GELU and BatchNorm.
#pragma once

#include <torch/torch.h>

namespace mpscheck::convnets {

struct ConvMixerConfig {
  int64_t dim, depth, kernel, patch;
};

struct ConvMixerImpl : torch::nn::Module {
  explicit ConvMixerImpl(const ConvMixerConfig& config, int64_t num_classes = 1000);
  torch::Tensor forward(torch::Tensor x);

  torch::nn::Conv2d patch_embed;
  torch::nn::BatchNorm2d embed_norm;
  torch::nn::ModuleList blocks;
  torch::nn::Linear fc;
};
TORCH_MODULE(ConvMixer);

ConvMixer convmixer_1536_20();
ConvMixer convmixer_768_32();
ConvMixer convmixer_256_8();

}  // namespace mpscheck::convnets

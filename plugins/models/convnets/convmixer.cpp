#include "convmixer.h"

#include "common.h"

#include <string>

namespace mpscheck::convnets {

namespace nn = torch::nn;

namespace {

struct MixerBlockImpl : nn::Module {
  MixerBlockImpl(int64_t dim, int64_t kernel)
      : depthwise(register_module("depthwise",
                                  nn::Conv2d(nn::Conv2dOptions(dim, dim, kernel).groups(dim).padding(kernel / 2)))),
        norm1(register_module("norm1", nn::BatchNorm2d(dim))),
        pointwise(register_module("pointwise", nn::Conv2d(nn::Conv2dOptions(dim, dim, 1)))),
        norm2(register_module("norm2", nn::BatchNorm2d(dim))) {}

  torch::Tensor forward(const std::string& path, torch::Tensor x) {
    auto tap = [&path](const char* name, torch::Tensor t) { return model::tap(path + "." + name, t); };
    x = x + tap("norm1", norm1->forward(torch::gelu(tap("depthwise", depthwise->forward(x)))));
    return model::tap(path, tap("norm2", norm2->forward(torch::gelu(tap("pointwise", pointwise->forward(x))))));
  }

  nn::Conv2d depthwise;
  nn::BatchNorm2d norm1;
  nn::Conv2d pointwise;
  nn::BatchNorm2d norm2;
};
TORCH_MODULE(MixerBlock);

}  // namespace

ConvMixerImpl::ConvMixerImpl(const ConvMixerConfig& config, int64_t num_classes)
    : patch_embed(register_module("patch_embed",
                                  nn::Conv2d(nn::Conv2dOptions(3, config.dim, config.patch).stride(config.patch)))),
      embed_norm(register_module("embed_norm", nn::BatchNorm2d(config.dim))),
      blocks(register_module("blocks", nn::ModuleList())),
      fc(register_module("fc", nn::Linear(config.dim, num_classes))) {
  TORCH_CHECK(config.kernel % 2 == 1, "ConvMixer's 'same' padding needs an odd kernel, got ", config.kernel);
  for (int64_t i = 0; i < config.depth; ++i) blocks->push_back(MixerBlock(config.dim, config.kernel));
}

torch::Tensor ConvMixerImpl::forward(torch::Tensor x) {
  using model::tap;
  x = tap("embed_norm", embed_norm->forward(torch::gelu(tap("patch_embed", patch_embed->forward(x)))));
  for (size_t i = 0; i < blocks->size(); ++i)
    x = blocks[i]->as<MixerBlock>()->forward("blocks." + std::to_string(i), x);
  x = tap("avgpool", torch::adaptive_avg_pool2d(x, {1, 1})).flatten(1);
  return tap("fc", fc->forward(x));
}

// dim, depth, kernel, patch: the paper's ImageNet models, and its CIFAR-sized one for quick runs.
ConvMixer convmixer_1536_20() { return ConvMixer(ConvMixerConfig{1536, 20, 9, 7}); }
ConvMixer convmixer_768_32() { return ConvMixer(ConvMixerConfig{768, 32, 7, 7}); }
ConvMixer convmixer_256_8() { return ConvMixer(ConvMixerConfig{256, 8, 5, 2}); }

}  // namespace mpscheck::convnets

MPSCHECK_CATALOG(convmixer_models) {
  using namespace mpscheck;
  // Quick swaps in the 256/8 (kernel 5, patch 2) entry on 32x32 images: 768/32 is ~20 GMAC per image.
  model::add_model(
      catalog,
      convnets::imagenet_classifier<convnets::ConvMixer>(
          "convmixer", {"seed", "cnn", "imagenet", "vision", "batchnorm", "depthwise"},
          [](model::Mode m) { return m.quick ? convnets::convmixer_256_8() : convnets::convmixer_768_32(); }, 32, 2));
}

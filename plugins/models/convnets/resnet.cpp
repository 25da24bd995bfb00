#include "resnet.h"

#include "common.h"

#include <string>
#include <vector>

namespace mpscheck::convnets {

namespace nn = torch::nn;

namespace {

nn::Conv2d conv(int64_t in, int64_t out, int64_t k, int64_t stride = 1) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, k).stride(stride).padding(k / 2).bias(false));
}

// A residual block: conv+BN pairs with a ReLU between them, added to the input (through a
// strided 1x1 conv+BN where the shape changes), then a ReLU. BasicBlock is two 3x3 convs;
// Bottleneck is 1x1 in, 3x3 carrying the stride (v1.5), 1x1 out to 4x the planes. Blocks know
// their path ("layer2.1") so that their inner layers tap under torchvision's names.
struct ResidualBlockImpl : nn::Module {
  ResidualBlockImpl(std::string path, bool bottleneck, int64_t in, int64_t planes, int64_t stride)
      : path(std::move(path)) {
    struct ConvSpec {
      int64_t in, out, kernel, stride;
    };
    const std::vector<ConvSpec> specs =
        bottleneck ? std::vector<ConvSpec>{{in, planes, 1, 1}, {planes, planes, 3, stride}, {planes, 4 * planes, 1, 1}}
                   : std::vector<ConvSpec>{{in, planes, 3, stride}, {planes, planes, 3, 1}};
    for (size_t i = 0; i < specs.size(); ++i) {
      const ConvSpec& c = specs[i];
      convs.push_back(register_module("conv" + std::to_string(i + 1), conv(c.in, c.out, c.kernel, c.stride)));
      norms.push_back(register_module("bn" + std::to_string(i + 1), nn::BatchNorm2d(c.out)));
    }
    out_channels = specs.back().out;
    if (stride != 1 || in != out_channels)
      downsample = register_module("downsample",
                                   nn::Sequential(conv(in, out_channels, 1, stride), nn::BatchNorm2d(out_channels)));
  }

  torch::Tensor forward(torch::Tensor x) {
    auto tap = [this](const std::string& name, torch::Tensor t) { return model::tap(path + "." + name, t); };
    torch::Tensor out = x;
    for (size_t i = 0; i < convs.size(); ++i) {
      const std::string n = std::to_string(i + 1);
      out = model::layer(path + ".bn" + n, norms[i], model::layer(path + ".conv" + n, convs[i], out));
      if (i + 1 < convs.size()) out = torch::relu(out);
    }
    torch::Tensor identity = downsample ? tap("downsample", downsample->forward(x)) : x;
    return model::tap(path, torch::relu(out + identity));
  }

  std::string path;
  int64_t out_channels = 0;
  std::vector<nn::Conv2d> convs;
  std::vector<nn::BatchNorm2d> norms;
  nn::Sequential downsample{nullptr};
};
TORCH_MODULE(ResidualBlock);

// One stage: `blocks` blocks, the first one changing stride and width.
nn::Sequential make_layer(const std::string& name, bool bottleneck, int64_t& in, int64_t planes, int64_t blocks,
                          int64_t stride) {
  nn::Sequential layer;
  for (int64_t i = 0; i < blocks; ++i) {
    ResidualBlock block(name + "." + std::to_string(i), bottleneck, in, planes, i == 0 ? stride : 1);
    in = block->out_channels;
    layer->push_back(block);
  }
  return layer;
}

}  // namespace

ResNetImpl::ResNetImpl(const ResNetConfig& config, int64_t num_classes)
    : conv1(
          register_module("conv1", nn::Conv2d(nn::Conv2dOptions(3, config.width, 7).stride(2).padding(3).bias(false)))),
      bn1(register_module("bn1", nn::BatchNorm2d(config.width))),
      layer1(nullptr),
      layer2(nullptr),
      layer3(nullptr),
      layer4(nullptr),
      fc(nullptr) {
  const int64_t w = config.width;
  int64_t in = w;
  const bool b = config.bottleneck;
  layer1 = register_module("layer1", make_layer("layer1", b, in, w, config.blocks[0], 1));
  layer2 = register_module("layer2", make_layer("layer2", b, in, 2 * w, config.blocks[1], 2));
  layer3 = register_module("layer3", make_layer("layer3", b, in, 4 * w, config.blocks[2], 2));
  layer4 = register_module("layer4", make_layer("layer4", b, in, 8 * w, config.blocks[3], 2));
  fc = register_module("fc", nn::Linear(in, num_classes));
  init_conv_net(*this);
}

torch::Tensor ResNetImpl::forward(torch::Tensor x) {
  using model::tap;
  x = torch::relu(model::layer("bn1", bn1, model::layer("conv1", conv1, x)));
  x = tap("maxpool", torch::max_pool2d(x, 3, 2, 1));
  x = layer4->forward(layer3->forward(layer2->forward(layer1->forward(x))));
  x = tap("avgpool", torch::adaptive_avg_pool2d(x, {1, 1})).flatten(1);
  return model::layer("fc", fc, x);
}

ResNet resnet18() { return ResNet(ResNetConfig{false, {2, 2, 2, 2}}); }
ResNet resnet34() { return ResNet(ResNetConfig{false, {3, 4, 6, 3}}); }
ResNet resnet50(int64_t width) { return ResNet(ResNetConfig{true, {3, 4, 6, 3}, width}); }
ResNet resnet101() { return ResNet(ResNetConfig{true, {3, 4, 23, 3}}); }

}  // namespace mpscheck::convnets

MPSCHECK_CATALOG(resnet_models) {
  using namespace mpscheck;
  // Quick: 64x64 images leave layer4 at 2x2, so training BatchNorm still sees 8 values per channel.
  // ResNet-50 runs them at a quarter of its width (1.5M weights instead of 25.6M): at full width a
  // quick training case took 6.4 s here, 1.9 s of it in the float64 gold alone.
  const std::vector<std::string> tags = {"seed", "cnn", "imagenet", "vision", "batchnorm"};
  model::add_model(catalog, convnets::imagenet_classifier<convnets::ResNet>(
                                "resnet18", tags, [](model::Mode) { return convnets::resnet18(); }, 64));
  model::add_model(catalog,
                   convnets::imagenet_classifier<convnets::ResNet>(
                       "resnet50", tags, [](model::Mode m) { return convnets::resnet50(m.quick ? 16 : 64); }, 64));
}

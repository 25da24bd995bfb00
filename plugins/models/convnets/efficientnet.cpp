#include "efficientnet.h"

#include "common.h"

#include <cmath>
#include <string>

namespace mpscheck::convnets {

namespace nn = torch::nn;

namespace {

// The B0 stage table: expand ratio, kernel, stride, in, out, layers.
struct StageConfig {
  int64_t expand, kernel, stride, in, out, layers;
};
const StageConfig kStagesB0[] = {{1, 3, 1, 32, 16, 1},  {6, 3, 2, 16, 24, 2},  {6, 5, 2, 24, 40, 2},
                                 {6, 3, 2, 40, 80, 3},  {6, 5, 1, 80, 112, 3}, {6, 5, 2, 112, 192, 4},
                                 {6, 3, 1, 192, 320, 1}};

// Channels rounded to a multiple of 8, never below 90% of the scaled value (torchvision's _make_divisible).
int64_t round_channels(double channels, double width_mult) {
  const double v = channels * width_mult;
  int64_t rounded = std::max<int64_t>(8, static_cast<int64_t>(v + 4) / 8 * 8);
  if (rounded < 0.9 * v) rounded += 8;
  return rounded;
}

nn::Sequential conv_bn_act(int64_t in, int64_t out, int64_t k, int64_t stride = 1, int64_t groups = 1,
                           bool act = true) {
  nn::Sequential seq(
      nn::Conv2d(nn::Conv2dOptions(in, out, k).stride(stride).padding((k - 1) / 2).groups(groups).bias(false)),
      nn::BatchNorm2d(out));
  if (act) seq->push_back(nn::SiLU());
  return seq;
}

struct SqueezeExcitationImpl : nn::Module {
  SqueezeExcitationImpl(int64_t channels, int64_t squeeze)
      : fc1(register_module("fc1", nn::Conv2d(nn::Conv2dOptions(channels, squeeze, 1)))),
        fc2(register_module("fc2", nn::Conv2d(nn::Conv2dOptions(squeeze, channels, 1)))) {}

  torch::Tensor forward(torch::Tensor x) {
    torch::Tensor scale = torch::adaptive_avg_pool2d(x, {1, 1});
    scale = torch::sigmoid(fc2->forward(torch::silu(fc1->forward(scale))));
    return x * scale;
  }

  nn::Conv2d fc1, fc2;
};
TORCH_MODULE(SqueezeExcitation);

// Inverted residual: 1x1 expand, kxk depthwise, squeeze-excitation, 1x1 project, skip when shapes allow.
struct MBConvImpl : nn::Module {
  MBConvImpl(std::string path, int64_t in, int64_t out, int64_t expand, int64_t kernel, int64_t stride)
      : path(std::move(path)), use_residual(stride == 1 && in == out) {
    const int64_t hidden = in * expand;
    if (expand != 1) expansion = register_module("expand", conv_bn_act(in, hidden, 1));
    depthwise = register_module("depthwise", conv_bn_act(hidden, hidden, kernel, stride, hidden));
    se = register_module("se", SqueezeExcitation(hidden, std::max<int64_t>(1, in / 4)));
    project = register_module("project", conv_bn_act(hidden, out, 1, 1, 1, /*act=*/false));
  }

  torch::Tensor forward(torch::Tensor x) {
    auto tap = [this](const char* name, torch::Tensor t) { return model::tap(path + "." + name, t); };
    torch::Tensor out = expansion ? tap("expand", expansion->forward(x)) : x;
    out = tap("depthwise", depthwise->forward(out));
    out = tap("se", se->forward(out));
    out = tap("project", project->forward(out));
    return model::tap(path, use_residual ? out + x : out);
  }

  std::string path;
  bool use_residual;
  nn::Sequential expansion{nullptr}, depthwise{nullptr}, project{nullptr};
  SqueezeExcitation se{nullptr};
};
TORCH_MODULE(MBConv);

}  // namespace

EfficientNetImpl::EfficientNetImpl(const EfficientNetConfig& config, int64_t num_classes)
    : stem(register_module("stem", conv_bn_act(3, round_channels(32, config.width_mult), 3, 2))),
      stages(register_module("stages", nn::ModuleList())),
      head(nullptr),
      dropout(register_module("dropout", nn::Dropout(config.dropout))),
      classifier(nullptr) {
  int64_t in = round_channels(32, config.width_mult);
  int stage_index = 0;
  for (const StageConfig& s : kStagesB0) {
    const int64_t out = round_channels(s.out, config.width_mult);
    const auto layers = static_cast<int64_t>(std::ceil(s.layers * config.depth_mult));
    nn::Sequential stage;
    for (int64_t i = 0; i < layers; ++i) {
      // Stage names follow torchvision's features.1 .. features.7.
      const std::string path = "features." + std::to_string(stage_index + 1) + "." + std::to_string(i);
      stage->push_back(MBConv(path, in, out, s.expand, s.kernel, i == 0 ? s.stride : 1));
      in = out;
    }
    stages->push_back(stage);
    ++stage_index;
  }
  head = register_module("head", conv_bn_act(in, 4 * in, 1));
  classifier = register_module("classifier", nn::Linear(4 * in, num_classes));
  init_conv_net(*this);
  torch::NoGradGuard no_grad;
  const double range = 1.0 / std::sqrt(static_cast<double>(num_classes));
  nn::init::uniform_(classifier->weight, -range, range);
  nn::init::zeros_(classifier->bias);
}

torch::Tensor EfficientNetImpl::forward(torch::Tensor x) {
  using model::tap;
  x = tap("features.0", stem->forward(x));
  for (const auto& stage : *stages) x = stage->as<nn::Sequential>()->forward(x);  // every MBConv taps itself
  x = tap("features.8", head->forward(x));
  x = tap("avgpool", torch::adaptive_avg_pool2d(x, {1, 1})).flatten(1);
  return tap("classifier", classifier->forward(dropout->forward(x)));
}

// width, depth, dropout from the paper's compound scaling (torchvision's b0..b7 builders).
EfficientNet efficientnet_b0() { return EfficientNet(EfficientNetConfig{1.0, 1.0, 0.2}); }
EfficientNet efficientnet_b4(double width_mult) { return EfficientNet(EfficientNetConfig{width_mult, 1.8, 0.4}); }

}  // namespace mpscheck::convnets

MPSCHECK_CATALOG(efficientnet_models) {
  using namespace mpscheck;
  // Default 224x224 for both, as the report ran them (B4's native 380 is not what was measured).
  // Quick: 64x64 leaves the stride-32 network a 2x2 map, so training BatchNorm sees 8 values per channel.
  // B4 keeps its depth (1.8x B0's blocks) at half B0's width: at its own 1.4x width (19M weights)
  // one quick training case took 5.4 s here.
  const std::vector<std::string> tags = {"seed", "cnn", "imagenet", "vision", "batchnorm", "depthwise"};
  model::add_model(catalog, convnets::imagenet_classifier<convnets::EfficientNet>(
                                "efficientnet_b0", tags, [](model::Mode) { return convnets::efficientnet_b0(); }, 64));
  model::add_model(catalog, convnets::imagenet_classifier<convnets::EfficientNet>(
                                "efficientnet_b4", tags,
                                [](model::Mode m) { return convnets::efficientnet_b4(m.quick ? 0.5 : 1.4); }, 64));
}

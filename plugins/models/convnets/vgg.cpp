#include "vgg.h"

#include "common.h"

namespace mpscheck::convnets {

namespace nn = torch::nn;

namespace {

constexpr int64_t M = 0;  // a max pool in the config table

// torchvision's cfgs "A", "B", "D", "E".
const std::vector<int64_t> kCfgA = {64, M, 128, M, 256, 256, M, 512, 512, M, 512, 512, M};
const std::vector<int64_t> kCfgB = {64, 64, M, 128, 128, M, 256, 256, M, 512, 512, M, 512, 512, M};
const std::vector<int64_t> kCfgD = {64, 64, M, 128, 128, M, 256, 256, 256, M, 512, 512, 512, M, 512, 512, 512, M};
const std::vector<int64_t> kCfgE = {64,  64,  M,   128, 128, M,   256, 256, 256, 256, M,
                                    512, 512, 512, 512, M,   512, 512, 512, 512, M};

nn::Sequential make_features(const std::vector<int64_t>& cfg, bool batch_norm, int64_t narrow) {
  nn::Sequential seq;
  int64_t channels = 3;
  for (int64_t v : cfg) {
    if (v == M) {
      seq->push_back(nn::MaxPool2d(nn::MaxPool2dOptions(2).stride(2)));
      continue;
    }
    v /= narrow;
    seq->push_back(nn::Conv2d(nn::Conv2dOptions(channels, v, 3).padding(1)));
    if (batch_norm) seq->push_back(nn::BatchNorm2d(v));
    seq->push_back(nn::ReLU());
    channels = v;
  }
  return seq;
}

}  // namespace

VggImpl::VggImpl(const std::vector<int64_t>& cfg, bool batch_norm, int64_t num_classes, int64_t narrow)
    : features(register_module("features", make_features(cfg, batch_norm, narrow))),
      classifier(register_module(
          "classifier", nn::Sequential(nn::Linear(512 / narrow * 7 * 7, 4096 / narrow), nn::ReLU(), nn::Dropout(0.5),
                                       nn::Linear(4096 / narrow, 4096 / narrow), nn::ReLU(), nn::Dropout(0.5),
                                       nn::Linear(4096 / narrow, num_classes)))) {
  TORCH_CHECK(!cfg.empty() && cfg.back() == M, "a VGG config ends with a pool");
  TORCH_CHECK(narrow >= 1 && 64 % narrow == 0, "a VGG narrowing divides 64, not ", narrow);
  init_conv_net(*this);
  torch::NoGradGuard no_grad;
  for (auto& m : classifier->modules(/*include_self=*/false))
    if (auto* fc = m->as<nn::Linear>()) {
      nn::init::normal_(fc->weight, 0, 0.01);
      nn::init::zeros_(fc->bias);
    }
}

torch::Tensor VggImpl::forward(torch::Tensor x) {
  x = forward_tapped("features", features, x);
  // The adaptive pool keeps the classifier's 512*7*7 inputs (over `narrow`) at any image size (quick: 1x1 -> 7x7).
  x = model::tap("avgpool", torch::adaptive_avg_pool2d(x, {7, 7})).flatten(1);
  return forward_tapped("classifier", classifier, x);
}

Vgg vgg11() { return Vgg(kCfgA, false); }
Vgg vgg13() { return Vgg(kCfgB, false); }
Vgg vgg16(int64_t narrow) { return Vgg(kCfgD, false, 1000, narrow); }
Vgg vgg19() { return Vgg(kCfgE, false); }

}  // namespace mpscheck::convnets

MPSCHECK_CATALOG(vgg_models) {
  using namespace mpscheck;
  // Quick: 32x32 images, which the five pools bring to 1x1, through VGG16 at an eighth of every
  // width (2.4M weights). At full width a quick training case took 20 s here, and an inference
  // case 7.9 s for forwards of 0.05 s: each instance a case makes initialises 138M weights.
  // Default training is 8 x 224^2 through the full 138M weights.
  model::add_model(catalog, convnets::imagenet_classifier<convnets::Vgg>(
                                "vgg16", {"seed", "cnn", "imagenet", "vision"},
                                [](model::Mode m) { return convnets::vgg16(m.quick ? 8 : 1); }, 32, 2));
}

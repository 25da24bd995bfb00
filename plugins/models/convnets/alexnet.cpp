#include "alexnet.h"

#include "common.h"

namespace mpscheck::convnets {

namespace nn = torch::nn;

AlexNetImpl::AlexNetImpl(int64_t num_classes, double dropout, int64_t narrow) : features(nullptr), classifier(nullptr) {
  TORCH_CHECK(narrow >= 1 && 64 % narrow == 0, "an AlexNet narrowing divides 64, not ", narrow);
  const int64_t c1 = 64 / narrow, c2 = 192 / narrow, c3 = 384 / narrow, c4 = 256 / narrow, hidden = 4096 / narrow;
  features = register_module("features", nn::Sequential(nn::Conv2d(nn::Conv2dOptions(3, c1, 11).stride(4).padding(2)),
                                                        nn::ReLU(), nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2)),
                                                        nn::Conv2d(nn::Conv2dOptions(c1, c2, 5).padding(2)), nn::ReLU(),
                                                        nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2)),
                                                        nn::Conv2d(nn::Conv2dOptions(c2, c3, 3).padding(1)), nn::ReLU(),
                                                        nn::Conv2d(nn::Conv2dOptions(c3, c4, 3).padding(1)), nn::ReLU(),
                                                        nn::Conv2d(nn::Conv2dOptions(c4, c4, 3).padding(1)), nn::ReLU(),
                                                        nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2))));
  classifier =
      register_module("classifier", nn::Sequential(nn::Dropout(dropout), nn::Linear(c4 * 6 * 6, hidden), nn::ReLU(),
                                                   nn::Dropout(dropout), nn::Linear(hidden, hidden), nn::ReLU(),
                                                   nn::Linear(hidden, num_classes)));
}

torch::Tensor AlexNetImpl::forward(torch::Tensor x) {
  x = forward_tapped("features", features, x);
  // The adaptive pool keeps the classifier at 256*6*6 inputs (over `narrow`) at any image size (quick: 1x1 -> 6x6).
  x = model::tap("avgpool", torch::adaptive_avg_pool2d(x, {6, 6})).flatten(1);
  return forward_tapped("classifier", classifier, x);
}

}  // namespace mpscheck::convnets

MPSCHECK_CATALOG(alexnet_models) {
  using namespace mpscheck;
  // Quick: 64x64 is about the smallest image the three stride-2 pools leave a pixel of, through
  // AlexNet at a quarter of every width (4.4M weights instead of 61M).
  model::add_model(catalog, convnets::imagenet_classifier<convnets::AlexNet>(
                                "alexnet", {"seed", "cnn", "imagenet", "vision"},
                                [](model::Mode m) { return convnets::AlexNet(1000, 0.5, m.quick ? 4 : 1); }, 64));
}

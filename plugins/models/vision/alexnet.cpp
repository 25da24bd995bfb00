#include "alexnet.h"

#include "common.h"

namespace mpscheck::vision {

namespace nn = torch::nn;

AlexNetImpl::AlexNetImpl(int64_t num_classes, double dropout)
    : features(register_module(
          "features",
          nn::Sequential(nn::Conv2d(nn::Conv2dOptions(3, 64, 11).stride(4).padding(2)), nn::ReLU(),
                         nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2)),
                         nn::Conv2d(nn::Conv2dOptions(64, 192, 5).padding(2)), nn::ReLU(),
                         nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2)),
                         nn::Conv2d(nn::Conv2dOptions(192, 384, 3).padding(1)), nn::ReLU(),
                         nn::Conv2d(nn::Conv2dOptions(384, 256, 3).padding(1)), nn::ReLU(),
                         nn::Conv2d(nn::Conv2dOptions(256, 256, 3).padding(1)), nn::ReLU(),
                         nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2))))),
      classifier(register_module(
          "classifier", nn::Sequential(nn::Dropout(dropout), nn::Linear(256 * 6 * 6, 4096), nn::ReLU(),
                                       nn::Dropout(dropout), nn::Linear(4096, 4096), nn::ReLU(),
                                       nn::Linear(4096, num_classes)))) {}

torch::Tensor AlexNetImpl::forward(torch::Tensor x) {
  x = forward_tapped("features", features, x);
  // The adaptive pool keeps the classifier at 9216 inputs whatever the image size (quick: 1x1 -> 6x6).
  x = model::tap("avgpool", torch::adaptive_avg_pool2d(x, {6, 6})).flatten(1);
  return forward_tapped("classifier", classifier, x);
}

}  // namespace mpscheck::vision

MPSCHECK_CATALOG(alexnet_models) {
  using namespace mpscheck;
  // Quick: 64x64 is about the smallest image the three stride-2 pools leave a pixel of.
  vision::add_imagenet_model<vision::AlexNet>(catalog, "alexnet", {"seed", "cnn", "imagenet", "vision"},
                                              [](bool) { return vision::AlexNet(); }, 64);
}

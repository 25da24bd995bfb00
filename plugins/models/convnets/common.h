// Helpers shared by the conv-net families: tapped Sequential stacks, conv-net init, ImageNet defs.
#pragma once

#include <mpscheck/model.hpp>

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

namespace mpscheck::convnets {

// Runs a Sequential child by child, each a layer named "<prefix>.<index>" like torchvision's names.
inline torch::Tensor forward_tapped(const std::string& prefix, torch::nn::Sequential& seq, torch::Tensor x) {
  size_t index = 0;
  for (auto& child : *seq) x = model::layer(prefix + "." + std::to_string(index++), child, x);
  return x;
}

// torchvision's initialisation for conv nets: He-normal (fan_out) convs, unit BatchNorm, zero biases.
inline void init_conv_net(torch::nn::Module& net) {
  torch::NoGradGuard no_grad;
  for (auto& m : net.modules(/*include_self=*/false)) {
    if (auto* conv = m->as<torch::nn::Conv2d>()) {
      torch::nn::init::kaiming_normal_(conv->weight, 0, torch::kFanOut, torch::kReLU);
      if (conv->bias.defined()) torch::nn::init::zeros_(conv->bias);
    } else if (auto* bn = m->as<torch::nn::BatchNorm2d>()) {
      torch::nn::init::ones_(bn->weight);
      torch::nn::init::zeros_(bn->bias);
    }
  }
}

// An ImageNet classifier's def as the reports ran it: 224x224x3 images, batch 1 for inference
// ("batch as small as 1"), batch 8 for training, cross-entropy, SGD momentum 0.9. Quick runs the
// same network on quick_image x quick_image images, batch 2.
template <class Net>
model::ModelDef<Net> imagenet_classifier(const std::string& name, std::vector<std::string> tags,
                                         std::function<Net(model::Mode mode)> build, int64_t quick_image,
                                         int steps = 3) {
  auto def = model::image_classifier<Net>(name, std::move(tags), std::move(build),
                                          {.channels = 3,
                                           .size = 224,
                                           .classes = 1000,
                                           .batch = {.infer = 1, .train = 8, .quick = 2},
                                           .quick_size = quick_image});
  // lr 0.01 rather than the ImageNet recipes' 0.1: a few steps on random labels should not diverge.
  def.optimizer = model::optimizer<torch::optim::SGD>(torch::optim::SGDOptions(0.01).momentum(0.9));
  def.steps = steps;
  return def;
}

}  // namespace mpscheck::convnets

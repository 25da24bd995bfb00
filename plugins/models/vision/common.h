// Helpers shared by the vision families: seeded image batches and tapped Sequential stacks.
#pragma once

#include <mpscheck/model.hpp>

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

namespace mpscheck::vision {

// Images in [0, 1) and class labels, drawn on CPU from the case's generator.
inline model::Batch image_batch(at::Generator& gen, int64_t n, int64_t channels, int64_t size, int64_t classes) {
  return model::Batch{{at::rand({n, channels, size, size}, gen, at::kFloat)},
                      at::randint(0, classes, {n}, gen, at::kLong)};
}

// Runs a Sequential child by child, tapping each output as "<prefix>.<index>" like torchvision's names.
inline torch::Tensor forward_tapped(const std::string& prefix, torch::nn::Sequential& seq, torch::Tensor x) {
  size_t index = 0;
  for (auto& layer : *seq) x = model::tap(prefix + "." + std::to_string(index++), layer.forward(x));
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

}  // namespace mpscheck::vision

namespace mpscheck::vision {

// An ImageNet classifier as the reports ran it: 224x224x3 images, batch 1 for inference ("batch
// as small as 1"), batch 8 for training, cross-entropy, SGD momentum 0.9. Quick runs the same
// network on quick_image x quick_image images, batch 2. Infer and train get their own batch size,
// so the two cases are added here rather than through model::add_model.
template <class Net>
void add_imagenet_model(Catalog& catalog, const std::string& name, std::vector<std::string> tags,
                        std::function<Net(bool quick)> build, int64_t quick_image, int steps = 3) {
  for (bool train : {false, true}) {
    model::ModelDef<Net> def;
    def.name = name;
    def.tags = tags;
    def.build = build;
    const int64_t n = train ? 8 : 1;
    def.batch = [n, quick_image](bool quick, at::Generator& gen) {
      return image_batch(gen, quick ? 2 : n, 3, quick ? quick_image : 224, 1000);
    };
    def.forward = [](Net& net, const model::Batch& b) { return net->forward(b.inputs[0]); };
    def.loss = [](const at::Tensor& out, const model::Batch& b) { return torch::cross_entropy_loss(out, b.target); };
    // lr 0.01 rather than the ImageNet recipes' 0.1: a few steps on random labels should not diverge.
    def.optimizer = [](std::vector<at::Tensor> p) {
      return std::make_unique<torch::optim::SGD>(std::move(p), torch::optim::SGDOptions(0.01).momentum(0.9));
    };
    def.steps = steps;
    def.quick_steps = 2;
    catalog.add(std::make_unique<model::ModelWorkload<Net>>(std::move(def), train));
  }
}

}  // namespace mpscheck::vision

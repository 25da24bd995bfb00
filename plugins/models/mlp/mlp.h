// seed001: the MLP from the "MPS is faster" timing report (1024 -> 512 -> 256 -> 10).
#pragma once

#include <torch/torch.h>

namespace mpscheck::mlp {

struct MlpImpl : torch::nn::Module {
  explicit MlpImpl(std::vector<int64_t> widths = {1024, 512, 256, 10});
  torch::Tensor forward(torch::Tensor x);

  torch::nn::ModuleList layers;
};
TORCH_MODULE(Mlp);

}  // namespace mpscheck::mlp

// Diffusion-style UNet (Ho et al. 2020, the DDPM CIFAR-10 network): sinusoidal timestep
// embedding, ResBlocks with GroupNorm + SiLU and a timestep projection, a down path and an up
// path joined by skip connections, self-attention at the lowest resolution. Training predicts
// the seeded noise of a noised image (MSE), as in DDPM.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace mpscheck::convnets {

struct UNetConfig {
  int64_t image;               // images are image x image; halved once per level after the first
  int64_t channels;            // image channels, in and out
  int64_t base;                // channels at the first level, and the timestep embedding width
  std::vector<int64_t> mults;  // channel multiplier per resolution level
  int64_t blocks;              // ResBlocks per level on the way down (one more on the way up)
  int64_t groups;              // GroupNorm groups
  int64_t heads;               // attention heads at the lowest resolution
  double dropout;              // inside every ResBlock (off in training cases)
};

struct UNetImpl : torch::nn::Module {
  explicit UNetImpl(const UNetConfig& cfg);
  // x: [B, channels, image, image]; timesteps: int64 [B] -> predicted noise, same shape as x
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& timesteps);

  UNetConfig cfg;
  torch::nn::Sequential time_mlp;
  torch::nn::Conv2d conv_in;
  torch::nn::ModuleList down, mid, up;
  torch::nn::GroupNorm norm_out;
  torch::nn::Conv2d conv_out;
};
TORCH_MODULE(UNet);

// Transformer-style sinusoidal embedding of integer timesteps: [B] -> [B, dim], in `dtype`.
torch::Tensor timestep_embedding(const torch::Tensor& timesteps, int64_t dim, c10::ScalarType dtype);

}  // namespace mpscheck::convnets

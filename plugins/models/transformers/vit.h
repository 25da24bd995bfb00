// Vision Transformer (Dosovitskiy et al. 2020, torchvision's vit_b_16): patch embedding as a
// strided conv, class token, learned position embedding, pre-norm encoder blocks, linear head.
// The seed reports' inference set had ViT crash on the GPU while the CPU took 1.855 s.
#pragma once

#include <torch/torch.h>

namespace mpscheck::transformers {

struct VitConfig {
  int64_t image;    // images are image x image, RGB
  int64_t patch;    // patch side; image must be a multiple of it
  int64_t layers;   // encoder blocks
  int64_t width;    // token width
  int64_t heads;    // attention heads per block
  int64_t mlp;      // hidden width of each block's MLP
  int64_t classes;  // logits out
  double dropout;   // after the embeddings, attention and MLP (off in training cases)
};

struct VisionTransformerImpl : torch::nn::Module {
  explicit VisionTransformerImpl(const VitConfig& cfg);
  // images [B, 3, image, image] -> logits [B, classes]
  torch::Tensor forward(const torch::Tensor& images);

  VitConfig cfg;
  torch::nn::Conv2d patch_embed;
  torch::Tensor cls_token, pos_embed;
  torch::nn::Dropout pos_drop;
  torch::nn::ModuleList blocks;
  torch::nn::LayerNorm norm;
  torch::nn::Linear head;
};
TORCH_MODULE(VisionTransformer);

}  // namespace mpscheck::transformers

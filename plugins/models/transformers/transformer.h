// Building blocks shared by the attention families: masks that follow the compute dtype,
// multi-head self-attention written from linear + matmul + softmax, the position-wise MLP,
// and the weight initialisation transformers are trained from.
#pragma once

#include <torch/torch.h>

namespace mpscheck::transformers {

// The most negative finite value of `dtype`. Masked scores get this, never -1e9: -1e9 is -inf
// in float16, and a row with only -inf scores turns softmax into NaN.
double lowest_finite(c10::ScalarType dtype);

// Additive mask [B, 1, 1, T] from a key mask [B, T] (nonzero = attend), in `dtype`.
torch::Tensor padding_mask(const torch::Tensor& keep, c10::ScalarType dtype);
// Additive mask [1, 1, T, T] that hides later positions from earlier ones, in `dtype`.
torch::Tensor causal_mask(int64_t length, c10::ScalarType dtype, c10::Device device);

struct SelfAttentionImpl : torch::nn::Module {
  SelfAttentionImpl(int64_t dim, int64_t heads, double dropout);
  // x: [B, T, dim]; mask: additive, broadcastable to [B, heads, T, T], or undefined.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask = {});

  int64_t heads;
  torch::nn::Linear qkv, proj;
  torch::nn::Dropout attn_drop;
};
TORCH_MODULE(SelfAttention);

struct FeedForwardImpl : torch::nn::Module {
  // approximate: "none" (erf GELU: ViT, BERT) or "tanh" (GPT-2).
  FeedForwardImpl(int64_t dim, int64_t hidden, double dropout, std::string approximate = "none");
  torch::Tensor forward(const torch::Tensor& x);

  std::string approximate;
  torch::nn::Linear fc1, fc2;
  torch::nn::Dropout drop;
};
TORCH_MODULE(FeedForward);

// Pre-norm transformer block, as in ViT's encoder and GPT-2's decoder:
// x + drop(attn(ln1(x), mask)), then x + mlp(ln2(x)). Taps "<path>.attn" and "<path>.mlp".
struct PreNormBlockOptions {
  int64_t width, heads, mlp;         // model width, attention heads, MLP hidden width
  double dropout, eps;               // dropout after attention and in the MLP; LayerNorm epsilon
  std::string approximate = "none";  // the MLP's GELU: "none" (ViT) or "tanh" (GPT-2)
};

struct PreNormBlockImpl : torch::nn::Module {
  PreNormBlockImpl(const PreNormBlockOptions& options, std::string path);
  torch::Tensor forward(torch::Tensor x, const torch::Tensor& mask = {});

  std::string path;
  torch::nn::LayerNorm ln1;
  SelfAttention attn;
  torch::nn::Dropout drop;
  torch::nn::LayerNorm ln2;
  FeedForward mlp;
};
TORCH_MODULE(PreNormBlock);

// Linear and Embedding weights ~ N(0, std), biases 0, LayerNorm 1/0 (BERT's and GPT-2's init).
void init_transformer_weights(torch::nn::Module& net, double std = 0.02);

}  // namespace mpscheck::transformers

// GPT-2 decoder (Radford et al. 2019; HuggingFace GPT2LMHeadModel's layout): token + learned
// position embeddings, pre-norm blocks with causal self-attention and a tanh-GELU MLP, a final
// LayerNorm and an LM head tied to the token embedding. Training: next-token cross-entropy.
#pragma once

#include <torch/torch.h>

namespace mpscheck::transformers {

struct Gpt2Config {
  int64_t vocab;    // token ids are in [0, vocab); the tied LM head scores each of them
  int64_t context;  // the longest sequence: rows of the position embedding
  int64_t layers;   // decoder blocks
  int64_t width;    // model width; the MLP is 4x as wide
  int64_t heads;    // attention heads per block
  double dropout;   // after the embeddings, attention and MLP (off in training cases)
};

struct Gpt2Impl : torch::nn::Module {
  explicit Gpt2Impl(const Gpt2Config& cfg);
  // ids: int64 [B, T] -> logits [B, T, vocab]
  torch::Tensor forward(const torch::Tensor& ids);

  Gpt2Config cfg;
  torch::nn::Embedding token_embed, position_embed;
  torch::nn::Dropout embed_drop;
  torch::nn::ModuleList blocks;
  torch::nn::LayerNorm final_norm;
};
TORCH_MODULE(Gpt2);

}  // namespace mpscheck::transformers

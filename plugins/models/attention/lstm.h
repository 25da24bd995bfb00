// Text classifier: token embedding -> 2-layer LSTM (batch_first) -> last layer's final hidden
// state -> linear. The recurrent family: the same weights applied over every time step.
#pragma once

#include <torch/torch.h>

namespace mpscheck::attention {

struct LstmConfig {
  int64_t vocab, embed, hidden, layers, classes;
  double dropout;
};

struct LstmClassifierImpl : torch::nn::Module {
  explicit LstmClassifierImpl(const LstmConfig& cfg);
  // ids: int64 [B, T] -> logits [B, classes]
  torch::Tensor forward(const torch::Tensor& ids);

  LstmConfig cfg;
  torch::nn::Embedding embed;
  torch::nn::LSTM lstm;
  torch::nn::Dropout drop;
  torch::nn::Linear fc;
};
TORCH_MODULE(LstmClassifier);

}  // namespace mpscheck::attention

// Text classifier: token embedding -> 2-layer LSTM (batch_first) -> last layer's final hidden
// state -> linear. The recurrent family: the same weights applied over every time step.
#pragma once

#include <torch/torch.h>

namespace mpscheck::recurrent {

struct LstmConfig {
  int64_t vocab;    // token ids are in [0, vocab)
  int64_t embed;    // embedding width: the LSTM's input size
  int64_t hidden;   // LSTM state width, and the classifier's input
  int64_t layers;   // stacked LSTM layers
  int64_t classes;  // logits out
  double dropout;   // before the classifier (off in training cases)
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

}  // namespace mpscheck::recurrent

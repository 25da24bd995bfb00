// BERT encoder (Devlin et al. 2018; HuggingFace BertForSequenceClassification's layout): word +
// position + token-type embeddings, post-norm encoder layers with a padding mask, a tanh pooler
// on the [CLS] token and a linear classifier. The vendor benchmark in the seed reports trained
// HuggingFace BERT; training here is sequence classification with cross-entropy.
#pragma once

#include <torch/torch.h>

namespace mpscheck::transformers {

struct BertConfig {
  int64_t vocab;          // token ids are in [0, vocab); id 0 is [PAD]
  int64_t max_positions;  // the longest sequence: rows of the position embedding
  int64_t type_vocab;     // token types (segments); every token here is type 0
  int64_t layers;         // encoder layers
  int64_t width;          // hidden width
  int64_t heads;          // attention heads per layer
  int64_t ffn;            // hidden width of each layer's feed-forward
  int64_t labels;         // classifier logits out
  double dropout;         // after embeddings, attention, feed-forward and pooler (off in training cases)
};

struct BertImpl : torch::nn::Module {
  explicit BertImpl(const BertConfig& cfg);
  // ids, keep: int64 [B, T]; keep is 1 for real tokens, 0 for padding. -> logits [B, labels]
  torch::Tensor forward(const torch::Tensor& ids, const torch::Tensor& keep);

  BertConfig cfg;
  torch::nn::Embedding word_embed, position_embed, type_embed;
  torch::nn::LayerNorm embed_norm;
  torch::nn::Dropout embed_drop;
  torch::nn::ModuleList layers;
  torch::nn::Linear pooler;
  torch::nn::Dropout classifier_drop;
  torch::nn::Linear classifier;
};
TORCH_MODULE(Bert);

}  // namespace mpscheck::transformers

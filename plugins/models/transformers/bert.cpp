#include "bert.h"

#include "../sizes.h"
#include "transformer.h"

#include <mpscheck/model.hpp>

namespace mpscheck::transformers {

namespace {

torch::nn::LayerNormOptions bert_norm(int64_t width) { return torch::nn::LayerNormOptions({width}).eps(1e-12); }

// Post-norm encoder layer: ln(x + attn(x)), then ln(x + ffn(x)).
struct BertLayerImpl : torch::nn::Module {
  BertLayerImpl(const BertConfig& cfg, std::string path)
      : path(std::move(path)),
        attn(register_module("attn", SelfAttention(cfg.width, cfg.heads, cfg.dropout))),
        attn_drop(register_module("attn_drop", torch::nn::Dropout(cfg.dropout))),
        attn_norm(register_module("attn_norm", torch::nn::LayerNorm(bert_norm(cfg.width)))),
        ffn(register_module("ffn", FeedForward(cfg.width, cfg.ffn, cfg.dropout))),
        ffn_norm(register_module("ffn_norm", torch::nn::LayerNorm(bert_norm(cfg.width)))) {}

  torch::Tensor forward(torch::Tensor x, const torch::Tensor& mask) {
    x = model::tap(path + ".attn", attn_norm->forward(x + attn_drop->forward(attn->forward(x, mask))));
    return model::tap(path + ".ffn", ffn_norm->forward(x + ffn->forward(x)));
  }

  std::string path;
  SelfAttention attn;
  torch::nn::Dropout attn_drop;
  torch::nn::LayerNorm attn_norm;
  FeedForward ffn;
  torch::nn::LayerNorm ffn_norm;
};
TORCH_MODULE(BertLayer);

}  // namespace

BertImpl::BertImpl(const BertConfig& cfg)
    : cfg(cfg),
      word_embed(register_module("word_embed", torch::nn::Embedding(cfg.vocab, cfg.width))),
      position_embed(register_module("position_embed", torch::nn::Embedding(cfg.max_positions, cfg.width))),
      type_embed(register_module("type_embed", torch::nn::Embedding(cfg.type_vocab, cfg.width))),
      embed_norm(register_module("embed_norm", torch::nn::LayerNorm(bert_norm(cfg.width)))),
      embed_drop(register_module("embed_drop", torch::nn::Dropout(cfg.dropout))),
      layers(register_module("layers", torch::nn::ModuleList())),
      pooler(register_module("pooler", torch::nn::Linear(cfg.width, cfg.width))),
      classifier_drop(register_module("classifier_drop", torch::nn::Dropout(cfg.dropout))),
      classifier(register_module("classifier", torch::nn::Linear(cfg.width, cfg.labels))) {
  for (int64_t i = 0; i < cfg.layers; ++i) layers->push_back(BertLayer(cfg, "layers." + std::to_string(i)));
  init_transformer_weights(*this);
}

torch::Tensor BertImpl::forward(const torch::Tensor& ids, const torch::Tensor& keep) {
  using model::tap;
  TORCH_CHECK(ids.size(1) <= cfg.max_positions, "sequence of ", ids.size(1), " tokens is longer than ",
              cfg.max_positions, " positions");
  auto positions = torch::arange(ids.size(1), ids.options()).unsqueeze(0);
  auto x = word_embed->forward(ids) + position_embed->forward(positions) + type_embed->forward(torch::zeros_like(ids));
  x = tap("embed", embed_drop->forward(embed_norm->forward(x)));
  // The mask is built here, in the dtype the model computes in (its weights' dtype).
  const auto mask = padding_mask(keep, x.scalar_type());
  for (const auto& layer : *layers) x = layer->as<BertLayer>()->forward(x, mask);
  auto pooled = tap("pooler", torch::tanh(pooler->forward(x.select(1, 0))));
  return tap("classifier", classifier->forward(classifier_drop->forward(pooled)));
}

}  // namespace mpscheck::transformers

namespace {

using mpscheck::models::Size;
using mpscheck::transformers::BertConfig;

// bert_small is Google's BERT-Small (L=4, H=512); quick: two layers, width 64, 16 tokens.
// Training runs 2 sequences of 32 (base) or 64 (small) tokens so its steps fit a CPU case.
constexpr BertConfig kBertBase = {.vocab = 30522,
                                  .max_positions = 512,
                                  .type_vocab = 2,
                                  .layers = 12,
                                  .width = 768,
                                  .heads = 12,
                                  .ffn = 3072,
                                  .labels = 2,
                                  .dropout = 0.1};
constexpr BertConfig kBertSmall = {.vocab = 30522,
                                   .max_positions = 512,
                                   .type_vocab = 2,
                                   .layers = 4,
                                   .width = 512,
                                   .heads = 8,
                                   .ffn = 2048,
                                   .labels = 2,
                                   .dropout = 0.1};
const mpscheck::models::Sizes<BertConfig> kBertModels[] = {
    {.name = "bert_base",
     .infer = {.config = kBertBase, .batch = 1, .length = 128},
     .train = {.config = kBertBase, .batch = 2, .length = 32},
     .quick = {.config = {.vocab = 1000,
                          .max_positions = 64,
                          .type_vocab = 2,
                          .layers = 2,
                          .width = 64,
                          .heads = 4,
                          .ffn = 128,
                          .labels = 2,
                          .dropout = 0.1},
               .batch = 2,
               .length = 16}},
    {.name = "bert_small",
     .infer = {.config = kBertSmall, .batch = 1, .length = 128},
     .train = {.config = kBertSmall, .batch = 2, .length = 64},
     .quick = {.config = {.vocab = 1000,
                          .max_positions = 64,
                          .type_vocab = 2,
                          .layers = 2,
                          .width = 48,
                          .heads = 4,
                          .ffn = 96,
                          .labels = 2,
                          .dropout = 0.1},
               .batch = 2,
               .length = 16}},
};

// Token ids with right padding: with one row it is padded after 3/4 of the sequence; with more,
// row 0 is full and later rows are progressively shorter.
mpscheck::model::Batch bert_batch(const Size<BertConfig>& size, at::Generator& gen) {
  const int64_t n = size.batch, t = size.length;
  auto ids = at::randint(1, size.config.vocab, {n, t}, gen, at::kLong);
  auto keep = at::ones({n, t}, at::kLong);
  for (int64_t r = 0; r < n; ++r) {
    const int64_t len = n == 1 ? t * 3 / 4 : t - r * t / (2 * n);
    keep[r].slice(0, len).zero_();
    ids[r].slice(0, len).zero_();  // [PAD] is id 0
  }
  return {{ids, keep}, at::randint(0, size.config.labels, {n}, gen, at::kLong)};
}

}  // namespace

MPSCHECK_CATALOG(bert_models) {
  using namespace mpscheck;
  for (const models::Sizes<BertConfig>& sizes : kBertModels) {
    model::ModelDef<transformers::Bert> def;
    def.name = sizes.name;
    def.tags = {"bert", "attention", "text"};
    def.loss = model::cross_entropy;
    // Fine-tuning set-up: AdamW at 2e-5.
    def.optimizer = model::optimizer<torch::optim::AdamW>(torch::optim::AdamWOptions(2e-5).weight_decay(0.01));
    def.steps = 3;
    def.build = [sizes](model::Mode m) { return transformers::Bert(sizes.of(m).config); };
    def.batch = [sizes](model::Mode m, at::Generator& gen) { return bert_batch(sizes.of(m), gen); };
    model::add_model(catalog, def);
  }
}

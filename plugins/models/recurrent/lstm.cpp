#include "lstm.h"

#include "../sizes.h"

#include <mpscheck/model.hpp>

namespace mpscheck::recurrent {

// No dropout inside the LSTM: its masks are drawn inside the op, where mpscheck cannot switch
// them off for training cases; a Dropout module before the classifier takes its place.
LstmClassifierImpl::LstmClassifierImpl(const LstmConfig& cfg)
    : cfg(cfg),
      embed(register_module("embed", torch::nn::Embedding(cfg.vocab, cfg.embed))),
      lstm(register_module(
          "lstm",
          torch::nn::LSTM(torch::nn::LSTMOptions(cfg.embed, cfg.hidden).num_layers(cfg.layers).batch_first(true)))),
      drop(register_module("drop", torch::nn::Dropout(cfg.dropout))),
      fc(register_module("fc", torch::nn::Linear(cfg.hidden, cfg.classes))) {}

torch::Tensor LstmClassifierImpl::forward(const torch::Tensor& ids) {
  using model::tap;
  auto x = tap("embed", embed->forward(ids));
  auto [sequence, state] = lstm->forward(x);
  tap("lstm", sequence);
  auto last = tap("lstm.last_hidden", std::get<0>(state)[cfg.layers - 1]);  // h_n of the top layer: [B, hidden]
  return tap("fc", fc->forward(drop->forward(last)));
}

}  // namespace mpscheck::recurrent

namespace {

using mpscheck::recurrent::LstmConfig;

// A news-topic classifier: 20k vocabulary, 4 classes, 128-token texts.
constexpr LstmConfig kLstmText = {
    .vocab = 20000, .embed = 128, .hidden = 256, .layers = 2, .classes = 4, .dropout = 0.2};
const mpscheck::models::Sizes<LstmConfig> kLstmModels[] = {
    {.name = "lstm_text",
     .infer = {.config = kLstmText, .batch = 8, .length = 128},
     .train = {.config = kLstmText, .batch = 16, .length = 128},
     .quick = {.config = {.vocab = 200, .embed = 16, .hidden = 32, .layers = 2, .classes = 4, .dropout = 0.2},
               .batch = 2,
               .length = 12}},
};

mpscheck::model::Batch lstm_batch(const mpscheck::models::Size<LstmConfig>& size, at::Generator& gen) {
  return {{at::randint(0, size.config.vocab, {size.batch, size.length}, gen, at::kLong)},
          at::randint(0, size.config.classes, {size.batch}, gen, at::kLong)};
}

}  // namespace

MPSCHECK_CATALOG(lstm_models) {
  using namespace mpscheck;
  for (const models::Sizes<LstmConfig>& sizes : kLstmModels) {
    model::ModelDef<recurrent::LstmClassifier> def;
    def.name = sizes.name;
    def.tags = {"lstm", "recurrent", "text"};
    def.loss = model::cross_entropy;
    def.optimizer = model::optimizer<torch::optim::Adam>(torch::optim::AdamOptions(1e-3));
    def.build = [sizes](model::Mode m) { return recurrent::LstmClassifier(sizes.of(m).config); };
    def.batch = [sizes](model::Mode m, at::Generator& gen) { return lstm_batch(sizes.of(m), gen); };
    model::add_model(catalog, def);
  }
}

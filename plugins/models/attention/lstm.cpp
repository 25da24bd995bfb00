#include "lstm.h"

#include "cases.h"

#include <mpscheck/model.hpp>

namespace mpscheck::attention {

// No dropout inside the LSTM: its masks are drawn inside the op, where mpscheck cannot switch
// them off for training cases; a Dropout module before the classifier takes its place.
LstmClassifierImpl::LstmClassifierImpl(const LstmConfig& cfg)
    : cfg(cfg),
      embed(register_module("embed", torch::nn::Embedding(cfg.vocab, cfg.embed))),
      lstm(register_module(
          "lstm", torch::nn::LSTM(torch::nn::LSTMOptions(cfg.embed, cfg.hidden).num_layers(cfg.layers).batch_first(true)))),
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

}  // namespace mpscheck::attention

namespace {

using mpscheck::attention::LstmConfig;

struct LstmVariant {
  const char* name;
  LstmConfig full, quick;
  int64_t length, infer_batch, train_batch;
};

// A news-topic classifier: 20k vocabulary, 4 classes, 128-token texts.
const LstmVariant kLstmVariants[] = {
    {.name = "lstm_text",
     .full = {.vocab = 20000, .embed = 128, .hidden = 256, .layers = 2, .classes = 4, .dropout = 0.2},
     .quick = {.vocab = 200, .embed = 16, .hidden = 32, .layers = 2, .classes = 4, .dropout = 0.2},
     .length = 128, .infer_batch = 8, .train_batch = 16},
};

mpscheck::model::ModelDef<mpscheck::attention::LstmClassifier> lstm_def(const LstmVariant& v, bool train) {
  using namespace mpscheck;
  model::ModelDef<attention::LstmClassifier> def;
  def.name = v.name;
  def.tags = {"lstm", "recurrent", "text"};
  def.build = [v](bool quick) { return attention::LstmClassifier(quick ? v.quick : v.full); };
  def.batch = [v, train](bool quick, at::Generator& gen) {
    const LstmConfig& c = quick ? v.quick : v.full;
    const int64_t n = quick ? 2 : train ? v.train_batch : v.infer_batch, t = quick ? 12 : v.length;
    return model::Batch{{at::randint(0, c.vocab, {n, t}, gen, at::kLong)}, at::randint(0, c.classes, {n}, gen, at::kLong)};
  };
  def.forward = [](attention::LstmClassifier& net, const model::Batch& b) { return net->forward(b.inputs[0]); };
  def.loss = [](const at::Tensor& out, const model::Batch& b) { return torch::cross_entropy_loss(out, b.target); };
  def.optimizer = [](std::vector<at::Tensor> p) {
    return std::make_unique<torch::optim::Adam>(std::move(p), torch::optim::AdamOptions(1e-3));
  };
  return def;
}

}  // namespace

MPSCHECK_CATALOG(lstm_models) {
  for (const LstmVariant& v : kLstmVariants)
    mpscheck::attention::add_model(catalog, lstm_def(v, false), lstm_def(v, true));
}

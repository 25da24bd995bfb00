#include "gpt2.h"

#include "cases.h"
#include "transformer.h"

#include <mpscheck/model.hpp>

#include <cmath>

namespace mpscheck::attention {

Gpt2Impl::Gpt2Impl(const Gpt2Config& cfg)
    : cfg(cfg),
      token_embed(register_module("token_embed", torch::nn::Embedding(cfg.vocab, cfg.width))),
      position_embed(register_module("position_embed", torch::nn::Embedding(cfg.context, cfg.width))),
      embed_drop(register_module("embed_drop", torch::nn::Dropout(cfg.dropout))),
      blocks(register_module("blocks", torch::nn::ModuleList())),
      final_norm(register_module("final_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({cfg.width}).eps(1e-5)))) {
  const PreNormBlockOptions block{.width = cfg.width, .heads = cfg.heads, .mlp = 4 * cfg.width, .dropout = cfg.dropout,
                                  .eps = 1e-5, .approximate = "tanh"};
  for (int64_t i = 0; i < cfg.layers; ++i) blocks->push_back(PreNormBlock(block, "blocks." + std::to_string(i)));
  init_transformer_weights(*this);
  // GPT-2 scales the residual projections by 1/sqrt(2 * layers) so the residual stream stays O(1).
  torch::NoGradGuard no_grad;
  for (const auto& p : named_parameters())
    if (p.key().find("proj.weight") != std::string::npos || p.key().find("fc2.weight") != std::string::npos)
      p.value().normal_(0.0, 0.02 / std::sqrt(2.0 * cfg.layers));
}

torch::Tensor Gpt2Impl::forward(const torch::Tensor& ids) {
  using model::tap;
  const int64_t t = ids.size(1);
  TORCH_CHECK(t <= cfg.context, "sequence of ", t, " tokens is longer than the context of ", cfg.context);
  auto positions = torch::arange(t, ids.options()).unsqueeze(0);
  auto x = tap("embed", embed_drop->forward(token_embed->forward(ids) + position_embed->forward(positions)));
  const auto mask = causal_mask(t, x.scalar_type(), x.device());
  for (const auto& block : *blocks) x = block->as<PreNormBlock>()->forward(x, mask);
  x = tap("final_norm", final_norm->forward(x));
  return tap("lm_head", torch::matmul(x, token_embed->weight.t()));  // tied to the token embedding
}

}  // namespace mpscheck::attention

namespace {

using mpscheck::attention::Gpt2Config;

struct Gpt2Variant {
  const char* name;
  Gpt2Config full, train, quick;  // train: the architecture at a size whose steps fit a CPU case
  int64_t length, infer_batch, train_batch, train_length;
};

// gpt2 is GPT-2 small (124M); gpt2_tiny keeps its vocabulary at 4 layers of width 256.
// Training runs 2 sequences of 32 (small) or 64 (tiny) tokens, and gpt2 trains DistilGPT-2's
// 6 layers: at 12 layers a step took ~8 s and the case over 4 minutes on the shared 2 cores.
const Gpt2Variant kGpt2Variants[] = {
    {.name = "gpt2",
     .full = {.vocab = 50257, .context = 1024, .layers = 12, .width = 768, .heads = 12, .dropout = 0.1},
     .train = {.vocab = 50257, .context = 1024, .layers = 6, .width = 768, .heads = 12, .dropout = 0.1},
     .quick = {.vocab = 512, .context = 32, .layers = 2, .width = 64, .heads = 4, .dropout = 0.1},
     .length = 128, .infer_batch = 1, .train_batch = 2, .train_length = 32},
    {.name = "gpt2_tiny",
     .full = {.vocab = 50257, .context = 256, .layers = 4, .width = 256, .heads = 4, .dropout = 0.1},
     .train = {.vocab = 50257, .context = 256, .layers = 4, .width = 256, .heads = 4, .dropout = 0.1},
     .quick = {.vocab = 512, .context = 32, .layers = 2, .width = 32, .heads = 2, .dropout = 0.1},
     .length = 128, .infer_batch = 1, .train_batch = 2, .train_length = 64},
};

// The sequence is its own target, shifted by one token.
mpscheck::model::Batch gpt2_batch(const Gpt2Config& c, int64_t n, int64_t t, at::Generator& gen) {
  auto ids = at::randint(0, c.vocab, {n, t + 1}, gen, at::kLong);
  return {{ids.slice(1, 0, t).contiguous()}, ids.slice(1, 1).contiguous()};
}

mpscheck::model::ModelDef<mpscheck::attention::Gpt2> gpt2_def(const Gpt2Variant& v, bool train) {
  using namespace mpscheck;
  model::ModelDef<attention::Gpt2> def;
  def.name = v.name;
  def.tags = {"gpt2", "attention", "text", "causal"};
  const Gpt2Config& full = train ? v.train : v.full;
  def.build = [v, full](bool quick) { return attention::Gpt2(quick ? v.quick : full); };
  def.batch = [v, train](bool quick, at::Generator& gen) {
    if (quick) return gpt2_batch(v.quick, 2, 16, gen);
    return train ? gpt2_batch(v.train, v.train_batch, v.train_length, gen) : gpt2_batch(v.full, v.infer_batch, v.length, gen);
  };
  def.forward = [](attention::Gpt2& net, const model::Batch& b) { return net->forward(b.inputs[0]); };
  def.loss = [](const at::Tensor& logits, const model::Batch& b) {
    return torch::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), b.target.reshape({-1}));
  };
  def.optimizer = [](std::vector<at::Tensor> p) {
    return std::make_unique<torch::optim::AdamW>(std::move(p), torch::optim::AdamWOptions(3e-4).weight_decay(0.1));
  };
  def.steps = train ? 2 : 3;
  return def;
}

}  // namespace

MPSCHECK_CATALOG(gpt2_models) {
  for (const Gpt2Variant& v : kGpt2Variants)
    mpscheck::attention::add_model(catalog, gpt2_def(v, false), gpt2_def(v, true));
}

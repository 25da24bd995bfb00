#include "gpt2.h"

#include "../sizes.h"
#include "transformer.h"

#include <mpscheck/model.hpp>

#include <cmath>

namespace mpscheck::transformers {

Gpt2Impl::Gpt2Impl(const Gpt2Config& cfg)
    : cfg(cfg),
      token_embed(register_module("token_embed", torch::nn::Embedding(cfg.vocab, cfg.width))),
      position_embed(register_module("position_embed", torch::nn::Embedding(cfg.context, cfg.width))),
      embed_drop(register_module("embed_drop", torch::nn::Dropout(cfg.dropout))),
      blocks(register_module("blocks", torch::nn::ModuleList())),
      final_norm(
          register_module("final_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({cfg.width}).eps(1e-5)))) {
  const PreNormBlockOptions block{.width = cfg.width,
                                  .heads = cfg.heads,
                                  .mlp = 4 * cfg.width,
                                  .dropout = cfg.dropout,
                                  .eps = 1e-5,
                                  .approximate = "tanh"};
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

}  // namespace mpscheck::transformers

namespace {

using mpscheck::transformers::Gpt2Config;

// gpt2 is GPT-2 small (124M); gpt2_tiny keeps its vocabulary at 4 layers of width 256.
// Training runs 2 sequences of 32 (small) or 64 (tiny) tokens, and gpt2 trains DistilGPT-2's
// 6 layers: at 12 layers a step took ~8 s and the case over 4 minutes on the shared 2 cores.
// gpt2_tiny infers and trains one network; only the batch and the sequence length differ.
constexpr Gpt2Config kGpt2Tiny = {
    .vocab = 50257, .context = 256, .layers = 4, .width = 256, .heads = 4, .dropout = 0.1};
const mpscheck::models::Sizes<Gpt2Config> kGpt2Models[] = {
    {.name = "gpt2",
     .infer = {.config = {.vocab = 50257, .context = 1024, .layers = 12, .width = 768, .heads = 12, .dropout = 0.1},
               .batch = 1,
               .length = 128},
     .train = {.config = {.vocab = 50257, .context = 1024, .layers = 6, .width = 768, .heads = 12, .dropout = 0.1},
               .batch = 2,
               .length = 32},
     .quick = {.config = {.vocab = 512, .context = 32, .layers = 2, .width = 64, .heads = 4, .dropout = 0.1},
               .batch = 2,
               .length = 16}},
    {.name = "gpt2_tiny",
     .infer = {.config = kGpt2Tiny, .batch = 1, .length = 128},
     .train = {.config = kGpt2Tiny, .batch = 2, .length = 64},
     .quick = {.config = {.vocab = 512, .context = 32, .layers = 2, .width = 32, .heads = 2, .dropout = 0.1},
               .batch = 2,
               .length = 16}},
};

// The sequence is its own target, shifted by one token.
mpscheck::model::Batch gpt2_batch(const mpscheck::models::Size<Gpt2Config>& size, at::Generator& gen) {
  auto ids = at::randint(0, size.config.vocab, {size.batch, size.length + 1}, gen, at::kLong);
  return {{ids.slice(1, 0, size.length).contiguous()}, ids.slice(1, 1).contiguous()};
}

}  // namespace

MPSCHECK_CATALOG(gpt2_models) {
  using namespace mpscheck;
  for (const models::Sizes<Gpt2Config>& sizes : kGpt2Models) {
    model::ModelDef<transformers::Gpt2> def;
    def.name = sizes.name;
    def.tags = {"gpt2", "attention", "text", "causal"};
    def.loss = [](const at::Tensor& logits, const model::Batch& b) {
      return torch::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), b.target.reshape({-1}));
    };
    def.optimizer = model::optimizer<torch::optim::AdamW>(torch::optim::AdamWOptions(3e-4).weight_decay(0.1));
    def.steps = 2;
    def.build = [sizes](model::Mode m) { return transformers::Gpt2(sizes.of(m).config); };
    def.batch = [sizes](model::Mode m, at::Generator& gen) { return gpt2_batch(sizes.of(m), gen); };
    model::add_model(catalog, def);
  }
}

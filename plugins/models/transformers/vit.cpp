#include "vit.h"

#include "../sizes.h"
#include "transformer.h"

#include <mpscheck/model.hpp>

namespace mpscheck::transformers {

VisionTransformerImpl::VisionTransformerImpl(const VitConfig& cfg)
    : cfg(cfg),
      patch_embed(register_module(
          "patch_embed", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, cfg.width, cfg.patch).stride(cfg.patch)))),
      pos_drop(register_module("pos_drop", torch::nn::Dropout(cfg.dropout))),
      blocks(register_module("blocks", torch::nn::ModuleList())),
      norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({cfg.width}).eps(1e-6)))),
      head(register_module("head", torch::nn::Linear(cfg.width, cfg.classes))) {
  TORCH_CHECK(cfg.image % cfg.patch == 0, "image size ", cfg.image, " is not a multiple of patch ", cfg.patch);
  const int64_t tokens = (cfg.image / cfg.patch) * (cfg.image / cfg.patch) + 1;
  cls_token = register_parameter("cls_token", torch::zeros({1, 1, cfg.width}));
  // torchvision draws the position embedding from N(0, 0.02).
  pos_embed = register_parameter("pos_embed", torch::randn({1, tokens, cfg.width}) * 0.02);
  const PreNormBlockOptions block{
      .width = cfg.width, .heads = cfg.heads, .mlp = cfg.mlp, .dropout = cfg.dropout, .eps = 1e-6};
  for (int64_t i = 0; i < cfg.layers; ++i) blocks->push_back(PreNormBlock(block, "blocks." + std::to_string(i)));
}

torch::Tensor VisionTransformerImpl::forward(const torch::Tensor& images) {
  using model::tap;
  auto x = tap("patch_embed", patch_embed->forward(images).flatten(2).transpose(1, 2));  // [B, N, C]
  x = torch::cat({cls_token.expand({x.size(0), -1, -1}), x}, 1) + pos_embed;
  x = tap("embed", pos_drop->forward(x));
  for (const auto& block : *blocks) x = block->as<PreNormBlock>()->forward(x);
  x = tap("norm", norm->forward(x));
  return tap("head", head->forward(x.select(1, 0)));
}

}  // namespace mpscheck::transformers

namespace {

using mpscheck::transformers::VitConfig;

// vit_b16 trains at 112x112 (50 tokens): at 224 one step is ~100 GFLOP, minutes per case on a CPU.
// quick: the same architecture at a few blocks and a 32x32 image. Inference at batch 1 like the
// seed report; training repeats one small batch.
constexpr VitConfig kVitB16 = {
    .image = 224, .patch = 16, .layers = 12, .width = 768, .heads = 12, .mlp = 3072, .classes = 1000, .dropout = 0.0};
// The same network on smaller images (training), every other field kept.
constexpr VitConfig at_image(VitConfig c, int64_t image) {
  c.image = image;
  return c;
}
static_assert(at_image(kVitB16, 112).image == 112 && at_image(kVitB16, 112).width == 768 &&
              at_image(kVitB16, 112).layers == 12 && at_image(kVitB16, 112).mlp == 3072);
constexpr VitConfig kVitTiny = {
    .image = 224, .patch = 16, .layers = 12, .width = 192, .heads = 3, .mlp = 768, .classes = 1000, .dropout = 0.0};
const mpscheck::models::Sizes<VitConfig> kVitModels[] = {
    {.name = "vit_b16",
     .infer = {.config = kVitB16, .batch = 1},
     .train = {.config = at_image(kVitB16, 112), .batch = 2},
     .quick = {.config = {.image = 32,
                          .patch = 8,
                          .layers = 2,
                          .width = 64,
                          .heads = 4,
                          .mlp = 128,
                          .classes = 10,
                          .dropout = 0.0},
               .batch = 2}},
    {.name = "vit_tiny",
     .infer = {.config = kVitTiny, .batch = 1},
     .train = {.config = kVitTiny, .batch = 2},
     .quick =
         {.config =
              {.image = 32, .patch = 4, .layers = 2, .width = 48, .heads = 3, .mlp = 96, .classes = 10, .dropout = 0.0},
          .batch = 2}},
};

// Standard-normal images (not model::image_batch's [0, 1) ones) and class labels.
mpscheck::model::Batch vit_batch(const mpscheck::models::Size<VitConfig>& size, at::Generator& gen) {
  const VitConfig& c = size.config;
  return {{at::randn({size.batch, 3, c.image, c.image}, gen, at::kFloat)},
          at::randint(0, c.classes, {size.batch}, gen, at::kLong)};
}

}  // namespace

MPSCHECK_CATALOG(vit_models) {
  using namespace mpscheck;
  for (const models::Sizes<VitConfig>& sizes : kVitModels) {
    model::ModelDef<transformers::VisionTransformer> def;
    def.name = sizes.name;
    def.tags = {"seed", "vit", "attention", "vision"};
    def.loss = model::cross_entropy;
    def.optimizer = model::optimizer<torch::optim::AdamW>(torch::optim::AdamWOptions(1e-4));
    def.steps = 3;
    def.build = [sizes](model::Mode m) { return transformers::VisionTransformer(sizes.of(m).config); };
    def.batch = [sizes](model::Mode m, at::Generator& gen) { return vit_batch(sizes.of(m), gen); };
    model::add_model(catalog, def);
  }
}

#include "unet.h"

#include "../sizes.h"
#include "../transformers/transformer.h"

#include <mpscheck/model.hpp>

#include <cmath>

namespace mpscheck::convnets {

namespace {

using transformers::SelfAttention;  // the attention blocks are the transformers' self-attention

torch::nn::Conv2dOptions conv3(int64_t in, int64_t out) { return torch::nn::Conv2dOptions(in, out, 3).padding(1); }

// GN -> SiLU -> conv -> + time projection -> GN -> SiLU -> dropout -> conv, plus a 1x1 skip
// when the channel count changes.
struct ResBlockImpl : torch::nn::Module {
  ResBlockImpl(int64_t in, int64_t out, int64_t time_dim, const UNetConfig& cfg)
      : norm1(register_module("norm1", torch::nn::GroupNorm(cfg.groups, in))),
        conv1(register_module("conv1", torch::nn::Conv2d(conv3(in, out)))),
        time_proj(register_module("time_proj", torch::nn::Linear(time_dim, out))),
        norm2(register_module("norm2", torch::nn::GroupNorm(cfg.groups, out))),
        drop(register_module("drop", torch::nn::Dropout(cfg.dropout))),
        conv2(register_module("conv2", torch::nn::Conv2d(conv3(out, out)))) {
    if (in != out) skip = register_module("skip", torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 1)));
  }

  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& temb) {
    auto h = conv1->forward(torch::silu(norm1->forward(x)));
    h = h + time_proj->forward(torch::silu(temb)).unsqueeze(-1).unsqueeze(-1);
    h = conv2->forward(drop->forward(torch::silu(norm2->forward(h))));
    return (skip ? skip->forward(x) : x) + h;
  }

  torch::nn::GroupNorm norm1;
  torch::nn::Conv2d conv1;
  torch::nn::Linear time_proj;
  torch::nn::GroupNorm norm2;
  torch::nn::Dropout drop;
  torch::nn::Conv2d conv2;
  torch::nn::Conv2d skip{nullptr};
};
TORCH_MODULE(ResBlock);

// Self-attention over the H*W positions of a feature map, with a residual connection.
struct SpatialAttentionImpl : torch::nn::Module {
  SpatialAttentionImpl(int64_t channels, const UNetConfig& cfg)
      : norm(register_module("norm", torch::nn::GroupNorm(cfg.groups, channels))),
        attn(register_module("attn", SelfAttention(channels, cfg.heads, 0.0))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    const auto b = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
    auto tokens = norm->forward(x).flatten(2).transpose(1, 2);  // [B, HW, C]
    return x + attn->forward(tokens).transpose(1, 2).reshape({b, c, h, w});
  }

  torch::nn::GroupNorm norm;
  SelfAttention attn;
};
TORCH_MODULE(SpatialAttention);

struct DownsampleImpl : torch::nn::Module {
  explicit DownsampleImpl(int64_t channels)
      : conv(register_module("conv", torch::nn::Conv2d(conv3(channels, channels).stride(2)))) {}
  torch::Tensor forward(const torch::Tensor& x) { return conv->forward(x); }
  torch::nn::Conv2d conv;
};
TORCH_MODULE(Downsample);

struct UpsampleImpl : torch::nn::Module {
  explicit UpsampleImpl(int64_t channels)
      : conv(register_module("conv", torch::nn::Conv2d(conv3(channels, channels)))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    namespace F = torch::nn::functional;
    auto up = F::interpolate(
        x, F::InterpolateFuncOptions().scale_factor(std::vector<double>{2.0, 2.0}).mode(torch::kNearest));
    return conv->forward(up);
  }
  torch::nn::Conv2d conv;
};
TORCH_MODULE(Upsample);

}  // namespace

torch::Tensor timestep_embedding(const torch::Tensor& timesteps, int64_t dim, c10::ScalarType dtype) {
  // Computed in at least float32 and cast afterwards (as diffusers does): t * freq for t up to
  // 1000 would lose the phase entirely in float16.
  const auto work = dtype == c10::kDouble ? c10::kDouble : c10::kFloat;
  const int64_t half = dim / 2;
  auto opts = torch::TensorOptions().dtype(work).device(timesteps.device());
  auto freqs = torch::exp(torch::arange(half, opts) * (-std::log(10000.0) / static_cast<double>(half)));
  auto args = timesteps.to(work).unsqueeze(1) * freqs.unsqueeze(0);
  return torch::cat({torch::sin(args), torch::cos(args)}, 1).to(dtype);
}

UNetImpl::UNetImpl(const UNetConfig& cfg)
    : cfg(cfg),
      time_mlp(register_module("time_mlp",
                               torch::nn::Sequential(torch::nn::Linear(cfg.base, 4 * cfg.base), torch::nn::SiLU(),
                                                     torch::nn::Linear(4 * cfg.base, 4 * cfg.base)))),
      conv_in(register_module("conv_in", torch::nn::Conv2d(conv3(cfg.channels, cfg.base)))),
      down(register_module("down", torch::nn::ModuleList())),
      mid(register_module("mid", torch::nn::ModuleList())),
      up(register_module("up", torch::nn::ModuleList())),
      norm_out(register_module("norm_out", torch::nn::GroupNorm(cfg.groups, cfg.base))),
      conv_out(register_module("conv_out", torch::nn::Conv2d(conv3(cfg.base, cfg.channels)))) {
  const int64_t time_dim = 4 * cfg.base, levels = static_cast<int64_t>(cfg.mults.size());
  TORCH_CHECK(cfg.image % (int64_t{1} << (levels - 1)) == 0, "image ", cfg.image, " cannot be halved ", levels - 1,
              " times");
  // Down path; remember the channels of every feature map the up path will concatenate.
  std::vector<int64_t> skips{cfg.base};
  int64_t ch = cfg.base;
  for (int64_t level = 0; level < levels; ++level) {
    for (int64_t i = 0; i < cfg.blocks; ++i) {
      down->push_back(ResBlock(ch, cfg.base * cfg.mults[level], time_dim, cfg));
      ch = cfg.base * cfg.mults[level];
      skips.push_back(ch);
    }
    if (level + 1 < levels) {
      down->push_back(Downsample(ch));
      skips.push_back(ch);
    }
  }
  mid->push_back(ResBlock(ch, ch, time_dim, cfg));
  mid->push_back(SpatialAttention(ch, cfg));
  mid->push_back(ResBlock(ch, ch, time_dim, cfg));
  // Up path: one more block per level than the down path, each taking one skip.
  for (int64_t level = levels - 1; level >= 0; --level) {
    for (int64_t i = 0; i <= cfg.blocks; ++i) {
      up->push_back(ResBlock(ch + skips.back(), cfg.base * cfg.mults[level], time_dim, cfg));
      skips.pop_back();
      ch = cfg.base * cfg.mults[level];
    }
    if (level > 0) up->push_back(Upsample(ch));
  }
  TORCH_CHECK(skips.empty(), "UNet skip bookkeeping left ", skips.size(), " feature maps unused");
}

torch::Tensor UNetImpl::forward(const torch::Tensor& x, const torch::Tensor& timesteps) {
  using model::tap;
  auto temb = tap("time_mlp", time_mlp->forward(timestep_embedding(timesteps, cfg.base, x.scalar_type())));
  auto h = tap("conv_in", conv_in->forward(x));
  std::vector<torch::Tensor> skips{h};
  for (size_t i = 0; i < down->size(); ++i) {
    if (auto* block = down[i]->as<ResBlock>())
      h = block->forward(h, temb);
    else
      h = down[i]->as<Downsample>()->forward(h);
    skips.push_back(tap("down." + std::to_string(i), h));
  }
  h = tap("mid.0", mid[0]->as<ResBlock>()->forward(h, temb));
  h = tap("mid.1", mid[1]->as<SpatialAttention>()->forward(h));
  h = tap("mid.2", mid[2]->as<ResBlock>()->forward(h, temb));
  for (size_t i = 0; i < up->size(); ++i) {
    if (auto* block = up[i]->as<ResBlock>()) {
      h = block->forward(torch::cat({h, skips.back()}, 1), temb);
      skips.pop_back();
    } else {
      h = up[i]->as<Upsample>()->forward(h);
    }
    h = tap("up." + std::to_string(i), h);
  }
  return tap("conv_out", conv_out->forward(torch::silu(norm_out->forward(h))));
}

}  // namespace mpscheck::convnets

namespace {

using mpscheck::convnets::UNetConfig;

// unet_ddpm: DDPM's CIFAR-10 layout at width 64 (the paper's is 128) to keep a CPU case near a
// minute; attention at the lowest resolution only.
const UNetConfig kUNetDdpm = {.image = 32,
                              .channels = 3,
                              .base = 64,
                              .mults = {1, 2, 2, 2},
                              .blocks = 2,
                              .groups = 32,
                              .heads = 1,
                              .dropout = 0.1};
const mpscheck::models::Sizes<UNetConfig> kUNetModels[] = {
    {.name = "unet_ddpm",
     .infer = {.config = kUNetDdpm, .batch = 1},
     .train = {.config = kUNetDdpm, .batch = 2},
     .quick = {.config = {.image = 16,
                          .channels = 3,
                          .base = 16,
                          .mults = {1, 2},
                          .blocks = 1,
                          .groups = 4,
                          .heads = 2,
                          .dropout = 0.1},
               .batch = 2}},
};

constexpr int64_t kDiffusionSteps = 1000;

// x_t = sqrt(abar_t) x0 + sqrt(1 - abar_t) noise with DDPM's linear betas; the target is the noise.
mpscheck::model::Batch diffusion_batch(const mpscheck::models::Size<UNetConfig>& size, at::Generator& gen) {
  const UNetConfig& c = size.config;
  const int64_t n = size.batch;
  auto x0 = at::rand({n, c.channels, c.image, c.image}, gen, at::kFloat) * 2 - 1;
  auto noise = at::randn({n, c.channels, c.image, c.image}, gen, at::kFloat);
  auto t = at::randint(0, kDiffusionSteps, {n}, gen, at::kLong);
  auto abar = at::cumprod(1 - at::linspace(1e-4, 0.02, kDiffusionSteps, at::kDouble), 0).index_select(0, t);
  abar = abar.to(at::kFloat).view({n, 1, 1, 1});
  return {{abar.sqrt() * x0 + (1 - abar).sqrt() * noise, t}, noise};
}

}  // namespace

MPSCHECK_CATALOG(unet_models) {
  using namespace mpscheck;
  for (const models::Sizes<UNetConfig>& sizes : kUNetModels) {
    model::ModelDef<convnets::UNet> def;
    def.name = sizes.name;
    def.tags = {"unet", "diffusion", "attention", "vision"};
    def.loss = [](const at::Tensor& out, const model::Batch& b) { return torch::mse_loss(out, b.target); };
    def.optimizer = model::optimizer<torch::optim::Adam>(torch::optim::AdamOptions(2e-4));
    def.steps = 3;
    def.build = [sizes](model::Mode m) { return convnets::UNet(sizes.of(m).config); };
    def.batch = [sizes](model::Mode m, at::Generator& gen) { return diffusion_batch(sizes.of(m), gen); };
    model::add_model(catalog, def);
  }
}

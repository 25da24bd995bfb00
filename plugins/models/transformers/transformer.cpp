#include "transformer.h"

#include <mpscheck/model.hpp>

#include <cmath>
#include <limits>

namespace mpscheck::transformers {

double lowest_finite(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::kHalf: return static_cast<float>(std::numeric_limits<c10::Half>::lowest());
    case c10::kBFloat16: return static_cast<float>(std::numeric_limits<c10::BFloat16>::lowest());
    case c10::kFloat: return std::numeric_limits<float>::lowest();
    case c10::kDouble: return std::numeric_limits<double>::lowest();
    default: TORCH_CHECK(false, "attention masks need a floating compute dtype, got ", dtype);
  }
}

torch::Tensor padding_mask(const torch::Tensor& keep, c10::ScalarType dtype) {
  TORCH_CHECK(keep.dim() == 2, "padding mask must be [batch, length], got ", keep.sizes());
  auto mask = torch::zeros(keep.sizes(), keep.options().dtype(dtype)).masked_fill(keep == 0, lowest_finite(dtype));
  return mask.unsqueeze(1).unsqueeze(2);
}

torch::Tensor causal_mask(int64_t length, c10::ScalarType dtype, c10::Device device) {
  auto pos = torch::arange(length, torch::TensorOptions().dtype(torch::kLong).device(device));
  auto later = pos.unsqueeze(0) > pos.unsqueeze(1);  // [query, key]: key comes after query
  auto mask = torch::zeros({length, length}, torch::TensorOptions().dtype(dtype).device(device));
  return mask.masked_fill(later, lowest_finite(dtype)).unsqueeze(0).unsqueeze(0);
}

SelfAttentionImpl::SelfAttentionImpl(int64_t dim, int64_t heads, double dropout)
    : heads(heads),
      qkv(register_module("qkv", torch::nn::Linear(dim, 3 * dim))),
      proj(register_module("proj", torch::nn::Linear(dim, dim))),
      attn_drop(register_module("attn_drop", torch::nn::Dropout(dropout))) {
  TORCH_CHECK(dim % heads == 0, "width ", dim, " is not divisible by ", heads, " heads");
}

torch::Tensor SelfAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& mask) {
  const int64_t b = x.size(0), t = x.size(1), c = x.size(2), d = c / heads;
  // [B, T, 3C] -> [3, B, heads, T, d]
  auto parts = qkv->forward(x).view({b, t, 3, heads, d}).permute({2, 0, 3, 1, 4});
  auto q = parts[0], k = parts[1], v = parts[2];
  auto scores = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(d)));
  if (mask.defined()) scores = scores + mask;
  auto weights = attn_drop->forward(torch::softmax(scores, -1));
  auto out = torch::matmul(weights, v).transpose(1, 2).reshape({b, t, c});
  return proj->forward(out);
}

FeedForwardImpl::FeedForwardImpl(int64_t dim, int64_t hidden, double dropout, std::string approximate)
    : approximate(std::move(approximate)),
      fc1(register_module("fc1", torch::nn::Linear(dim, hidden))),
      fc2(register_module("fc2", torch::nn::Linear(hidden, dim))),
      drop(register_module("drop", torch::nn::Dropout(dropout))) {}

torch::Tensor FeedForwardImpl::forward(const torch::Tensor& x) {
  return drop->forward(fc2->forward(torch::gelu(fc1->forward(x), approximate)));
}

PreNormBlockImpl::PreNormBlockImpl(const PreNormBlockOptions& o, std::string path)
    : path(std::move(path)),
      ln1(register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({o.width}).eps(o.eps)))),
      attn(register_module("attn", SelfAttention(o.width, o.heads, o.dropout))),
      drop(register_module("drop", torch::nn::Dropout(o.dropout))),
      ln2(register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({o.width}).eps(o.eps)))),
      mlp(register_module("mlp", FeedForward(o.width, o.mlp, o.dropout, o.approximate))) {}

torch::Tensor PreNormBlockImpl::forward(torch::Tensor x, const torch::Tensor& mask) {
  x = model::tap(path + ".attn", x + drop->forward(attn->forward(ln1->forward(x), mask)));
  return model::tap(path + ".mlp", x + mlp->forward(ln2->forward(x)));
}

void init_transformer_weights(torch::nn::Module& net, double std) {
  torch::NoGradGuard no_grad;
  for (const auto& m : net.modules(/*include_self=*/false)) {
    if (auto* linear = m->as<torch::nn::Linear>()) {
      linear->weight.normal_(0.0, std);
      if (linear->bias.defined()) linear->bias.zero_();
    } else if (auto* embedding = m->as<torch::nn::Embedding>()) {
      embedding->weight.normal_(0.0, std);
    } else if (auto* norm = m->as<torch::nn::LayerNorm>()) {
      norm->weight.fill_(1.0);
      norm->bias.zero_();
    }
  }
}

}  // namespace mpscheck::transformers

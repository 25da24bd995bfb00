// Attention family: scaled dot-product attention and multi-head attention composed from ATen
// (matmul, softmax, masked_fill), with the masks that go wrong on accelerators: boolean padding,
// additive float, causal, and fully masked rows.
#include <mpscheck/op.hpp>

#include <cmath>
#include <limits>

using namespace mpscheck::op;

namespace {

// q [B, H, Lq, D], k/v [B, H, Lk, D]; a 16-wide key axis makes a random fully masked row rare.
constexpr int64_t kB = 2, kH = 4, kLq = 8, kLk = 16, kD = 8;
// Multi-head attention: batch-first x [B, L, E], E = H * D.
constexpr int64_t kL = 16, kE = kH * kD;
// Projection weights are randn scaled by 1/sqrt(E) inside the op, so scores stay O(1). Not
// Arg::uniform: the SDK's Python draw for it does not parse (see report).
const double kWScale = 1.0 / std::sqrt(static_cast<double>(kE));
const std::string kPyWScale = python_number(kWScale);

const double kInf = std::numeric_limits<double>::infinity();

const std::string kScale = python_number(std::sqrt(static_cast<double>(kD)));

// Lowest finite value of the dtype the scores have on this placement (Python: torch.finfo(dtype).min).
double lowest(c10::ScalarType t) {
  switch (t) {
    case c10::kDouble: return std::numeric_limits<double>::lowest();
    case c10::kHalf: return -65504.0;
    case c10::kBFloat16: return -3.3895313892515355e38;
    default: return static_cast<double>(std::numeric_limits<float>::lowest());
  }
}

at::Tensor scores(const at::Tensor& q, const at::Tensor& k) {
  return at::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
}

at::Tensor attend(const at::Tensor& s, const at::Tensor& v) { return at::matmul(at::softmax(s, -1), v); }

// The Python side of scores()/attend(), over the names q, k, v.
std::string py_scores(const std::string& q = "q", const std::string& k = "k") {
  return "(torch.matmul(" + q + ", " + k + ".transpose(-2, -1)) / " + kScale + ")";
}
std::string py_attend(const std::string& s, const std::string& v = "v") {
  return "torch.matmul(torch.softmax(" + s + ", -1), " + v + ")";
}

std::vector<Arg> qkv(int64_t lq = kLq, int64_t lk = kLk) {
  return {Arg::randn("q", {kB, kH, lq, kD}), Arg::randn("k", {kB, kH, lk, kD}), Arg::randn("v", {kB, kH, lk, kD})};
}

// q, k, v and one more arg (a mask or a bias) after them.
std::vector<Arg> qkv_and(Arg extra) {
  std::vector<Arg> args = qkv();
  args.push_back(std::move(extra));
  return args;
}

const std::vector<Variant> kQkvVariants = {Variant::contiguous(), Variant::transposed("k"), Variant::sliced("q"),
                                           Variant::expanded("v")};

// A [B, Lq, Lk] mask whose query row 0 is masked over every key, the rest random.
at::Tensor row0_masked(const at::Tensor& m) { return at::cat({at::ones_like(m.slice(1, 0, 1)), m.slice(1, 1)}, 1); }
const std::string kPyRow0Masked = "torch.cat([torch.ones_like(mask[:, :1]), mask[:, 1:]], 1)";

// Multi-head attention, batch first: packed in-projection, heads split, attention, out-projection.
std::vector<Arg> mha_args(bool key_padding) {
  // The packed in-projection holds q, k and v: 3 x the embedding's rows at any size explore tries.
  std::vector<Arg> a = {Arg::randn("x", {kB, kL, kE}), Arg::randn("w_in", {3 * kE, kE}).sized_as(0, "x", 2, 3),
                        Arg::randn("b_in", {3 * kE}).sized_as(0, "x", 2, 3), Arg::randn("w_out", {kE, kE}),
                        Arg::randn("b_out", {kE})};
  if (key_padding) a.push_back(Arg::mask("kpm", {kB, kL}));
  return a;
}

at::Tensor mha(const Tensors& a, bool key_padding) {
  auto packed = at::linear(a[0], a[1] * kWScale, a[2] * kWScale).chunk(3, -1);
  auto split = [](const at::Tensor& t) { return t.reshape({kB, kL, kH, kD}).transpose(1, 2); };
  at::Tensor s = scores(split(packed[0]), split(packed[1]));
  if (key_padding) s = s.masked_fill(a[5].unsqueeze(1).unsqueeze(2), -kInf);
  at::Tensor o = attend(s, split(packed[2])).transpose(1, 2).reshape({kB, kL, kE});
  return at::linear(o, a[3] * kWScale, a[4] * kWScale);
}

std::string py_mha(bool key_padding) {
  const std::string s = key_padding ? py_scores() + ".masked_fill(kpm[:, None, None, :], float('-inf'))" : py_scores();
  const std::string dims = std::to_string(kB) + ", " + std::to_string(kL);
  return "torch.nn.functional.linear((lambda q, k, v: " + py_attend(s) + ")(*[t.reshape(" + dims + ", " +
         std::to_string(kH) + ", " + std::to_string(kD) +
         ").transpose(1, 2) for t in torch.nn.functional.linear(x, w_in * " + kPyWScale + ", b_in * " + kPyWScale +
         ").chunk(3, -1)]).transpose(1, 2).reshape(" + dims + ", " + std::to_string(kE) + "), w_out * " + kPyWScale +
         ", b_out * " + kPyWScale + ")";
}

}  // namespace

// clang-format off
MPSCHECK_CATALOG(attention_cases) {
  Family attention(catalog, "attention");
  attention.dtypes(dtypes::floats).variants(kQkvVariants);
  using A = const Tensors&;

  attention.op("sdpa", qkv(), [](A a) { return attend(scores(a[0], a[1]), a[2]); }, py_attend(py_scores())).add();

  // Boolean key padding mask [B, Lk], True = masked: -inf before the softmax.
  attention.op("sdpa_padding_mask", qkv_and(Arg::mask("mask", {kB, kLk})),
               [](A a) { return attend(scores(a[0], a[1]).masked_fill(a[3].unsqueeze(1).unsqueeze(2), -kInf), a[2]); },
               py_attend(py_scores() + ".masked_fill(mask[:, None, None, :], float('-inf'))"))
      .variants({Variant::contiguous(), Variant::transposed("k"), Variant::sliced("q"), Variant::expanded("mask")}).add();

  // Additive float mask [Lq, Lk] broadcast over batch and heads.
  attention.op("sdpa_additive_mask", qkv_and(Arg::randn("bias", {kLq, kLk})),
               [](A a) { return attend(scores(a[0], a[1]) + a[3], a[2]); }, py_attend(py_scores() + " + bias"))
      .add(dtypes::f32, {Variant::contiguous(), Variant::transposed("k"),
                         Variant::of("transposed_bias", Layout::Transposed, "bias")});

  // Causal self-attention: keys after the query position masked (triu above the diagonal).
  attention.op("sdpa_causal", qkv(kLk, kLk),
               [](A a) {
                 at::Tensor s = scores(a[0], a[1]);
                 at::Tensor causal = at::ones({kLk, kLk}, s.options().dtype(at::kBool)).triu(1);
                 return attend(s.masked_fill(causal, -kInf), a[2]);
               },
               py_attend(py_scores() + ".masked_fill(torch.ones(" + std::to_string(kLk) + ", " +
                         std::to_string(kLk) + ", dtype=torch.bool, device=q.device).triu(1), float('-inf'))"))
      .add();

  // Fully masked query row with -inf: softmax over all -inf is NaN on CPU too, so that row is NaN on
  // both sides, which the comparison counts as agreement (NaN == NaN). Forward only: in backward the
  // NaN row spreads into every key/value gradient and nothing would be compared.
  const Variants masked_row = {Variant::contiguous(), Variant::transposed("k"), Variant::expanded("mask")};
  attention.op("sdpa_fully_masked_row", qkv_and(Arg::mask("mask", {kB, kLq, kLk})),
               [](A a) { return attend(scores(a[0], a[1]).masked_fill(row0_masked(a[3]).unsqueeze(1), -kInf), a[2]); },
               py_attend(py_scores() + ".masked_fill(" + kPyRow0Masked + "[:, None], float('-inf'))"))
      .no_grad().tag("nan-expected").add(dtypes::f32, masked_row);
  // The safe form: the dtype's lowest finite value instead of -inf makes the fully masked row uniform.
  attention.op("sdpa_fully_masked_row_safe", qkv_and(Arg::mask("mask", {kB, kLq, kLk})),
               [](A a) {
                 at::Tensor s = scores(a[0], a[1]);
                 return attend(s.masked_fill(row0_masked(a[3]).unsqueeze(1), lowest(s.scalar_type())), a[2]);
               },
               py_attend("(lambda s: s.masked_fill(" + kPyRow0Masked + "[:, None], torch.finfo(s.dtype).min))(" +
                         py_scores() + ")"))
      .variants(masked_row).add();

  attention.op("mha", mha_args(false), [](A a) { return mha(a, false); }, py_mha(false))
      .variants({Variant::contiguous(), Variant::transposed("w_in"), Variant::sliced("x")}).add();
  attention.op("mha_key_padding", mha_args(true), [](A a) { return mha(a, true); }, py_mha(true))
      .variants({Variant::contiguous(), Variant::transposed("w_in"), Variant::expanded("kpm")}).add();

  // The fused kernel (flash / memory-efficient / math, chosen by the backend). Its boolean mask is
  // the opposite convention: True = takes part.
  attention.op("scaled_dot_product_attention_causal", qkv(kLk, kLk),
               [](A a) { return at::scaled_dot_product_attention(a[0], a[1], a[2], {}, 0.0, true); },
               "torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, "
               "is_causal=True)").add(dtypes::f32);
  attention.op("scaled_dot_product_attention_bool_mask", qkv_and(Arg::mask("keep", {kB, kLk})),
               [](A a) {
                 return at::scaled_dot_product_attention(a[0], a[1], a[2], a[3].unsqueeze(1).unsqueeze(2), 0.0, false);
               },
               "torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :], "
               "dropout_p=0.0, is_causal=False)")
      .add(dtypes::f32, {Variant::contiguous(), Variant::transposed("k"), Variant::sliced("q"), Variant::expanded("keep")});
}
// clang-format on

MPSCHECK_PLUGIN("ops-attention", "0.1.0")

// Softmax family: large logits, reductions along strided dims and huge rows are where reduced
// precision and fused kernels go wrong.
#include <mpscheck/op.hpp>

#include <limits>

using namespace mpscheck::op;

namespace {

OpDef make(std::string op, std::vector<Arg> args, std::function<at::Tensor(const Tensors&)> fn,
           std::string python) {
  OpDef d;
  d.family = "softmax";
  d.op = std::move(op);
  d.args = std::move(args);
  d.fn = [fn = std::move(fn)](const Tensors& a) { return Tensors{fn(a)}; };
  d.python = std::move(python);
  return d;
}

const std::vector<c10::ScalarType> kFloats = {c10::kFloat, c10::kHalf, c10::kBFloat16};

// Every dtype gets contiguous, transposed and sliced inputs: the reduction dim changes stride.
void add_softmax(mpscheck::Catalog& catalog, const OpDef& def,
                 const std::vector<c10::ScalarType>& dtypes = kFloats) {
  add_op(catalog, def, dtypes, {Variant::contiguous(), Variant::transposed(), Variant::sliced()});
}

void add_large(mpscheck::Catalog& catalog, OpDef def) {
  def.differentiable = false;  // forward only: keeps the case at a few hundred MB
  def.tags.push_back("large");
  add_op(catalog, def, {c10::kFloat}, {Variant{"large", [](std::vector<Arg>&) {}}});
}

Arg logits(std::vector<int64_t> shape) { return Arg::uniform("x", std::move(shape), -100, 100); }

}  // namespace

MPSCHECK_CATALOG(softmax_cases) {
  add_softmax(catalog, make("softmax", {logits({32, 100})},
                            [](const Tensors& a) { return at::softmax(a[0], -1); }, "torch.softmax(x, -1)"));
  add_softmax(catalog, make("softmax_dim0", {logits({100, 32})},
                            [](const Tensors& a) { return at::softmax(a[0], 0); }, "torch.softmax(x, 0)"));
  add_softmax(catalog, make("softmax_dim1_3d", {Arg::randn("x", {8, 40, 24})},
                            [](const Tensors& a) { return at::softmax(a[0], 1); }, "torch.softmax(x, 1)"));
  add_softmax(catalog, make("softmax_small_logits", {Arg::uniform("x", {32, 100}, -4, 4)},
                            [](const Tensors& a) { return at::softmax(a[0], -1); }, "torch.softmax(x, -1)"));
  // Attention-shaped rows: 1000 wide, the width where vectorised kernels switch strategy.
  add_softmax(catalog, make("softmax_wide", {Arg::uniform("x", {16, 1000}, -30, 30)},
                            [](const Tensors& a) { return at::softmax(a[0], -1); }, "torch.softmax(x, -1)"));
  // Reduced-precision input, float32 accumulation and output (what mixed-precision attention does).
  add_softmax(catalog, make("softmax_f32_out", {logits({32, 100})},
                            [](const Tensors& a) { return at::softmax(a[0], -1, at::kFloat); },
                            "torch.softmax(x, -1, dtype=torch.float32)"),
              {c10::kHalf, c10::kBFloat16});
  OpDef masked = make("softmax_masked", {logits({32, 100}), Arg::mask("mask", {32, 100})},
                      [](const Tensors& a) {
                        return at::softmax(a[0].masked_fill(a[1], -std::numeric_limits<double>::infinity()), -1);
                      },
                      "torch.softmax(x.masked_fill(mask, float('-inf')), -1)");
  add_op(catalog, masked, kFloats, {Variant::contiguous(), Variant::transposed("x"), Variant::expanded("mask")});

  add_softmax(catalog, make("log_softmax", {logits({32, 100})},
                            [](const Tensors& a) { return at::log_softmax(a[0], -1); },
                            "torch.log_softmax(x, -1)"));
  add_softmax(catalog, make("log_softmax_dim0", {logits({100, 32})},
                            [](const Tensors& a) { return at::log_softmax(a[0], 0); }, "torch.log_softmax(x, 0)"));
  add_softmax(catalog, make("log_softmax_dim1_3d", {Arg::randn("x", {8, 40, 24})},
                            [](const Tensors& a) { return at::log_softmax(a[0], 1); }, "torch.log_softmax(x, 1)"));
  add_softmax(catalog, make("log_softmax_f32_out", {logits({32, 100})},
                            [](const Tensors& a) { return at::log_softmax(a[0], -1, at::kFloat); },
                            "torch.log_softmax(x, -1, dtype=torch.float32)"),
              {c10::kHalf, c10::kBFloat16});
  // softmin(x) is softmax(-x); there is no ATen kernel of its own.
  add_softmax(catalog, make("softmin", {logits({32, 100})},
                            [](const Tensors& a) { return at::softmax(at::neg(a[0]), -1); },
                            "torch.nn.functional.softmin(x, -1)"));
  add_softmax(catalog, make("softmin_dim0", {Arg::randn("x", {100, 32})},
                            [](const Tensors& a) { return at::softmax(at::neg(a[0]), 0); },
                            "torch.nn.functional.softmin(x, 0)"),
              {c10::kFloat});

  add_large(catalog, make("softmax", {logits({2, 1 << 24})}, [](const Tensors& a) { return at::softmax(a[0], -1); },
                          "torch.softmax(x, -1)"));
  add_large(catalog, make("log_softmax", {logits({4, 1 << 22})},
                          [](const Tensors& a) { return at::log_softmax(a[0], -1); }, "torch.log_softmax(x, -1)"));
  add_large(catalog, make("softmax_dim0", {logits({1 << 20, 20})},
                          [](const Tensors& a) { return at::softmax(a[0], 0); }, "torch.softmax(x, 0)"));
}

MPSCHECK_PLUGIN("ops-softmax", "0.1.0")

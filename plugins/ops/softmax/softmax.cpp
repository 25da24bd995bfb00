// Softmax family: large logits, reductions along strided dims and huge rows are where reduced
// precision and fused kernels go wrong.
#include <mpscheck/op.hpp>

#include <limits>

using namespace mpscheck::op;

namespace {

Arg logits(std::vector<int64_t> shape) { return Arg::uniform("x", std::move(shape), -100, 100); }

}  // namespace

// clang-format off
MPSCHECK_CATALOG(softmax_cases) {
  // Every dtype gets contiguous, transposed and sliced inputs: the reduction dim changes stride.
  Family softmax(catalog, "softmax");
  softmax.dtypes(dtypes::floats).variants(layouts::strided);

  softmax.op("softmax", {logits({32, 100})}, [](const at::Tensor& x) { return at::softmax(x, -1); },
             "torch.softmax(x, -1)").add();
  softmax.op("softmax_dim0", {logits({100, 32})}, [](const at::Tensor& x) { return at::softmax(x, 0); },
             "torch.softmax(x, 0)").add();
  softmax.op("softmax_dim1_3d", {Arg::randn("x", {8, 40, 24})}, [](const at::Tensor& x) { return at::softmax(x, 1); },
             "torch.softmax(x, 1)").add();
  softmax.op("softmax_small_logits", {Arg::uniform("x", {32, 100}, -4, 4)},
             [](const at::Tensor& x) { return at::softmax(x, -1); }, "torch.softmax(x, -1)").add();
  // Attention-shaped rows: 1000 wide, the width where vectorised kernels switch strategy.
  softmax.op("softmax_wide", {Arg::uniform("x", {16, 1000}, -30, 30)},
             [](const at::Tensor& x) { return at::softmax(x, -1); }, "torch.softmax(x, -1)").add();
  // Reduced-precision input, float32 accumulation and output (what mixed-precision attention does).
  softmax.op("softmax_f32_out", {logits({32, 100})}, [](const at::Tensor& x) { return at::softmax(x, -1, at::kFloat); },
             "torch.softmax(x, -1, dtype=torch.float32)").add(dtypes::reduced);
  softmax.op("softmax_masked", {logits({32, 100}), Arg::mask("mask", {32, 100})},
             [](const Tensors& a) {
               return at::softmax(a[0].masked_fill(a[1], -std::numeric_limits<double>::infinity()), -1);
             },
             "torch.softmax(x.masked_fill(mask, float('-inf')), -1)")
      .variants({Variant::contiguous(), Variant::transposed("x"), Variant::expanded("mask")}).add();

  softmax.op("log_softmax", {logits({32, 100})}, [](const at::Tensor& x) { return at::log_softmax(x, -1); },
             "torch.log_softmax(x, -1)").add();
  softmax.op("log_softmax_dim0", {logits({100, 32})}, [](const at::Tensor& x) { return at::log_softmax(x, 0); },
             "torch.log_softmax(x, 0)").add();
  softmax.op("log_softmax_dim1_3d", {Arg::randn("x", {8, 40, 24})},
             [](const at::Tensor& x) { return at::log_softmax(x, 1); }, "torch.log_softmax(x, 1)").add();
  softmax.op("log_softmax_f32_out", {logits({32, 100})},
             [](const at::Tensor& x) { return at::log_softmax(x, -1, at::kFloat); },
             "torch.log_softmax(x, -1, dtype=torch.float32)").add(dtypes::reduced);
  // softmin(x) is softmax(-x); there is no ATen kernel of its own.
  softmax.op("softmin", {logits({32, 100})}, [](const at::Tensor& x) { return at::softmax(at::neg(x), -1); },
             "torch.nn.functional.softmin(x, -1)").add();
  softmax.op("softmin_dim0", {Arg::randn("x", {100, 32})}, [](const at::Tensor& x) { return at::softmax(at::neg(x), 0); },
             "torch.nn.functional.softmin(x, 0)").add(dtypes::f32);

  // Forward only: keeps each large case at a few hundred MB.
  softmax.op("softmax", {logits({2, 1 << 24})}, [](const at::Tensor& x) { return at::softmax(x, -1); },
             "torch.softmax(x, -1)").no_grad().large().add(dtypes::f32);
  softmax.op("log_softmax", {logits({4, 1 << 22})}, [](const at::Tensor& x) { return at::log_softmax(x, -1); },
             "torch.log_softmax(x, -1)").no_grad().large().add(dtypes::f32);
  softmax.op("softmax_dim0", {logits({1 << 20, 20})}, [](const at::Tensor& x) { return at::softmax(x, 0); },
             "torch.softmax(x, 0)").no_grad().large().add(dtypes::f32);
}
// clang-format on

MPSCHECK_PLUGIN("ops-softmax", "0.1.0")

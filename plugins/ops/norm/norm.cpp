// Normalisation family: mean/variance reductions, fp16 statistics and channels_last inputs are
// where backends disagree.
#include <mpscheck/op.hpp>

using namespace mpscheck::op;

namespace {

const std::vector<int64_t> kImage = {4, 16, 12, 12};

using A = const Tensors&;

// Running statistics are buffers, never differentiated, and training writes them in place.
Arg running_mean(int64_t c) { return Arg::randn("running_mean", {c}).no_grad().is_written(); }
Arg running_var(int64_t c) { return Arg::uniform("running_var", {c}, 0.5, 2).no_grad().is_written(); }

const std::string kBatchNormTrain =
    "torch.nn.functional.batch_norm(x, running_mean, running_var, weight, bias, training=True, momentum=0.1, eps=1e-5)";
at::Tensor batch_norm_train(A a) { return at::batch_norm(a[0], a[1], a[2], a[3], a[4], true, 0.1, 1e-5, false); }

}  // namespace

// clang-format off
MPSCHECK_CATALOG(norm_batch_cases) {
  Family norm(catalog, "norm");
  norm.dtypes(dtypes::floats).variants({Variant::contiguous(), Variant::channels_last("x")});
  const std::vector<Arg> bn_args = {Arg::randn("x", kImage), Arg::randn("weight", {16}), Arg::randn("bias", {16}),
                                    running_mean(16), running_var(16)};
  norm.op("batch_norm_train", bn_args, batch_norm_train, kBatchNormTrain).add();
  std::vector<Arg> bn_eval_args = bn_args;  // eval mode reads the running statistics, never writes them
  for (Arg& a : bn_eval_args) a.written = false;
  norm.op("batch_norm_eval", bn_eval_args,
          [](A a) { return at::batch_norm(a[0], a[1], a[2], a[3], a[4], false, 0.1, 1e-5, false); },
          "torch.nn.functional.batch_norm(x, running_mean, running_var, weight, bias, training=False, "
          "momentum=0.1, eps=1e-5)").add();
  // BatchNorm1d on (N, C, L): the statistics reduce over two dims, one of them strided when sliced.
  norm.op("batch_norm_1d", {Arg::randn("x", {16, 32, 20}), Arg::randn("weight", {32}), Arg::randn("bias", {32}),
                            running_mean(32), running_var(32)},
          batch_norm_train, kBatchNormTrain).add(dtypes::f32_bf16, {Variant::contiguous(), Variant::sliced("x")});
  // Offset activations: a one-pass E[x^2]-E[x]^2 variance loses the digits here.
  norm.op("batch_norm_offset", {Arg::uniform("x", kImage, 50, 52), Arg::randn("weight", {16}),
                                Arg::randn("bias", {16}), running_mean(16), running_var(16)},
          batch_norm_train, kBatchNormTrain).add(dtypes::f32);
  norm.op("instance_norm", {Arg::randn("x", kImage), Arg::randn("weight", {16}), Arg::randn("bias", {16})},
          [](A a) { return at::instance_norm(a[0], a[1], a[2], {}, {}, true, 0.1, 1e-5, false); },
          "torch.nn.functional.instance_norm(x, weight=weight, bias=bias, eps=1e-5)").add();
  norm.op("group_norm", {Arg::randn("x", kImage), Arg::randn("weight", {16}), Arg::randn("bias", {16})},
          [](A a) { return at::group_norm(a[0], 4, a[1], a[2], 1e-5); },
          "torch.nn.functional.group_norm(x, 4, weight, bias, 1e-5)").add();
  norm.op("group_norm_3d", {Arg::randn("x", {8, 32, 50}), Arg::randn("weight", {32}), Arg::randn("bias", {32})},
          [](A a) { return at::group_norm(a[0], 8, a[1], a[2], 1e-5); },
          "torch.nn.functional.group_norm(x, 8, weight, bias, 1e-5)")
      .add(dtypes::f32_bf16, {Variant::contiguous(), Variant::transposed("x")});
}
// clang-format on

// clang-format off
MPSCHECK_CATALOG(norm_layer_cases) {
  Family norm(catalog, "norm");
  norm.dtypes(dtypes::floats).variants({Variant::contiguous(), Variant::sliced("x"), Variant::transposed("x")});
  const std::vector<Arg> ln_args = {Arg::randn("x", {16, 24, 64}), Arg::randn("weight", {64}),
                                    Arg::randn("bias", {64})};
  norm.op("layer_norm", ln_args, [](A a) { return at::layer_norm(a[0], {64}, a[1], a[2], 1e-5); },
          "torch.nn.functional.layer_norm(x, [64], weight, bias, 1e-5)").add();
  // BERT's eps: the variance alone keeps the division finite.
  norm.op("layer_norm_eps12", ln_args, [](A a) { return at::layer_norm(a[0], {64}, a[1], a[2], 1e-12); },
          "torch.nn.functional.layer_norm(x, [64], weight, bias, 1e-12)")
      .variants({Variant::contiguous(), Variant::sliced("x")}).add();
  norm.op("layer_norm_no_affine", {Arg::randn("x", {16, 24, 64})}, [](A a) { return at::layer_norm(a[0], {64}); },
          "torch.nn.functional.layer_norm(x, [64])")
      .add(dtypes::f32_bf16, {Variant::contiguous(), Variant::transposed("x")});
  norm.op("layer_norm_2d", {Arg::randn("x", {8, 12, 16, 20}), Arg::randn("weight", {16, 20}),
                            Arg::randn("bias", {16, 20})},
          [](A a) { return at::layer_norm(a[0], {16, 20}, a[1], a[2], 1e-5); },
          "torch.nn.functional.layer_norm(x, [16, 20], weight, bias, 1e-5)")
      .add(dtypes::f32_bf16, {Variant::contiguous(), Variant::channels_last("x")});
  // Transformer-width rows with a large offset: mean subtraction must happen before squaring.
  norm.op("layer_norm_offset", {Arg::uniform("x", {8, 1024}, 100, 101), Arg::randn("weight", {1024}),
                                Arg::randn("bias", {1024})},
          [](A a) { return at::layer_norm(a[0], {1024}, a[1], a[2], 1e-5); },
          "torch.nn.functional.layer_norm(x, [1024], weight, bias, 1e-5)")
      .add(dtypes::f32, {Variant::contiguous(), Variant::sliced("x")});
  // RMSNorm (LLaMA, T5) has no ATen kernel here: composed as the models write it.
  norm.op("rms_norm", {Arg::randn("x", {16, 24, 64}), Arg::randn("weight", {64})},
          [](A a) { return a[0] * at::rsqrt(a[0].pow(2).mean({-1}, true) + 1e-6) * a[1]; },
          "x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * weight").add();
  norm.op("normalize", {Arg::randn("x", {32, 64})},
          [](const at::Tensor& x) {
            return x / at::clamp_min(at::linalg_vector_norm(x, 2, {-1}, true, c10::nullopt), 1e-12).expand_as(x);
          },
          "torch.nn.functional.normalize(x, 2.0, -1)")
      .add(dtypes::f32_bf16, {Variant::contiguous(), Variant::transposed("x")});
  // torch's local_response_norm for 3-d input, step by step (it is Python-only, not an ATen op).
  norm.op("local_response_norm", {Arg::randn("x", {4, 16, 40})},
          [](const at::Tensor& x) {
            const int64_t size = 5;
            at::Tensor div = x.mul(x).unsqueeze(1);
            div = at::constant_pad_nd(div, {0, 0, size / 2, (size - 1) / 2});
            div = at::avg_pool2d(div, {size, 1}, {1, 1}).squeeze(1);
            div = div.mul(1e-4).add(1.0).pow(0.75);
            return x / div;
          },
          "torch.nn.functional.local_response_norm(x, 5, 1e-4, 0.75, 1.0)")
      .add(dtypes::f32, {Variant::contiguous(), Variant::transposed("x")});
}
// clang-format on

MPSCHECK_PLUGIN("ops-norm", "0.1.0")

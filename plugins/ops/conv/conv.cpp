// Convolution family: where accelerator backends break on strided/channels_last inputs,
// non-contiguous weights, transposed convolutions and very many channels.
#include <mpscheck/op.hpp>

#include <torch/version.h>

#include <cmath>

using namespace mpscheck::op;

namespace {

// Weights and bias drawn like PyTorch's default init (uniform, bound 1/sqrt(fan_in)) so outputs
// stay O(1), as in a real model; randn weights make bf16 rounding dominate any tolerance.
void init_like_module(std::vector<Arg>& args) {
  int64_t fan_in = 1;
  for (const Arg& a : args)
    if (a.name == "weight")
      for (size_t i = 1; i < a.shape.size(); ++i) fan_in *= a.shape[i];
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  for (Arg& a : args)
    if (a.name == "weight" || a.name == "bias") a = Arg::uniform(a.name, a.shape, -bound, bound);
}

OpDef conv(std::string op, std::vector<Arg> args, OpFn fn, std::string python,
           std::vector<std::string> tags = {}) {
  init_like_module(args);
  return OpDef{"conv", std::move(op), std::move(args), std::move(fn), std::move(python), true, {},
               std::move(tags), {}};
}

// Reduced precision is exercised by --target cpu:bfloat16/float16 on the float32 cases: with the
// table's reduced tolerance, long bf16 dot products here exceed atol 3e-2 even on CPU (see report).
std::vector<c10::ScalarType> model_dtypes() { return {c10::kFloat}; }

std::vector<c10::ScalarType> transpose_dtypes() { return {c10::kFloat}; }

}  // namespace

MPSCHECK_CATALOG(conv_cases) {
  const std::vector<c10::ScalarType> f32{c10::kFloat};
  const auto models = model_dtypes();
  const auto transposes = transpose_dtypes();

  // ----- 1-d -----
  add_op(catalog,
         conv("conv1d", {Arg::randn("x", {4, 8, 64}), Arg::randn("weight", {16, 8, 5}), Arg::randn("bias", {16})},
              [](const Tensors& a) { return Tensors{at::conv1d(a[0], a[1], a[2], {1}, {2})}; },
              "torch.nn.functional.conv1d(x, weight, bias, stride=1, padding=2)"),
         models, {Variant::contiguous(), Variant::sliced("x"), Variant::of("transposed_weight", Layout::Transposed, "weight")});
  add_op(catalog,
         conv("conv1d_strided_dilated",
              {Arg::randn("x", {2, 6, 50}), Arg::randn("weight", {12, 6, 3}), Arg::randn("bias", {12})},
              [](const Tensors& a) { return Tensors{at::conv1d(a[0], a[1], a[2], {2}, {2}, {2})}; },
              "torch.nn.functional.conv1d(x, weight, bias, stride=2, padding=2, dilation=2)"),
         f32, {Variant::contiguous(), Variant::sliced("x")});

  // ----- 2-d -----
  add_op(catalog,
         conv("conv2d",
              {Arg::randn("x", {2, 8, 16, 16}), Arg::randn("weight", {16, 8, 3, 3}), Arg::randn("bias", {16})},
              [](const Tensors& a) { return Tensors{at::conv2d(a[0], a[1], a[2], {1, 1}, {1, 1})}; },
              "torch.nn.functional.conv2d(x, weight, bias, stride=1, padding=1)"),
         models,
         {Variant::contiguous(), Variant::channels_last("x"), Variant::sliced("x"), Variant::of("transposed_weight", Layout::Transposed, "weight"),
          Variant::of("channels_last_weight", Layout::ChannelsLast, "weight")});
  add_op(catalog,
         conv("conv2d_strided",
              {Arg::randn("x", {2, 8, 17, 17}), Arg::randn("weight", {16, 8, 3, 3}), Arg::randn("bias", {16})},
              [](const Tensors& a) { return Tensors{at::conv2d(a[0], a[1], a[2], {2, 2}, {1, 1})}; },
              "torch.nn.functional.conv2d(x, weight, bias, stride=2, padding=1)"),
         models, {Variant::contiguous(), Variant::channels_last("x")});
  add_op(catalog,
         conv("conv2d_dilated",
              {Arg::randn("x", {2, 8, 16, 16}), Arg::randn("weight", {8, 8, 3, 3}), Arg::randn("bias", {8})},
              [](const Tensors& a) { return Tensors{at::conv2d(a[0], a[1], a[2], {1, 1}, {2, 2}, {2, 2})}; },
              "torch.nn.functional.conv2d(x, weight, bias, stride=1, padding=2, dilation=2)"),
         f32, {Variant::contiguous(), Variant::channels_last("x")});
  add_op(catalog,
         conv("conv2d_grouped",
              {Arg::randn("x", {2, 16, 12, 12}), Arg::randn("weight", {32, 4, 3, 3}), Arg::randn("bias", {32})},
              [](const Tensors& a) { return Tensors{at::conv2d(a[0], a[1], a[2], {1, 1}, {1, 1}, {1, 1}, 4)}; },
              "torch.nn.functional.conv2d(x, weight, bias, stride=1, padding=1, groups=4)"),
         models, {Variant::contiguous(), Variant::channels_last("x"), Variant::of("transposed_weight", Layout::Transposed, "weight")});
  add_op(catalog,
         conv("conv2d_depthwise",
              {Arg::randn("x", {2, 16, 16, 16}), Arg::randn("weight", {16, 1, 3, 3}), Arg::randn("bias", {16})},
              [](const Tensors& a) { return Tensors{at::conv2d(a[0], a[1], a[2], {1, 1}, {1, 1}, {1, 1}, 16)}; },
              "torch.nn.functional.conv2d(x, weight, bias, stride=1, padding=1, groups=16)"),
         models, {Variant::contiguous(), Variant::channels_last("x"), Variant::sliced("x")});
  add_op(catalog,
         conv("conv2d_padded_nobias", {Arg::randn("x", {2, 4, 10, 14}), Arg::randn("weight", {6, 4, 5, 3})},
              [](const Tensors& a) { return Tensors{at::conv2d(a[0], a[1], {}, {1, 1}, {2, 0})}; },
              "torch.nn.functional.conv2d(x, weight, None, stride=1, padding=(2, 0))"),
         f32, {Variant::contiguous(), Variant::transposed("x")});
  add_op(catalog,
         conv("conv2d_pointwise",
              {Arg::randn("x", {2, 32, 8, 8}), Arg::randn("weight", {24, 32, 1, 1}), Arg::randn("bias", {24})},
              [](const Tensors& a) { return Tensors{at::conv2d(a[0], a[1], a[2])}; },
              "torch.nn.functional.conv2d(x, weight, bias)"),
         models, {Variant::contiguous(), Variant::channels_last("x")});

  // ----- 3-d -----
  add_op(catalog,
         conv("conv3d",
              {Arg::randn("x", {2, 4, 8, 8, 8}), Arg::randn("weight", {8, 4, 3, 3, 3}), Arg::randn("bias", {8})},
              [](const Tensors& a) { return Tensors{at::conv3d(a[0], a[1], a[2], {1, 1, 1}, {1, 1, 1})}; },
              "torch.nn.functional.conv3d(x, weight, bias, stride=1, padding=1)"),
         models, {Variant::contiguous(), Variant::sliced("x"), Variant::of("transposed_weight", Layout::Transposed, "weight")});
  add_op(catalog,
         conv("conv3d_strided",
              {Arg::randn("x", {1, 3, 9, 9, 9}), Arg::randn("weight", {6, 3, 3, 3, 3}), Arg::randn("bias", {6})},
              [](const Tensors& a) { return Tensors{at::conv3d(a[0], a[1], a[2], {2, 2, 2}, {1, 1, 1})}; },
              "torch.nn.functional.conv3d(x, weight, bias, stride=2, padding=1)"),
         f32, {Variant::contiguous(), Variant::expanded("x")});

  // ----- transposed -----
  add_op(catalog,
         conv("conv_transpose1d",
              {Arg::randn("x", {2, 8, 32}), Arg::randn("weight", {8, 4, 4}), Arg::randn("bias", {4})},
              [](const Tensors& a) { return Tensors{at::conv_transpose1d(a[0], a[1], a[2], {2}, {1})}; },
              "torch.nn.functional.conv_transpose1d(x, weight, bias, stride=2, padding=1)"),
         transposes, {Variant::contiguous(), Variant::sliced("x"), Variant::of("transposed_weight", Layout::Transposed, "weight")});
  add_op(catalog,
         conv("conv_transpose2d",
              {Arg::randn("x", {2, 8, 8, 8}), Arg::randn("weight", {8, 4, 4, 4}), Arg::randn("bias", {4})},
              [](const Tensors& a) { return Tensors{at::conv_transpose2d(a[0], a[1], a[2], {2, 2}, {1, 1})}; },
              "torch.nn.functional.conv_transpose2d(x, weight, bias, stride=2, padding=1)"),
         transposes,
         {Variant::contiguous(), Variant::channels_last("x"), Variant::of("transposed_weight", Layout::Transposed, "weight"),
          Variant::of("channels_last_weight", Layout::ChannelsLast, "weight")});
  add_op(catalog,
         conv("conv_transpose2d_grouped",
              {Arg::randn("x", {2, 8, 7, 7}), Arg::randn("weight", {8, 3, 3, 3}), Arg::randn("bias", {6})},
              [](const Tensors& a) {
                return Tensors{at::conv_transpose2d(a[0], a[1], a[2], {2, 2}, {1, 1}, {1, 1}, 2)};
              },
              "torch.nn.functional.conv_transpose2d(x, weight, bias, stride=2, padding=1, output_padding=1, "
              "groups=2)"),
         f32, {Variant::contiguous(), Variant::channels_last("x")});
  add_op(catalog,
         conv("conv_transpose2d_dilated",
              {Arg::randn("x", {2, 4, 9, 9}), Arg::randn("weight", {4, 6, 3, 3}), Arg::randn("bias", {6})},
              [](const Tensors& a) {
                return Tensors{at::conv_transpose2d(a[0], a[1], a[2], {1, 1}, {0, 0}, {0, 0}, 1, {2, 2})};
              },
              "torch.nn.functional.conv_transpose2d(x, weight, bias, stride=1, padding=0, dilation=2)"),
         f32, {Variant::contiguous(), Variant::sliced("x")});
  add_op(catalog,
         conv("conv_transpose3d",
              {Arg::randn("x", {1, 4, 4, 5, 5}), Arg::randn("weight", {4, 4, 3, 3, 3}), Arg::randn("bias", {4})},
              [](const Tensors& a) { return Tensors{at::conv_transpose3d(a[0], a[1], a[2], {2, 2, 2}, {1, 1, 1})}; },
              "torch.nn.functional.conv_transpose3d(x, weight, bias, stride=2, padding=1)"),
         transposes, {Variant::contiguous(), Variant::of("transposed_weight", Layout::Transposed, "weight")});

  // ----- large: more than 2^16 channels, where kernels index channels with 16-bit grid dims -----
  add_op(catalog,
         conv("conv2d_many_in_channels",
              {Arg::randn("x", {1, 70000, 4, 4}), Arg::randn("weight", {4, 70000, 1, 1}), Arg::randn("bias", {4})},
              [](const Tensors& a) { return Tensors{at::conv2d(a[0], a[1], a[2])}; },
              "torch.nn.functional.conv2d(x, weight, bias)", {"large"}),
         f32, {Variant{"large", [](std::vector<Arg>&) {}}});
  add_op(catalog,
         conv("conv2d_depthwise_many_channels",
              {Arg::randn("x", {1, 70000, 6, 6}), Arg::randn("weight", {70000, 1, 3, 3}), Arg::randn("bias", {70000})},
              [](const Tensors& a) { return Tensors{at::conv2d(a[0], a[1], a[2], {1, 1}, {1, 1}, {1, 1}, 70000)}; },
              "torch.nn.functional.conv2d(x, weight, bias, padding=1, groups=70000)", {"large"}),
         f32, {Variant{"large", [](std::vector<Arg>&) {}}});
  add_op(catalog,
         conv("conv1d_long",
              {Arg::randn("x", {1, 4, 1 << 20}), Arg::randn("weight", {4, 4, 3}), Arg::randn("bias", {4})},
              [](const Tensors& a) { return Tensors{at::conv1d(a[0], a[1], a[2], {1}, {1})}; },
              "torch.nn.functional.conv1d(x, weight, bias, padding=1)", {"large"}),
         f32, {Variant{"large", [](std::vector<Arg>&) {}}});
}

MPSCHECK_PLUGIN("ops-conv", "0.1.0")

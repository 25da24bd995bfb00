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

Variant transposed_weight() { return Variant::of("transposed_weight", Layout::Transposed, "weight"); }
Variant channels_last_weight() { return Variant::of("channels_last_weight", Layout::ChannelsLast, "weight"); }

}  // namespace

// clang-format off
MPSCHECK_CATALOG(conv_cases) {
  // float32 only: reduced precision is exercised by --target cpu:bfloat16/float16 on these cases
  // (with the table's reduced tolerance, long bf16 dot products here exceed atol 3e-2 even on CPU).
  Family conv(catalog, "conv");
  conv.prepare(init_like_module).variants({Variant::contiguous(), Variant::channels_last("x")});
  using A = const Tensors&;

  // ----- 1-d -----
  conv.op("conv1d", {Arg::randn("x", {4, 8, 64}), Arg::randn("weight", {16, 8, 5}), Arg::randn("bias", {16})},
          [](A a) { return at::conv1d(a[0], a[1], a[2], {1}, {2}); },
          "torch.nn.functional.conv1d(x, weight, bias, stride=1, padding=2)")
      .variants({Variant::contiguous(), Variant::sliced("x"), transposed_weight()}).add();
  conv.op("conv1d_strided_dilated", {Arg::randn("x", {2, 6, 50}), Arg::randn("weight", {12, 6, 3}), Arg::randn("bias", {12})},
          [](A a) { return at::conv1d(a[0], a[1], a[2], {2}, {2}, {2}); },
          "torch.nn.functional.conv1d(x, weight, bias, stride=2, padding=2, dilation=2)")
      .variants({Variant::contiguous(), Variant::sliced("x")}).add();

  // ----- 2-d -----
  conv.op("conv2d", {Arg::randn("x", {2, 8, 16, 16}), Arg::randn("weight", {16, 8, 3, 3}), Arg::randn("bias", {16})},
          [](A a) { return at::conv2d(a[0], a[1], a[2], {1, 1}, {1, 1}); },
          "torch.nn.functional.conv2d(x, weight, bias, stride=1, padding=1)")
      .variants({Variant::contiguous(), Variant::channels_last("x"), Variant::sliced("x"), transposed_weight(),
                 channels_last_weight()})
      .add();
  conv.op("conv2d_strided", {Arg::randn("x", {2, 8, 17, 17}), Arg::randn("weight", {16, 8, 3, 3}), Arg::randn("bias", {16})},
          [](A a) { return at::conv2d(a[0], a[1], a[2], {2, 2}, {1, 1}); },
          "torch.nn.functional.conv2d(x, weight, bias, stride=2, padding=1)").add();
  conv.op("conv2d_dilated", {Arg::randn("x", {2, 8, 16, 16}), Arg::randn("weight", {8, 8, 3, 3}), Arg::randn("bias", {8})},
          [](A a) { return at::conv2d(a[0], a[1], a[2], {1, 1}, {2, 2}, {2, 2}); },
          "torch.nn.functional.conv2d(x, weight, bias, stride=1, padding=2, dilation=2)").add();
  conv.op("conv2d_grouped", {Arg::randn("x", {2, 16, 12, 12}), Arg::randn("weight", {32, 4, 3, 3}), Arg::randn("bias", {32})},
          [](A a) { return at::conv2d(a[0], a[1], a[2], {1, 1}, {1, 1}, {1, 1}, 4); },
          "torch.nn.functional.conv2d(x, weight, bias, stride=1, padding=1, groups=4)")
      .variants({Variant::contiguous(), Variant::channels_last("x"), transposed_weight()}).add();
  conv.op("conv2d_depthwise", {Arg::randn("x", {2, 16, 16, 16}), Arg::randn("weight", {16, 1, 3, 3}), Arg::randn("bias", {16})},
          [](A a) { return at::conv2d(a[0], a[1], a[2], {1, 1}, {1, 1}, {1, 1}, 16); },
          "torch.nn.functional.conv2d(x, weight, bias, stride=1, padding=1, groups=16)")
      .variants({Variant::contiguous(), Variant::channels_last("x"), Variant::sliced("x")}).add();
  conv.op("conv2d_padded_nobias", {Arg::randn("x", {2, 4, 10, 14}), Arg::randn("weight", {6, 4, 5, 3})},
          [](A a) { return at::conv2d(a[0], a[1], {}, {1, 1}, {2, 0}); },
          "torch.nn.functional.conv2d(x, weight, None, stride=1, padding=(2, 0))")
      .variants({Variant::contiguous(), Variant::transposed("x")}).add();
  conv.op("conv2d_pointwise", {Arg::randn("x", {2, 32, 8, 8}), Arg::randn("weight", {24, 32, 1, 1}), Arg::randn("bias", {24})},
          [](A a) { return at::conv2d(a[0], a[1], a[2]); }, "torch.nn.functional.conv2d(x, weight, bias)").add();

  // ----- 3-d -----
  conv.op("conv3d", {Arg::randn("x", {2, 4, 8, 8, 8}), Arg::randn("weight", {8, 4, 3, 3, 3}), Arg::randn("bias", {8})},
          [](A a) { return at::conv3d(a[0], a[1], a[2], {1, 1, 1}, {1, 1, 1}); },
          "torch.nn.functional.conv3d(x, weight, bias, stride=1, padding=1)")
      .variants({Variant::contiguous(), Variant::sliced("x"), transposed_weight()}).add();
  conv.op("conv3d_strided", {Arg::randn("x", {1, 3, 9, 9, 9}), Arg::randn("weight", {6, 3, 3, 3, 3}), Arg::randn("bias", {6})},
          [](A a) { return at::conv3d(a[0], a[1], a[2], {2, 2, 2}, {1, 1, 1}); },
          "torch.nn.functional.conv3d(x, weight, bias, stride=2, padding=1)")
      .variants({Variant::contiguous(), Variant::expanded("x")}).add();

  // ----- transposed -----
  conv.op("conv_transpose1d", {Arg::randn("x", {2, 8, 32}), Arg::randn("weight", {8, 4, 4}), Arg::randn("bias", {4})},
          [](A a) { return at::conv_transpose1d(a[0], a[1], a[2], {2}, {1}); },
          "torch.nn.functional.conv_transpose1d(x, weight, bias, stride=2, padding=1)")
      .variants({Variant::contiguous(), Variant::sliced("x"), transposed_weight()}).add();
  conv.op("conv_transpose2d", {Arg::randn("x", {2, 8, 8, 8}), Arg::randn("weight", {8, 4, 4, 4}), Arg::randn("bias", {4})},
          [](A a) { return at::conv_transpose2d(a[0], a[1], a[2], {2, 2}, {1, 1}); },
          "torch.nn.functional.conv_transpose2d(x, weight, bias, stride=2, padding=1)")
      .variants({Variant::contiguous(), Variant::channels_last("x"), transposed_weight(), channels_last_weight()}).add();
  conv.op("conv_transpose2d_grouped", {Arg::randn("x", {2, 8, 7, 7}), Arg::randn("weight", {8, 3, 3, 3}), Arg::randn("bias", {6})},
          [](A a) { return at::conv_transpose2d(a[0], a[1], a[2], {2, 2}, {1, 1}, {1, 1}, 2); },
          "torch.nn.functional.conv_transpose2d(x, weight, bias, stride=2, padding=1, output_padding=1, groups=2)")
      .add();
  conv.op("conv_transpose2d_dilated", {Arg::randn("x", {2, 4, 9, 9}), Arg::randn("weight", {4, 6, 3, 3}), Arg::randn("bias", {6})},
          [](A a) { return at::conv_transpose2d(a[0], a[1], a[2], {1, 1}, {0, 0}, {0, 0}, 1, {2, 2}); },
          "torch.nn.functional.conv_transpose2d(x, weight, bias, stride=1, padding=0, dilation=2)")
      .variants({Variant::contiguous(), Variant::sliced("x")}).add();
  conv.op("conv_transpose3d", {Arg::randn("x", {1, 4, 4, 5, 5}), Arg::randn("weight", {4, 4, 3, 3, 3}), Arg::randn("bias", {4})},
          [](A a) { return at::conv_transpose3d(a[0], a[1], a[2], {2, 2, 2}, {1, 1, 1}); },
          "torch.nn.functional.conv_transpose3d(x, weight, bias, stride=2, padding=1)")
      .variants({Variant::contiguous(), transposed_weight()}).add();

  // ----- large: more than 2^16 channels, where kernels index channels with 16-bit grid dims -----
  conv.op("conv2d_many_in_channels", {Arg::randn("x", {1, 70000, 4, 4}), Arg::randn("weight", {4, 70000, 1, 1}), Arg::randn("bias", {4})},
          [](A a) { return at::conv2d(a[0], a[1], a[2]); }, "torch.nn.functional.conv2d(x, weight, bias)")
      .large().add();
  conv.op("conv2d_depthwise_many_channels",
          {Arg::randn("x", {1, 70000, 6, 6}), Arg::randn("weight", {70000, 1, 3, 3}), Arg::randn("bias", {70000})},
          [](A a) { return at::conv2d(a[0], a[1], a[2], {1, 1}, {1, 1}, {1, 1}, 70000); },
          "torch.nn.functional.conv2d(x, weight, bias, padding=1, groups=70000)").large().add();
  conv.op("conv1d_long", {Arg::randn("x", {1, 4, 1 << 20}), Arg::randn("weight", {4, 4, 3}), Arg::randn("bias", {4})},
          [](A a) { return at::conv1d(a[0], a[1], a[2], {1}, {1}); }, "torch.nn.functional.conv1d(x, weight, bias, padding=1)")
      .large().add();
}
// clang-format on

MPSCHECK_PLUGIN("ops-conv", "0.1.0")

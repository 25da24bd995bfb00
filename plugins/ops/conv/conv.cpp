// Convolution family: where accelerator backends break on strided/channels_last inputs and
// non-contiguous weights.
#include <mpscheck/op.hpp>

using namespace mpscheck::op;

MPSCHECK_CATALOG(conv_cases) {
  add_op(catalog,
         OpDef{"conv", "conv2d",
               {Arg::randn("x", {2, 8, 16, 16}), Arg::randn("weight", {16, 8, 3, 3}), Arg::randn("bias", {16})},
               [](const Tensors& a) { return Tensors{at::conv2d(a[0], a[1], a[2], {1, 1}, {1, 1})}; },
               "torch.nn.functional.conv2d(x, weight, bias, stride=1, padding=1)"},
         {c10::kFloat}, {Variant::contiguous(), Variant::channels_last("x")});
}

MPSCHECK_PLUGIN("ops-conv", "0.1.0")

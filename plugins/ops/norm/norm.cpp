// Normalisation family.
#include <mpscheck/op.hpp>

using namespace mpscheck::op;

MPSCHECK_CATALOG(norm_cases) {
  add_op(catalog,
         OpDef{"norm", "layer_norm",
               {Arg::randn("x", {16, 24, 64}), Arg::randn("weight", {64}), Arg::randn("bias", {64})},
               [](const Tensors& a) { return Tensors{at::layer_norm(a[0], {64}, a[1], a[2], 1e-5)}; },
               "torch.nn.functional.layer_norm(x, [64], weight, bias, 1e-5)"},
         {c10::kFloat}, {Variant::contiguous(), Variant::sliced("x")});
}

MPSCHECK_PLUGIN("ops-norm", "0.1.0")

// Elementwise activations.
#include <mpscheck/op.hpp>

using namespace mpscheck::op;

MPSCHECK_CATALOG(activation_cases) {
  add_op(catalog,
         OpDef{"activation", "gelu", {Arg::randn("x", {64, 96})},
               [](const Tensors& a) { return Tensors{at::gelu(a[0])}; }, "torch.nn.functional.gelu(x)"},
         {c10::kFloat}, {Variant::contiguous(), Variant::sliced()});
}

MPSCHECK_PLUGIN("ops-activation", "0.1.0")

// Your own operator cases, checked like the built-in ones: a fused activation from your model
// and a layout your code actually feeds it.
#include <mpscheck/op.hpp>

using namespace mpscheck::op;

MPSCHECK_CATALOG(custom_cases) {
  // x * sigmoid(1.702 x): the "quick GELU" some CLIP checkpoints use.
  add_op(catalog,
         OpDef{"custom", "quick_gelu", {Arg::randn("x", {8, 197, 64})},
               [](const Tensors& a) { return Tensors{a[0] * at::sigmoid(1.702 * a[0])}; },
               "x * torch.sigmoid(1.702 * x)", true, "activation"},
         {c10::kFloat}, {Variant::contiguous(), Variant::transposed()});
}

MPSCHECK_PLUGIN("custom-example", "1.0.0")

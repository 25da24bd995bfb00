// Softmax family: large logits are where reduced precision and fused kernels go wrong.
#include <mpscheck/op.hpp>

using namespace mpscheck::op;

MPSCHECK_CATALOG(softmax_cases) {
  add_op(catalog,
         OpDef{"softmax", "softmax", {Arg::uniform("x", {32, 100}, -20, 20)},
               [](const Tensors& a) { return Tensors{at::softmax(a[0], -1)}; }, "torch.softmax(x, -1)"},
         {c10::kFloat}, {Variant::contiguous(), Variant::transposed()});
}

MPSCHECK_PLUGIN("ops-softmax", "0.1.0")

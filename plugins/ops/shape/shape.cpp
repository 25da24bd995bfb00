// Shape and memory family: pure data movement must be exact.
#include <mpscheck/op.hpp>

using namespace mpscheck::op;

MPSCHECK_CATALOG(shape_cases) {
  add_op(catalog,
         OpDef{"shape", "cat", {Arg::randn("a", {16, 24}), Arg::randn("b", {16, 24})},
               [](const Tensors& a) { return Tensors{at::cat({a[0], a[1]}, 0)}; }, "torch.cat([a, b], 0)"},
         {c10::kFloat}, {Variant::contiguous(), Variant::transposed("b")});
}

MPSCHECK_PLUGIN("ops-shape", "0.1.0")

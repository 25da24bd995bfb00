// Pooling and resizing family.
#include <mpscheck/op.hpp>

using namespace mpscheck::op;

MPSCHECK_CATALOG(pool_cases) {
  add_op(catalog,
         OpDef{"pool", "max_pool2d", {Arg::randn("x", {2, 8, 16, 16})},
               [](const Tensors& a) { return Tensors{at::max_pool2d(a[0], {2, 2}, {2, 2})}; },
               "torch.nn.functional.max_pool2d(x, 2, 2)"},
         {c10::kFloat}, {Variant::contiguous(), Variant::channels_last()});
}

MPSCHECK_PLUGIN("ops-pool", "0.1.0")

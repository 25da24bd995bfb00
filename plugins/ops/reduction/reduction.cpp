// Reductions and scans: summation order differs between backends; int64 scans are a known trap.
#include <mpscheck/op.hpp>

using namespace mpscheck::op;

MPSCHECK_CATALOG(reduction_cases) {
  add_op(catalog,
         OpDef{"reduction", "sum", {Arg::randn("x", {64, 128})},
               [](const Tensors& a) { return Tensors{a[0].sum(-1)}; }, "x.sum(-1)"},
         {c10::kFloat}, {Variant::contiguous(), Variant::transposed()});
  add_op(catalog,
         OpDef{"reduction", "cumsum", {Arg::randn("x", {32, 256})},
               [](const Tensors& a) { return Tensors{at::cumsum(a[0], -1)}; }, "torch.cumsum(x, -1)"},
         {c10::kFloat, c10::kLong}, {Variant::contiguous(), Variant::transposed()});
}

MPSCHECK_PLUGIN("ops-reduction", "0.1.0")

// Indexing family: gathers and scatters with int64 indices.
#include <mpscheck/op.hpp>

using namespace mpscheck::op;

MPSCHECK_CATALOG(indexing_cases) {
  add_op(catalog,
         OpDef{"indexing", "index_select", {Arg::randn("x", {64, 32}), Arg::integers("index", {40}, 0, 64)},
               [](const Tensors& a) { return Tensors{at::index_select(a[0], 0, a[1])}; },
               "torch.index_select(x, 0, index)"},
         {c10::kFloat}, {Variant::contiguous(), Variant::transposed("x")});
}

MPSCHECK_PLUGIN("ops-indexing", "0.1.0")

// Linear algebra family: matmul-shaped ops, transposed operands are the classic trap.
#include <mpscheck/op.hpp>

using namespace mpscheck::op;

MPSCHECK_CATALOG(linalg_cases) {
  add_op(catalog,
         OpDef{"linalg", "linear",
               {Arg::randn("x", {32, 64}), Arg::randn("weight", {48, 64}), Arg::randn("bias", {48})},
               [](const Tensors& a) { return Tensors{at::linear(a[0], a[1], a[2])}; },
               "torch.nn.functional.linear(x, weight, bias)", true, "matmul"},
         {c10::kFloat}, {Variant::contiguous(), Variant::transposed("weight")});
  add_op(catalog,
         OpDef{"linalg", "addmm",
               {Arg::randn("bias", {32, 48}), Arg::randn("a", {32, 64}), Arg::randn("b", {64, 48})},
               [](const Tensors& a) { return Tensors{at::addmm(a[0], a[1], a[2])}; },
               "torch.addmm(bias, a, b)", true, "matmul"},
         {c10::kFloat}, {Variant::contiguous(), Variant::transposed("a")});
}

MPSCHECK_PLUGIN("ops-linalg", "0.1.0")

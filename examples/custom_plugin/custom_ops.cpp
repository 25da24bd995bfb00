// Your own operator cases, checked like the built-in ones: a fused activation from your model
// and a layout your code actually feeds it.
#include <mpscheck/op.hpp>

using namespace mpscheck::op;

MPSCHECK_CATALOG(custom_cases) {
  // The family's defaults once: its name (second part of the ids), tolerance, dtypes, layouts.
  Family custom(catalog, "custom");
  custom.tolerance("activation").dtypes(dtypes::f32).variants({Variant::contiguous(), Variant::transposed()});
  // x * sigmoid(1.702 x): the "quick GELU" some CLIP checkpoints use.
  custom
      .op(
          "quick_gelu", {Arg::randn("x", {8, 197, 64})}, [](const at::Tensor& x) { return x * at::sigmoid(1.702 * x); },
          "x * torch.sigmoid(1.702 * x)")
      .add();
}

MPSCHECK_PLUGIN("custom-example", "1.0.0")

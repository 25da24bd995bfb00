// Distance family: pairwise distances, whose p = 2 path on most backends is a matmul in disguise
// (|x|^2 + |y|^2 - 2 x.y) and so cancels where the two points are close; other p take a direct path.
#include <mpscheck/op.hpp>

using namespace mpscheck::op;

// clang-format off
MPSCHECK_CATALOG(distance_cases) {
  Family distance(catalog, "distance");
  distance.tolerance("reduction").dtypes(dtypes::f32_bf16).variants({Variant::contiguous(), Variant::transposed("x")});
  using A = const Tensors&;
  distance.op("cdist", {Arg::randn("x", {32, 16}), Arg::randn("y", {24, 16})}, [](A a) { return at::cdist(a[0], a[1]); },
              "torch.cdist(x, y)").add();
  // p = 1 takes the direct path, never the matmul one; float32 only (CPU has no bfloat16 kernel for it).
  distance.op("cdist_p1", {Arg::randn("x", {32, 16}), Arg::randn("y", {24, 16})},
              [](A a) { return at::cdist(a[0], a[1], 1.0); }, "torch.cdist(x, y, p=1.0)").add(dtypes::f32);
}
// clang-format on

MPSCHECK_PLUGIN("ops-distance", "0.1.0")

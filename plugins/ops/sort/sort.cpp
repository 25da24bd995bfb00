// Sort and selection family: values must match exactly and indices must be unambiguous.
//
// Indices of equal values are ambiguous, and rounding to float16/bfloat16 creates ties that float32
// does not have. So the ops sort tie-free values built inside the op: x + 4 * p, where p is a
// random permutation of 0..n-1 (stable argsort of an integer key) and x holds integers in [0, 4).
// With n <= 64 every value is an integer below 256, exact in bfloat16, and x still carries the
// gradient. Every output that is an index is also checked by what it selects (into_distinct), so
// at larger n, where bfloat16 rounds values together, a tie broken either way is no finding. The one deliberate tie
// case uses a stable sort, whose order is defined.
#include <mpscheck/op.hpp>

using namespace mpscheck::op;

namespace {

using A = const Tensors&;

at::Tensor permutation(const at::Tensor& key, int64_t dim) {
  return std::get<1>(at::sort(key, c10::optional<bool>(true), dim, false));
}

// Tie-free values along `dim` (see the top of the file): args x (integers in [0, 4)) and key.
at::Tensor distinct(const Tensors& a, int64_t dim = -1) {
  return a[0] + 4 * permutation(a[1], dim).to(a[0].scalar_type());
}
std::string distinct_py(int64_t dim = -1) {
  return "(x + 4 * torch.sort(key, dim=" + std::to_string(dim) + ", stable=True).indices.to(x.dtype))";
}
std::vector<Arg> distinct_args(std::vector<int64_t> shape) {
  return {Arg::exact_integers("x", shape, 0, 4), Arg::integers("key", shape, 0, 1 << 20)};
}

Tensors pair(const std::tuple<at::Tensor, at::Tensor>& t) { return Tensors{std::get<0>(t), std::get<1>(t)}; }

// Output `output` (the indices: the second, or argsort's only one) indexes into the tie-free values
// along `dim`, and is checked by what it selects. The values are tie-free only while they are exact
// in the compute dtype (4n <= 256 in bfloat16, 2048 in float16); past that, as at the sizes explore
// tries, rounding makes ties, and an index is right if it selects an equal value.
IndexOf into_distinct(int64_t dim = -1, int output = 1) {
  return IndexOf{output, [dim](A a) { return distinct(a, dim); }, dim, false};
}

}  // namespace

// clang-format off
MPSCHECK_CATALOG(sort_cases) {
  // Selection moves values, it never computes new ones.
  const Variant contiguous = Variant::contiguous();
  const std::vector<Variant> strided = {contiguous, Variant::transposed("x"), Variant::sliced("x")};
  Family sort(catalog, "sort");
  sort.tolerance("shape").dtypes(dtypes::all).variants(strided);
  const std::string D = distinct_py();

  sort.op("sort", distinct_args({16, 64}), [](A a) { return pair(at::sort(distinct(a), -1, false)); },
          "torch.sort(" + D + ", -1)").index(into_distinct()).add();
  sort.op("sort_descending", distinct_args({16, 64}), [](A a) { return pair(at::sort(distinct(a), -1, true)); },
          "torch.sort(" + D + ", -1, descending=True)").index(into_distinct()).add();
  sort.op("sort_dim0", distinct_args({48, 12}), [](A a) { return pair(at::sort(distinct(a, 0), 0, false)); },
          "torch.sort(" + distinct_py(0) + ", 0)").index(into_distinct(0)).add();
  // Many ties on purpose: a stable sort defines the order of equal values.
  sort.op("sort_stable_ties", {Arg::exact_integers("x", {16, 64}, -4, 5)},
          [](A a) { return pair(at::sort(a[0], c10::optional<bool>(true), -1, false)); },
          "torch.sort(x, dim=-1, stable=True)").add();
  sort.op("sort_stable_ties_descending", {Arg::exact_integers("x", {16, 64}, -4, 5)},
          [](A a) { return pair(at::sort(a[0], c10::optional<bool>(true), -1, true)); },
          "torch.sort(x, dim=-1, descending=True, stable=True)")
      .variants({contiguous, Variant::transposed("x")}).add();
  sort.op("argsort", distinct_args({16, 64}), [](A a) { return at::argsort(distinct(a), int64_t{-1}, false); },
          "torch.argsort(" + D + ", -1)").no_grad().index(into_distinct(-1, 0)).add();
  sort.op("msort", distinct_args({48, 12}), [](A a) { return at::msort(distinct(a, 0)); },
          "torch.msort(" + distinct_py(0) + ")").add();
  sort.op("topk_largest", distinct_args({16, 64}), [](A a) { return pair(at::topk(distinct(a), 10, -1, true, true)); },
          "torch.topk(" + D + ", 10, -1, largest=True)").index(into_distinct()).add();
  sort.op("topk_smallest", distinct_args({16, 64}), [](A a) { return pair(at::topk(distinct(a), 7, -1, false, true)); },
          "torch.topk(" + D + ", 7, -1, largest=False)").index(into_distinct()).add();
  sort.op("topk_dim0", distinct_args({48, 12}), [](A a) { return pair(at::topk(distinct(a, 0), 5, 0, true, true)); },
          "torch.topk(" + distinct_py(0) + ", 5, 0)").index(into_distinct(0)).add();
  sort.op("kthvalue", distinct_args({16, 64}), [](A a) { return pair(at::kthvalue(distinct(a), 20, -1)); },
          "torch.kthvalue(" + D + ", 20, -1)").index(into_distinct()).add();
  sort.op("median", distinct_args({16, 63}), [](A a) { return pair(at::median(distinct(a), -1)); },
          "torch.median(" + D + ", -1)").index(into_distinct()).add();
  sort.op("median_even", distinct_args({16, 64}), [](A a) { return pair(at::median(distinct(a), -1)); },
          "torch.median(" + D + ", -1)").index(into_distinct()).add();
  sort.op("median_all", distinct_args({1, 64}), [](A a) { return at::median(distinct(a)); }, "torch.median(" + D + ")")
      .variants({contiguous, Variant::sliced("x")}).add();
  // The most frequent value is clamp(p - 40, 0) = 0 (41 times) plus a per-row offset; which of the
  // equal elements mode's index names is not defined, so only the values are compared.
  sort.op("mode", {Arg::integers("key", {16, 64}, 0, 1 << 20), Arg::exact_integers("x", {16, 1}, 0, 5)},
          [](A a) {
            at::Tensor v = at::clamp_min(permutation(a[0], -1) - 40, 0).to(a[1].scalar_type()) + a[1];
            return std::get<0>(at::mode(v, -1));
          },
          "torch.mode(torch.clamp(torch.sort(key, dim=-1, stable=True).indices - 40, min=0).to(x.dtype) + x, -1).values")
      .no_grad().variants({contiguous, Variant::expanded("x")}).add();
  const Case cummax = sort.op("cummax", distinct_args({16, 64}), [](A a) { return pair(at::cummax(distinct(a), -1)); },
                              "torch.cummax(" + D + ", -1)").index(into_distinct());
  const Case cummin = sort.op("cummin", distinct_args({16, 64}), [](A a) { return pair(at::cummin(distinct(a), -1)); },
                              "torch.cummin(" + D + ", -1)").index(into_distinct());
  cummax.add(dtypes::f32_ints);
  cummin.add(dtypes::f32_ints);
  // Backward of cummax/cummin sums many rounded gradients into the running extreme: forward
  // only in float16/bfloat16.
  cummax.no_grad().add({c10::kBFloat16});
  cummin.no_grad().add({c10::kBFloat16});

  // ----- unique -----
  const auto unique_outputs = [](const std::tuple<at::Tensor, at::Tensor, at::Tensor>& t) {
    return Tensors{std::get<0>(t), std::get<1>(t), std::get<2>(t)};
  };
  sort.op("unique", {Arg::exact_integers("x", {16, 64}, -6, 7)},
          [=](A a) { return unique_outputs(at::_unique2(a[0], true, true, true)); },
          "torch.unique(x, sorted=True, return_inverse=True, return_counts=True)").no_grad().add();
  sort.op("unique_dim", {Arg::exact_integers("x", {40, 3}, 0, 3)},
          [=](A a) { return unique_outputs(at::unique_dim(a[0], 0, true, true, true)); },
          "torch.unique(x, sorted=True, return_inverse=True, return_counts=True, dim=0)")
      .no_grad().variants({contiguous, Variant::transposed("x")}).add();
  sort.op("unique_consecutive", {Arg::exact_integers("x", {200}, 0, 3)},
          [=](A a) { return unique_outputs(at::unique_consecutive(a[0], true, true)); },
          "torch.unique_consecutive(x, return_inverse=True, return_counts=True)")
      .no_grad().variants({contiguous, Variant::sliced("x")}).add();
  sort.op("unique", {Arg::mask("x", {16, 64})}, [=](A a) { return unique_outputs(at::_unique2(a[0], true, true, true)); },
          "torch.unique(x, sorted=True, return_inverse=True, return_counts=True)")
      .no_grad().add({c10::kBool}, {contiguous, Variant::transposed("x")});

  // ----- searchsorted / bucketize: boundaries 4p + x (distinct, sorted), integer queries hit
  // boundaries exactly, which is where left and right differ -----
  const std::string B = "torch.sort(" + D + ", -1).values";
  const Variants queries = {contiguous, Variant::transposed("q"), Variant::sliced("q")};
  const auto with_queries = [](std::vector<Arg> args, std::vector<int64_t> shape) {
    args.push_back(Arg::exact_integers("q", std::move(shape), -8, 264));
    return args;
  };
  for (bool right : {false, true}) {
    const std::string side = right ? "right" : "left", py_right = right ? "True" : "False";
    sort.op("searchsorted_" + side, with_queries(distinct_args({8, 64}), {8, 40}),
            [right](A a) { return at::searchsorted(std::get<0>(at::sort(distinct(a), -1)), a[2], false, right); },
            "torch.searchsorted(" + B + ", q, right=" + py_right + ")").no_grad().variants(queries).add();
    sort.op("bucketize_" + side, with_queries(distinct_args({1, 64}), {16, 20}),
            [right](A a) { return at::bucketize(a[2], std::get<0>(at::sort(distinct(a), -1))[0], false, right); },
            "torch.bucketize(q, " + B + "[0], right=" + py_right + ")").no_grad().variants(queries).add();
  }
  sort.op("searchsorted_int32", with_queries(distinct_args({8, 64}), {8, 40}),
          [](A a) { return at::searchsorted(std::get<0>(at::sort(distinct(a), -1)), a[2], true, false); },
          "torch.searchsorted(" + B + ", q, out_int32=True)").no_grad().add({c10::kFloat, c10::kLong}, {contiguous});

  // ----- large: more than 2^24 elements; values only (float32 randn has ties at this size) -----
  sort.op("sort_large", {Arg::randn("x", {(1 << 24) + 4096})}, [](A a) { return std::get<0>(at::sort(a[0])); },
          "torch.sort(x).values").no_grad().large().add(dtypes::f32);
  sort.op("topk_large", {Arg::randn("x", {(1 << 24) + 4096})}, [](A a) { return std::get<0>(at::topk(a[0], 100)); },
          "torch.topk(x, 100).values").no_grad().large().add(dtypes::f32);
}
// clang-format on

MPSCHECK_PLUGIN("ops-sort", "0.1.0")

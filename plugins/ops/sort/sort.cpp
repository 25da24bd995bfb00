// Sort and selection family: values must match exactly and indices must be unambiguous.
//
// Indices of equal values are ambiguous, and rounding to float16/bfloat16 creates ties that float32
// does not have. So the ops sort tie-free values built inside the op: x + 4 * p, where p is a
// random permutation of 0..n-1 (stable argsort of an integer key) and x holds integers in [0, 4).
// With n <= 64 every value is an integer below 256, exact in bfloat16, and x still carries the
// gradient. The one deliberate tie case uses a stable sort, whose order is defined.
#include <mpscheck/op.hpp>

using namespace mpscheck::op;

namespace {

const std::vector<c10::ScalarType> kFloats = {c10::kFloat, c10::kHalf, c10::kBFloat16};
const std::vector<c10::ScalarType> kAll = {c10::kFloat, c10::kHalf, c10::kBFloat16, c10::kLong, c10::kInt};

OpDef def(std::string op, std::vector<Arg> args, OpFn fn, std::string python, bool differentiable = true) {
  OpDef d;
  d.family = "sort";
  d.op = std::move(op);
  d.args = std::move(args);
  d.fn = std::move(fn);
  d.python = std::move(python);
  d.differentiable = differentiable;
  d.tolerance = "shape";  // selection moves values, it never computes new ones
  return d;
}


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

// The second output indexes into the tie-free values along `dim`: also checked by what it selects.
OpDef indexed(OpDef d, int64_t dim = -1) {
  d.indices.push_back(IndexOf{1, [dim](const Tensors& a) { return distinct(a, dim); }, dim, false});
  return d;
}

}  // namespace

MPSCHECK_CATALOG(sort_cases) {
  const Variant contiguous = Variant::contiguous();
  const std::vector<Variant> strided = {contiguous, Variant::transposed("x"), Variant::sliced("x")};
  const std::string D = distinct_py();

  add_op(catalog,
         indexed(def("sort", distinct_args({16, 64}),
             [](const Tensors& a) { return pair(at::sort(distinct(a), -1, false)); }, "torch.sort(" + D + ", -1)")),
         kAll, strided);
  add_op(catalog,
         def("sort_descending", distinct_args({16, 64}),
             [](const Tensors& a) { return pair(at::sort(distinct(a), -1, true)); },
             "torch.sort(" + D + ", -1, descending=True)"),
         kAll, strided);
  add_op(catalog,
         def("sort_dim0", distinct_args({48, 12}),
             [](const Tensors& a) { return pair(at::sort(distinct(a, 0), 0, false)); },
             "torch.sort(" + distinct_py(0) + ", 0)"),
         kAll, strided);
  // Many ties on purpose: a stable sort defines the order of equal values.
  add_op(catalog,
         def("sort_stable_ties", {Arg::exact_integers("x", {16, 64}, -4, 5)},
             [](const Tensors& a) { return pair(at::sort(a[0], c10::optional<bool>(true), -1, false)); },
             "torch.sort(x, dim=-1, stable=True)"),
         kAll, {contiguous, Variant::transposed("x"), Variant::sliced("x")});
  add_op(catalog,
         def("sort_stable_ties_descending", {Arg::exact_integers("x", {16, 64}, -4, 5)},
             [](const Tensors& a) { return pair(at::sort(a[0], c10::optional<bool>(true), -1, true)); },
             "torch.sort(x, dim=-1, descending=True, stable=True)"),
         kAll, {contiguous, Variant::transposed("x")});
  add_op(catalog,
         def("argsort", distinct_args({16, 64}), [](const Tensors& a) { return Tensors{at::argsort(distinct(a), int64_t{-1}, false)}; },
             "torch.argsort(" + D + ", -1)", false),
         kAll, strided);
  add_op(catalog,
         def("msort", distinct_args({48, 12}), [](const Tensors& a) { return Tensors{at::msort(distinct(a, 0))}; },
             "torch.msort(" + distinct_py(0) + ")"),
         kAll, strided);
  add_op(catalog,
         indexed(def("topk_largest", distinct_args({16, 64}),
             [](const Tensors& a) { return pair(at::topk(distinct(a), 10, -1, true, true)); },
             "torch.topk(" + D + ", 10, -1, largest=True)")),
         kAll, strided);
  add_op(catalog,
         def("topk_smallest", distinct_args({16, 64}),
             [](const Tensors& a) { return pair(at::topk(distinct(a), 7, -1, false, true)); },
             "torch.topk(" + D + ", 7, -1, largest=False)"),
         kAll, strided);
  add_op(catalog,
         def("topk_dim0", distinct_args({48, 12}),
             [](const Tensors& a) { return pair(at::topk(distinct(a, 0), 5, 0, true, true)); },
             "torch.topk(" + distinct_py(0) + ", 5, 0)"),
         kAll, strided);
  add_op(catalog,
         indexed(def("kthvalue", distinct_args({16, 64}),
             [](const Tensors& a) { return pair(at::kthvalue(distinct(a), 20, -1)); },
             "torch.kthvalue(" + D + ", 20, -1)")),
         kAll, strided);
  add_op(catalog,
         def("median", distinct_args({16, 63}), [](const Tensors& a) { return pair(at::median(distinct(a), -1)); },
             "torch.median(" + D + ", -1)"),
         kAll, strided);
  add_op(catalog,
         def("median_even", distinct_args({16, 64}), [](const Tensors& a) { return pair(at::median(distinct(a), -1)); },
             "torch.median(" + D + ", -1)"),
         kAll, strided);
  add_op(catalog,
         def("median_all", distinct_args({1, 64}), [](const Tensors& a) { return Tensors{at::median(distinct(a))}; },
             "torch.median(" + D + ")"),
         kAll, {contiguous, Variant::sliced("x")});
  // The most frequent value is clamp(p - 40, 0) = 0 (41 times) plus a per-row offset; which of the
  // equal elements mode's index names is not defined, so only the values are compared.
  add_op(catalog,
         def("mode", {Arg::integers("key", {16, 64}, 0, 1 << 20), Arg::exact_integers("x", {16, 1}, 0, 5)},
             [](const Tensors& a) {
               at::Tensor v = at::clamp_min(permutation(a[0], -1) - 40, 0).to(a[1].scalar_type()) + a[1];
               return Tensors{std::get<0>(at::mode(v, -1))};
             },
             "torch.mode(torch.clamp(torch.sort(key, dim=-1, stable=True).indices - 40, min=0).to(x.dtype) + x, -1).values",
             false),
         kAll, {contiguous, Variant::expanded("x")});
  add_op(catalog,
         def("cummax", distinct_args({16, 64}), [](const Tensors& a) { return pair(at::cummax(distinct(a), -1)); },
             "torch.cummax(" + D + ", -1)"),
         {c10::kFloat, c10::kLong, c10::kInt}, strided);
  add_op(catalog,
         def("cummin", distinct_args({16, 64}), [](const Tensors& a) { return pair(at::cummin(distinct(a), -1)); },
             "torch.cummin(" + D + ", -1)"),
         {c10::kFloat, c10::kLong, c10::kInt}, strided);
  {
    // Backward of cummax/cummin sums many rounded gradients into the running extreme: forward
    // only in float16/bfloat16.
    OpDef mx = def("cummax", distinct_args({16, 64}), [](const Tensors& a) { return pair(at::cummax(distinct(a), -1)); },
                   "torch.cummax(" + D + ", -1)", false);
    add_op(catalog, mx, {c10::kBFloat16}, strided);
    OpDef mn = def("cummin", distinct_args({16, 64}), [](const Tensors& a) { return pair(at::cummin(distinct(a), -1)); },
                   "torch.cummin(" + D + ", -1)", false);
    add_op(catalog, mn, {c10::kBFloat16}, strided);
  }

  // ----- unique -----
  add_op(catalog,
         def("unique", {Arg::exact_integers("x", {16, 64}, -6, 7)},
             [](const Tensors& a) {
               auto t = at::_unique2(a[0], true, true, true);
               return Tensors{std::get<0>(t), std::get<1>(t), std::get<2>(t)};
             },
             "torch.unique(x, sorted=True, return_inverse=True, return_counts=True)", false),
         kAll, strided);
  add_op(catalog,
         def("unique_dim", {Arg::exact_integers("x", {40, 3}, 0, 3)},
             [](const Tensors& a) {
               auto t = at::unique_dim(a[0], 0, true, true, true);
               return Tensors{std::get<0>(t), std::get<1>(t), std::get<2>(t)};
             },
             "torch.unique(x, sorted=True, return_inverse=True, return_counts=True, dim=0)", false),
         kAll, {contiguous, Variant::transposed("x")});
  add_op(catalog,
         def("unique_consecutive", {Arg::exact_integers("x", {200}, 0, 3)},
             [](const Tensors& a) {
               auto t = at::unique_consecutive(a[0], true, true);
               return Tensors{std::get<0>(t), std::get<1>(t), std::get<2>(t)};
             },
             "torch.unique_consecutive(x, return_inverse=True, return_counts=True)", false),
         kAll, {contiguous, Variant::sliced("x")});
  add_op(catalog,
         def("unique", {Arg::mask("x", {16, 64})},
             [](const Tensors& a) {
               auto t = at::_unique2(a[0], true, true, true);
               return Tensors{std::get<0>(t), std::get<1>(t), std::get<2>(t)};
             },
             "torch.unique(x, sorted=True, return_inverse=True, return_counts=True)", false),
         {c10::kBool}, {contiguous, Variant::transposed("x")});

  // ----- searchsorted / bucketize: boundaries 4p + x (distinct, sorted), integer queries hit
  // boundaries exactly, which is where left and right differ -----
  const std::string B = "torch.sort(" + D + ", -1).values";
  for (bool right : {false, true}) {
    const std::string side = right ? "right" : "left";
    std::vector<Arg> args = distinct_args({8, 64});
    args.push_back(Arg::exact_integers("q", {8, 40}, -8, 264));
    add_op(catalog,
           def("searchsorted_" + side, args,
               [right](const Tensors& a) {
                 return Tensors{at::searchsorted(std::get<0>(at::sort(distinct(a), -1)), a[2], false, right)};
               },
               "torch.searchsorted(" + B + ", q, right=" + (right ? "True" : "False") + ")", false),
           kAll, {contiguous, Variant::transposed("q"), Variant::sliced("q")});
    std::vector<Arg> bargs = distinct_args({1, 64});
    bargs.push_back(Arg::exact_integers("q", {16, 20}, -8, 264));
    add_op(catalog,
           def("bucketize_" + side, bargs,
               [right](const Tensors& a) {
                 return Tensors{at::bucketize(a[2], std::get<0>(at::sort(distinct(a), -1))[0], false, right)};
               },
               "torch.bucketize(q, " + B + "[0], right=" + (right ? "True" : "False") + ")", false),
           kAll, {contiguous, Variant::transposed("q"), Variant::sliced("q")});
  }
  {
    std::vector<Arg> args = distinct_args({8, 64});
    args.push_back(Arg::exact_integers("q", {8, 40}, -8, 264));
    add_op(catalog,
           def("searchsorted_int32", args,
               [](const Tensors& a) {
                 return Tensors{at::searchsorted(std::get<0>(at::sort(distinct(a), -1)), a[2], true, false)};
               },
               "torch.searchsorted(" + B + ", q, out_int32=True)", false),
           {c10::kFloat, c10::kLong}, {contiguous});
  }

  // ----- large: more than 2^24 elements; values only (float32 randn has ties at this size) -----
  OpDef sort_large = def("sort_large", {Arg::randn("x", {(1 << 24) + 4096})},
                         [](const Tensors& a) { return Tensors{std::get<0>(at::sort(a[0]))}; },
                         "torch.sort(x).values", false);
  sort_large.tags = {"large"};
  add_op(catalog, sort_large, {c10::kFloat}, {Variant{"large", [](std::vector<Arg>&) {}}});
  OpDef topk_large = def("topk_large", {Arg::randn("x", {(1 << 24) + 4096})},
                         [](const Tensors& a) { return Tensors{std::get<0>(at::topk(a[0], 100))}; },
                         "torch.topk(x, 100).values", false);
  topk_large.tags = {"large"};
  add_op(catalog, topk_large, {c10::kFloat}, {Variant{"large", [](std::vector<Arg>&) {}}});
}

MPSCHECK_PLUGIN("ops-sort", "0.1.0")

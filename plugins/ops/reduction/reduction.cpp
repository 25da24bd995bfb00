// Reductions and scans: summation order differs between backends; int64/bool reductions, index
// results past 2^24 and very long rows are known traps.
#include <mpscheck/op.hpp>

#include <cmath>
#include <limits>

using namespace mpscheck::op;

namespace {

const std::vector<int64_t> kShape = {64, 128};

using T = const at::Tensor&;

// float32: contiguous, transposed (reduce over a strided dim), sliced; others: contiguous, transposed.
Family reduction_family(mpscheck::Catalog& catalog) {
  return Family(catalog, "reduction")
      .dtypes(dtypes::floats)
      .variants(layouts::strided, {Variant::contiguous(), Variant::transposed()});
}

// Past 2^24 elements float32 cannot count and float32 indices cannot address: forward only.
void add_large(const Case& c, c10::ScalarType dtype = c10::kFloat) { c.no_grad().large().add({dtype}); }

Arg x_arg() { return Arg::randn("x", kShape); }

// An arg-reduction's index is ambiguous where values tie (rounding to float16/bfloat16 makes
// ties): it is checked by the value it selects from x.
IndexOf into_x(bool flat) {
  return IndexOf{0, [](const Tensors& a) { return a[0]; }, -1, flat};
}

}  // namespace

// clang-format off
MPSCHECK_CATALOG(reduction_sum_cases) {
  const Family reduction = reduction_family(catalog);
  const DTypes with_bool = {c10::kFloat, c10::kHalf, c10::kBFloat16, c10::kLong, c10::kInt, c10::kBool};
  reduction.op("sum", {x_arg()}, [](T x) { return x.sum(-1); }, "x.sum(-1)").add(with_bool);
  reduction.op("sum_dim0", {x_arg()}, [](T x) { return x.sum(0); }, "x.sum(0)").add(with_bool);
  reduction.op("sum_all", {x_arg()}, [](T x) { return x.sum(); }, "x.sum()").add(with_bool);
  reduction.op("sum_keepdim", {Arg::randn("x", {8, 16, 24})}, [](T x) { return x.sum(at::IntArrayRef{0, 2}, true); },
               "x.sum([0, 2], keepdim=True)").add();
  reduction.op("mean", {x_arg()}, [](T x) { return x.mean(-1); }, "x.mean(-1)").add();
  reduction.op("mean_all", {x_arg()}, [](T x) { return x.mean(); }, "x.mean()").add();
  // Short rows keep the product finite; the integer cases include zeros (a special prod backward path).
  reduction.op("prod", {Arg::uniform("x", {64, 8}, -2, 2)}, [](T x) { return x.prod(-1); }, "x.prod(-1)")
      .add(dtypes::all);
  reduction.op("logsumexp", {Arg::uniform("x", kShape, -50, 50)}, [](T x) { return at::logsumexp(x, {-1}); },
               "torch.logsumexp(x, -1)").add();
  reduction.op("nansum", {x_arg()}, [](T x) { return at::nansum(x, {-1}); }, "torch.nansum(x, -1)").add(dtypes::f32);

  reduction.op("cumsum", {Arg::randn("x", {32, 256})}, [](T x) { return at::cumsum(x, -1); }, "torch.cumsum(x, -1)")
      .add(with_bool);
  reduction.op("cumsum_dim0", {Arg::randn("x", {32, 256})}, [](T x) { return at::cumsum(x, 0); },
               "torch.cumsum(x, 0)").add({c10::kFloat, c10::kLong});
  reduction.op("cumprod", {Arg::uniform("x", {32, 64}, 0.8, 1.25)}, [](T x) { return at::cumprod(x, -1); },
               "torch.cumprod(x, -1)").add(dtypes::f32);
  reduction.op("cumprod_int", {Arg::uniform("x", {32, 16}, -2, 3)}, [](T x) { return at::cumprod(x, -1); },
               "torch.cumprod(x, -1)").no_grad().add({c10::kFloat, c10::kLong});
  reduction.op("cummax", {x_arg()}, [](T x) { return std::get<0>(at::cummax(x, -1)); }, "torch.cummax(x, -1).values")
      .add({c10::kFloat, c10::kLong});
  reduction.op("logcumsumexp", {Arg::uniform("x", kShape, -20, 20)}, [](T x) { return at::logcumsumexp(x, -1); },
               "torch.logcumsumexp(x, -1)").add(dtypes::f32);

  add_large(reduction.op("sum_all", {Arg::randn("x", {1 << 25})}, [](T x) { return x.sum(); }, "x.sum()"));
  add_large(reduction.op("sum_all_int", {Arg::randn("x", {1 << 25})}, [](T x) { return x.sum(); }, "x.sum()"),
            c10::kInt);
  add_large(reduction.op("mean", {Arg::randn("x", {4, 1 << 23})}, [](T x) { return x.mean(-1); }, "x.mean(-1)"));
  add_large(reduction.op("cumsum", {Arg::randn("x", {1 << 25})}, [](T x) { return at::cumsum(x, 0); },
                         "torch.cumsum(x, 0)"), c10::kLong);
  add_large(reduction.op("logsumexp", {Arg::uniform("x", {2, 1 << 24}, -50, 50)},
                         [](T x) { return at::logsumexp(x, {-1}); }, "torch.logsumexp(x, -1)"));
}
// clang-format on

// clang-format off
MPSCHECK_CATALOG(reduction_extrema_cases) {
  const Family reduction = reduction_family(catalog);
  reduction.op("amax", {x_arg()}, [](T x) { return at::amax(x, {-1}); }, "torch.amax(x, -1)").add(dtypes::all);
  reduction.op("amin", {x_arg()}, [](T x) { return at::amin(x, {-1}); }, "torch.amin(x, -1)").add(dtypes::all);
  reduction.op("amax_dim0", {x_arg()}, [](T x) { return at::amax(x, {0}); }, "torch.amax(x, 0)").add(dtypes::f32_ints);
  reduction.op("max_dim", {x_arg()}, [](T x) { return std::get<0>(at::max(x, -1)); }, "torch.max(x, -1).values")
      .add(dtypes::all);
  reduction.op("min_dim", {x_arg()}, [](T x) { return std::get<0>(at::min(x, -1)); }, "torch.min(x, -1).values")
      .add(dtypes::all);
  reduction.op("max_all", {x_arg()}, [](T x) { return x.max(); }, "x.max()").add(dtypes::all);
  // Integer inputs tie often: torch returns the first index, backends that do not are caught here.
  reduction.op("argmax", {x_arg()}, [](T x) { return at::argmax(x, -1); }, "torch.argmax(x, -1)")
      .no_grad().index(into_x(false)).add(dtypes::all);
  reduction.op("argmin", {x_arg()}, [](T x) { return at::argmin(x, -1); }, "torch.argmin(x, -1)")
      .no_grad().index(into_x(false)).add(dtypes::all);
  reduction.op("argmax_all", {x_arg()}, [](T x) { return at::argmax(x); }, "torch.argmax(x)")
      .no_grad().index(into_x(true)).add(dtypes::all);
  add_large(reduction.op("argmax", {Arg::randn("x", {1 << 25})}, [](T x) { return at::argmax(x); }, "torch.argmax(x)")
                .index(into_x(true)));
  add_large(reduction.op("amax", {Arg::randn("x", {2, 1 << 24})}, [](T x) { return at::amax(x, {-1}); },
                         "torch.amax(x, -1)"));
}
// clang-format on

// clang-format off
MPSCHECK_CATALOG(reduction_statistics_cases) {
  const Family reduction = reduction_family(catalog);
  reduction.op("std", {x_arg()}, [](T x) { return at::std(x, {-1}, true, false); }, "torch.std(x, -1, unbiased=True)")
      .add();
  reduction.op("std_biased", {x_arg()}, [](T x) { return at::std(x, {-1}, false, false); },
               "torch.std(x, -1, unbiased=False)").add(dtypes::f32);
  reduction.op("var", {x_arg()}, [](T x) { return at::var(x, {-1}, true, false); }, "torch.var(x, -1, unbiased=True)")
      .add();
  reduction.op("var_biased", {x_arg()}, [](T x) { return at::var(x, {-1}, false, false); },
               "torch.var(x, -1, unbiased=False)").add();
  // A large common offset: one-pass variance formulas lose every digit here.
  reduction.op("var_offset", {Arg::uniform("x", kShape, 1000, 1001)}, [](T x) { return at::var(x, {-1}, true, false); },
               "torch.var(x, -1, unbiased=True)").add(dtypes::f32);
  reduction.op("var_all", {x_arg()}, [](T x) { return at::var(x); }, "torch.var(x)").add(dtypes::f32);

  const double inf = std::numeric_limits<double>::infinity();
  reduction.op("norm_l1", {x_arg()}, [](T x) { return at::linalg_vector_norm(x, 1, {-1}, false, c10::nullopt); },
               "torch.linalg.vector_norm(x, 1, -1)").add();
  reduction.op("norm_l2", {x_arg()}, [](T x) { return at::linalg_vector_norm(x, 2, {-1}, false, c10::nullopt); },
               "torch.linalg.vector_norm(x, 2, -1)").add();
  reduction.op("norm_inf", {x_arg()}, [inf](T x) { return at::linalg_vector_norm(x, inf, {-1}, false, c10::nullopt); },
               "torch.linalg.vector_norm(x, float('inf'), -1)").add();
  reduction.op("norm_l2_all", {x_arg()}, [](T x) { return at::norm(x); }, "torch.norm(x)").add(dtypes::f32);

  // Masks over short rows so that both true and false results occur.
  const std::vector<int64_t> rows = {256, 4};
  const Variants variants = {Variant::contiguous(), Variant::transposed()};
  for (c10::ScalarType t : {c10::kBool, c10::kFloat, c10::kLong}) {
    const Arg in = t == c10::kBool ? Arg::mask("x", rows) : Arg::integers("x", rows, 0, 2, c10::ScalarType::Undefined);
    reduction.op("any", {in}, [](T x) { return x.any(-1); }, "x.any(-1)").no_grad().add({t}, variants);
    reduction.op("all", {in}, [](T x) { return x.all(-1); }, "x.all(-1)").no_grad().add({t}, variants);
    reduction.op("count_nonzero", {in}, [](T x) { return at::count_nonzero(x, c10::optional<int64_t>(-1)); },
                 "torch.count_nonzero(x, -1)").no_grad().add({t}, variants);
  }
  add_large(reduction.op("count_nonzero", {Arg::mask("x", {1 << 25})}, [](T x) { return at::count_nonzero(x); },
                         "torch.count_nonzero(x)"), c10::kBool);
}
// clang-format on

MPSCHECK_PLUGIN("ops-reduction", "0.1.0")

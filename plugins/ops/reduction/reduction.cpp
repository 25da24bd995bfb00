// Reductions and scans: summation order differs between backends; int64/bool reductions, index
// results past 2^24 and very long rows are known traps.
#include <mpscheck/op.hpp>

#include <cmath>
#include <limits>

using namespace mpscheck::op;

namespace {

const std::vector<int64_t> kShape = {64, 128};
const std::vector<c10::ScalarType> kInts = {c10::kLong, c10::kInt};

struct Coverage {
  bool reduced = true;                    // also float16 and bfloat16
  std::vector<c10::ScalarType> integers;  // integer (and bool) dtypes the op takes
};

OpDef make(std::string op, std::vector<Arg> args, std::function<at::Tensor(const Tensors&)> fn,
           std::string python, bool differentiable = true) {
  OpDef d;
  d.family = "reduction";
  d.op = std::move(op);
  d.args = std::move(args);
  d.fn = [fn = std::move(fn)](const Tensors& a) { return Tensors{fn(a)}; };
  d.python = std::move(python);
  d.differentiable = differentiable;
  return d;
}

// float32: contiguous, transposed (reduce over a strided dim), sliced; others: contiguous, transposed.
void add_reduction(mpscheck::Catalog& catalog, const OpDef& def, const Coverage& cov = {}) {
  const std::vector<Variant> all = {Variant::contiguous(), Variant::transposed(), Variant::sliced()};
  const std::vector<Variant> two = {Variant::contiguous(), Variant::transposed()};
  add_op(catalog, def, {c10::kFloat}, all);
  if (cov.reduced) add_op(catalog, def, {c10::kHalf, c10::kBFloat16}, two);
  if (!cov.integers.empty()) add_op(catalog, def, cov.integers, two);
}

// Past 2^24 elements float32 cannot count and float32 indices cannot address: forward only.
void add_large(mpscheck::Catalog& catalog, OpDef def, c10::ScalarType dtype = c10::kFloat) {
  def.differentiable = false;
  def.tags.push_back("large");
  add_op(catalog, def, {dtype}, {Variant{"large", [](std::vector<Arg>&) {}}});
}

Arg x_arg() { return Arg::randn("x", kShape); }

// An arg-reduction's index is ambiguous where values tie (rounding to float16/bfloat16 makes
// ties): it is checked by the value it selects from x.
OpDef indexing_x(OpDef d, bool flat) {
  d.indices.push_back(IndexOf{0, [](const Tensors& a) { return a[0]; }, -1, flat});
  return d;
}

}  // namespace

MPSCHECK_CATALOG(reduction_sum_cases) {
  const Coverage with_ints{true, {c10::kLong, c10::kInt, c10::kBool}};
  const Coverage floats;
  add_reduction(catalog, make("sum", {x_arg()}, [](const Tensors& a) { return a[0].sum(-1); }, "x.sum(-1)"),
                with_ints);
  add_reduction(catalog, make("sum_dim0", {x_arg()}, [](const Tensors& a) { return a[0].sum(0); }, "x.sum(0)"),
                with_ints);
  add_reduction(catalog, make("sum_all", {x_arg()}, [](const Tensors& a) { return a[0].sum(); }, "x.sum()"),
                with_ints);
  add_reduction(catalog, make("sum_keepdim", {Arg::randn("x", {8, 16, 24})},
                              [](const Tensors& a) { return a[0].sum(at::IntArrayRef{0, 2}, true); }, "x.sum([0, 2], keepdim=True)"),
                floats);
  add_reduction(catalog, make("mean", {x_arg()}, [](const Tensors& a) { return a[0].mean(-1); }, "x.mean(-1)"),
                floats);
  add_reduction(catalog, make("mean_all", {x_arg()}, [](const Tensors& a) { return a[0].mean(); }, "x.mean()"),
                floats);
  // Short rows keep the product finite; the integer cases include zeros (a special prod backward path).
  add_reduction(catalog, make("prod", {Arg::uniform("x", {64, 8}, -2, 2)},
                              [](const Tensors& a) { return a[0].prod(-1); }, "x.prod(-1)"),
                Coverage{true, kInts});
  add_reduction(catalog, make("logsumexp", {Arg::uniform("x", kShape, -50, 50)},
                              [](const Tensors& a) { return at::logsumexp(a[0], {-1}); }, "torch.logsumexp(x, -1)"),
                floats);
  add_reduction(catalog, make("nansum", {x_arg()}, [](const Tensors& a) { return at::nansum(a[0], {-1}); },
                              "torch.nansum(x, -1)"), Coverage{false, {}});

  add_reduction(catalog, make("cumsum", {Arg::randn("x", {32, 256})},
                              [](const Tensors& a) { return at::cumsum(a[0], -1); }, "torch.cumsum(x, -1)"),
                with_ints);
  add_reduction(catalog, make("cumsum_dim0", {Arg::randn("x", {32, 256})},
                              [](const Tensors& a) { return at::cumsum(a[0], 0); }, "torch.cumsum(x, 0)"),
                Coverage{false, {c10::kLong}});
  add_reduction(catalog, make("cumprod", {Arg::uniform("x", {32, 64}, 0.8, 1.25)},
                              [](const Tensors& a) { return at::cumprod(a[0], -1); }, "torch.cumprod(x, -1)"),
                Coverage{false, {}});
  add_reduction(catalog, make("cumprod_int", {Arg::uniform("x", {32, 16}, -2, 3)},
                              [](const Tensors& a) { return at::cumprod(a[0], -1); }, "torch.cumprod(x, -1)", false),
                Coverage{false, {c10::kLong}});
  add_reduction(catalog, make("cummax", {x_arg()},
                              [](const Tensors& a) { return std::get<0>(at::cummax(a[0], -1)); },
                              "torch.cummax(x, -1).values"), Coverage{false, {c10::kLong}});
  add_reduction(catalog, make("logcumsumexp", {Arg::uniform("x", kShape, -20, 20)},
                              [](const Tensors& a) { return at::logcumsumexp(a[0], -1); },
                              "torch.logcumsumexp(x, -1)"), Coverage{false, {}});

  add_large(catalog, make("sum_all", {Arg::randn("x", {1 << 25})}, [](const Tensors& a) { return a[0].sum(); },
                          "x.sum()"));
  add_large(catalog, make("sum_all_int", {Arg::randn("x", {1 << 25})}, [](const Tensors& a) { return a[0].sum(); },
                          "x.sum()"), c10::kInt);
  add_large(catalog, make("mean", {Arg::randn("x", {4, 1 << 23})}, [](const Tensors& a) { return a[0].mean(-1); },
                          "x.mean(-1)"));
  add_large(catalog, make("cumsum", {Arg::randn("x", {1 << 25})},
                          [](const Tensors& a) { return at::cumsum(a[0], 0); }, "torch.cumsum(x, 0)"), c10::kLong);
  add_large(catalog, make("logsumexp", {Arg::uniform("x", {2, 1 << 24}, -50, 50)},
                          [](const Tensors& a) { return at::logsumexp(a[0], {-1}); }, "torch.logsumexp(x, -1)"));
}

MPSCHECK_CATALOG(reduction_extrema_cases) {
  const Coverage with_ints{true, kInts};
  add_reduction(catalog, make("amax", {x_arg()}, [](const Tensors& a) { return at::amax(a[0], {-1}); },
                              "torch.amax(x, -1)"), with_ints);
  add_reduction(catalog, make("amin", {x_arg()}, [](const Tensors& a) { return at::amin(a[0], {-1}); },
                              "torch.amin(x, -1)"), with_ints);
  add_reduction(catalog, make("amax_dim0", {x_arg()}, [](const Tensors& a) { return at::amax(a[0], {0}); },
                              "torch.amax(x, 0)"), Coverage{false, kInts});
  add_reduction(catalog, make("max_dim", {x_arg()}, [](const Tensors& a) { return std::get<0>(at::max(a[0], -1)); },
                              "torch.max(x, -1).values"), with_ints);
  add_reduction(catalog, make("min_dim", {x_arg()}, [](const Tensors& a) { return std::get<0>(at::min(a[0], -1)); },
                              "torch.min(x, -1).values"), with_ints);
  add_reduction(catalog, make("max_all", {x_arg()}, [](const Tensors& a) { return a[0].max(); }, "x.max()"),
                with_ints);
  // Integer inputs tie often: torch returns the first index, backends that do not are caught here.
  add_reduction(catalog, indexing_x(make("argmax", {x_arg()}, [](const Tensors& a) { return at::argmax(a[0], -1); },
                                         "torch.argmax(x, -1)", false), false), with_ints);
  add_reduction(catalog, indexing_x(make("argmin", {x_arg()}, [](const Tensors& a) { return at::argmin(a[0], -1); },
                                         "torch.argmin(x, -1)", false), false), with_ints);
  add_reduction(catalog, indexing_x(make("argmax_all", {x_arg()}, [](const Tensors& a) { return at::argmax(a[0]); },
                                         "torch.argmax(x)", false), true), with_ints);
  add_large(catalog, indexing_x(make("argmax", {Arg::randn("x", {1 << 25})}, [](const Tensors& a) { return at::argmax(a[0]); },
                                     "torch.argmax(x)"), true));
  add_large(catalog, make("amax", {Arg::randn("x", {2, 1 << 24})},
                          [](const Tensors& a) { return at::amax(a[0], {-1}); }, "torch.amax(x, -1)"));
}

MPSCHECK_CATALOG(reduction_statistics_cases) {
  const Coverage floats;
  add_reduction(catalog, make("std", {x_arg()}, [](const Tensors& a) { return at::std(a[0], {-1}, true, false); },
                              "torch.std(x, -1, unbiased=True)"), floats);
  add_reduction(catalog, make("std_biased", {x_arg()},
                              [](const Tensors& a) { return at::std(a[0], {-1}, false, false); },
                              "torch.std(x, -1, unbiased=False)"), Coverage{false, {}});
  add_reduction(catalog, make("var", {x_arg()}, [](const Tensors& a) { return at::var(a[0], {-1}, true, false); },
                              "torch.var(x, -1, unbiased=True)"), floats);
  add_reduction(catalog, make("var_biased", {x_arg()},
                              [](const Tensors& a) { return at::var(a[0], {-1}, false, false); },
                              "torch.var(x, -1, unbiased=False)"), floats);
  // A large common offset: one-pass variance formulas lose every digit here.
  add_reduction(catalog, make("var_offset", {Arg::uniform("x", kShape, 1000, 1001)},
                              [](const Tensors& a) { return at::var(a[0], {-1}, true, false); },
                              "torch.var(x, -1, unbiased=True)"), Coverage{false, {}});
  add_reduction(catalog, make("var_all", {x_arg()}, [](const Tensors& a) { return at::var(a[0]); }, "torch.var(x)"),
                Coverage{false, {}});

  const double inf = std::numeric_limits<double>::infinity();
  add_reduction(catalog, make("norm_l1", {x_arg()},
                              [](const Tensors& a) { return at::linalg_vector_norm(a[0], 1, {-1}, false, c10::nullopt); },
                              "torch.linalg.vector_norm(x, 1, -1)"), floats);
  add_reduction(catalog, make("norm_l2", {x_arg()},
                              [](const Tensors& a) { return at::linalg_vector_norm(a[0], 2, {-1}, false, c10::nullopt); },
                              "torch.linalg.vector_norm(x, 2, -1)"), floats);
  add_reduction(catalog, make("norm_inf", {x_arg()},
                              [inf](const Tensors& a) {
                                return at::linalg_vector_norm(a[0], inf, {-1}, false, c10::nullopt);
                              },
                              "torch.linalg.vector_norm(x, float('inf'), -1)"), floats);
  add_reduction(catalog, make("norm_l2_all", {x_arg()}, [](const Tensors& a) { return at::norm(a[0]); },
                              "torch.norm(x)"), Coverage{false, {}});

  // Masks over short rows so that both true and false results occur.
  const std::vector<int64_t> rows = {256, 4};
  const std::vector<c10::ScalarType> any_dtypes = {c10::kBool, c10::kFloat, c10::kLong};
  for (c10::ScalarType t : any_dtypes) {
    Arg x = t == c10::kBool ? Arg::mask("x", rows) : Arg::uniform("x", rows, 0, 2);
    if (t != c10::kBool) x = Arg::integers("x", rows, 0, 2, c10::ScalarType::Undefined);
    const std::vector<Variant> variants = {Variant::contiguous(), Variant::transposed()};
    add_op(catalog, make("any", {x}, [](const Tensors& a) { return a[0].any(-1); }, "x.any(-1)", false), {t},
           variants);
    add_op(catalog, make("all", {x}, [](const Tensors& a) { return a[0].all(-1); }, "x.all(-1)", false), {t},
           variants);
    add_op(catalog, make("count_nonzero", {x}, [](const Tensors& a) { return at::count_nonzero(a[0], c10::optional<int64_t>(-1)); },
                         "torch.count_nonzero(x, -1)", false), {t}, variants);
  }
  add_large(catalog, make("count_nonzero", {Arg::mask("x", {1 << 25})},
                          [](const Tensors& a) { return at::count_nonzero(a[0]); }, "torch.count_nonzero(x)"),
            c10::kBool);
}

MPSCHECK_PLUGIN("ops-reduction", "0.1.0")

// Indexing family: gathers, scatters, masks and embeddings with int64 indices.
//
// Two rules keep every case well defined:
// - Backward of a gather with duplicate indices accumulates rounded gradients in any order, so
//   duplicates are drawn only for float32/integer cases; float16/bfloat16 cases index with a
//   permutation slice (stable sort of an integer key), which has no duplicates.
// - Ops that accumulate in the forward (scatter_add, index_add, index_put accumulate, ...) take
//   integer-valued float inputs: their sums are exact in every float dtype, in any order.
#include <mpscheck/op.hpp>

using namespace mpscheck::op;

namespace {

using A = const Tensors&;

// The huge cases' input: a small seed repeated into 2^16 + 2 rows of 2^15 elements (2^31 + 2^16),
// made on the device that runs the case.
constexpr int64_t kHugeRows = (int64_t{1} << 16) + 2, kHugeCols = int64_t{1} << 15;
constexpr int64_t kHugeRowsBytes = kHugeRows * kHugeCols + 4096;  // int8, and the repeat's tail
at::Tensor huge_rows(const at::Tensor& seed) {
  const int64_t n = kHugeRows * kHugeCols;
  return seed.repeat({n / seed.numel() + 1}).narrow(0, 0, n).view({kHugeRows, kHugeCols});
}
std::string huge_rows_py() {
  const int64_t n = kHugeRows * kHugeCols;
  return "x.repeat(" + std::to_string(n / 251 + 1) + ")[:" + std::to_string(n) + "].view(" + std::to_string(kHugeRows) +
         ", " + std::to_string(kHugeCols) + ")";
}

// A tie-free permutation of 0..n-1 along `dim` from an integer key (stable sort breaks ties).
at::Tensor permutation(const at::Tensor& key, int64_t dim = -1) {
  return std::get<1>(at::sort(key, c10::optional<bool>(true), dim, false));
}

Variant named(std::string name, Layout layout, std::string arg) {
  return Variant::of(std::move(name), layout, std::move(arg));
}

using Index = c10::List<c10::optional<at::Tensor>>;

// Integer values in [-4, 5) in the case dtype, with a gradient: sums of them are exact.
Arg exact(std::string name, std::vector<int64_t> shape) {
  return Arg::exact_integers(std::move(name), std::move(shape), -4, 5);
}

// A gather-like op in two versions: float32/integer with duplicate indices, float16/bfloat16 with
// unique ones. `dup_index` draws the indices; `uniq` builds them from a key inside the op.
struct GatherCase {
  std::string op;
  std::vector<Arg> data;                              // args before the index
  Arg dup_index;                                      // drawn indices, with duplicates
  Arg key;                                            // integer key whose stable argsort gives unique indices
  std::function<at::Tensor(const at::Tensor&)> uniq;  // key -> indices
  std::string uniq_python;                            // the same over `key`
  std::function<Tensors(const Tensors& data, const at::Tensor& index)> fn;
  std::string python;  // over the data arg names and `index`
};

void add_gather(const Family& indexing, const GatherCase& c, const DTypes& dup_dtypes, const Variants& variants,
                const DTypes& reduced = dtypes::reduced) {
  const size_t n = c.data.size();
  std::vector<Arg> args = c.data;
  args.push_back(c.dup_index);
  auto fn = c.fn;
  indexing
      .op(
          c.op, args, [fn, n](A a) { return fn(Tensors(a.begin(), a.begin() + n), a[n]); }, c.python)
      .add(dup_dtypes, variants);
  std::vector<Arg> uargs = c.data;
  uargs.push_back(c.key);
  auto uniq = c.uniq;
  // The Python expression names the index `index`; bind it from the key in a nested lambda.
  std::string names;
  for (const auto& a : c.data) names += a.name + ", ";
  const std::string py = "(lambda " + names + "index: " + c.python + ")(" + names + c.uniq_python + ")";
  // Variants that lay out the index do not apply to the key.
  Variants uvariants;
  for (const auto& v : variants) {
    std::vector<Arg> probe = uargs;
    try {
      v.apply(probe);
      uvariants.push_back(v);
    } catch (const std::logic_error&) {
    }
  }
  indexing
      .op(
          c.op, uargs, [fn, uniq, n](A a) { return fn(Tensors(a.begin(), a.begin() + n), uniq(a[n])); }, py)
      .add(reduced, uvariants);
}

at::Tensor bag_offsets(const at::Tensor& indices, int64_t bag) {
  return at::arange(0, indices.numel(), bag, indices.options());
}

}  // namespace

// clang-format off
MPSCHECK_CATALOG(indexing_cases) {
  const Variant contiguous = Variant::contiguous();
  Family indexing(catalog, "indexing");

  // ----- gathers -----
  {
    GatherCase c{"index_select",
                 {Arg::randn("x", {64, 32})},
                 Arg::integers("index", {40}, 0, 64),
                 Arg::integers("key", {64}, 0, 1000),
                 [](const at::Tensor& k) { return permutation(k).narrow(0, 0, 40); },
                 "torch.sort(key, stable=True).indices[:40]",
                 [](const Tensors& d, const at::Tensor& i) { return Tensors{at::index_select(d[0], 0, i)}; },
                 "torch.index_select(x, 0, index)"};
    add_gather(indexing, c, dtypes::f32_ints,
               {contiguous, Variant::transposed("x"), Variant::sliced("x")});
    // Along the last dim, where the gathered elements are strided.
    c.op = "index_select_dim1";
    c.dup_index = Arg::integers("index", {24}, 0, 32);
    c.key = Arg::integers("key", {32}, 0, 1000);
    c.uniq = [](const at::Tensor& k) { return permutation(k).narrow(0, 0, 24); };
    c.uniq_python = "torch.sort(key, stable=True).indices[:24]";
    c.fn = [](const Tensors& d, const at::Tensor& i) { return Tensors{at::index_select(d[0], 1, i)}; };
    c.python = "torch.index_select(x, 1, index)";
    add_gather(indexing, c, dtypes::f32_ints, {contiguous, Variant::transposed("x")});
  }
  indexing.op("index_select", {Arg::mask("x", {64, 32}), Arg::integers("index", {40}, 0, 64)},
              [](A a) { return at::index_select(a[0], 0, a[1]); },
              "torch.index_select(x, 0, index)")
      .no_grad().add({c10::kBool}, {contiguous, Variant::transposed("x")});
  // Out-of-range indices must raise, as the CPU does; a kernel that zero-fills or reads past the
  // end instead hides the caller's bug. The output is 1 when the op raised, 0 when it returned.
  indexing.op("index_select_out_of_range", {Arg::randn("x", {16, 8}), Arg::integers("index", {6}, 16, 24)},
              [](A a) {
                try {
                  (void)at::index_select(a[0], 0, a[1]).cpu();
                } catch (const c10::Error&) {
                  return Tensors{at::ones({1})};
                }
                return Tensors{at::zeros({1})};
              },
              "(lambda raised: (exec('try:\\n    torch.index_select(x, 0, index).cpu()\\nexcept (IndexError, "
              "RuntimeError):\\n    raised.append(1)', {'torch': torch, 'x': x, 'index': index, 'raised': raised}), "
              "torch.tensor([float(len(raised))]))[1])([])")
      .no_grad().add(dtypes::f32, {contiguous});
  {
    GatherCase c{"gather",
                 {Arg::randn("x", {32, 48})},
                 Arg::integers("index", {32, 20}, 0, 48),
                 Arg::integers("key", {32, 48}, 0, 1000),
                 [](const at::Tensor& k) { return permutation(k, 1).narrow(1, 0, 20); },
                 "torch.sort(key, dim=1, stable=True).indices[:, :20]",
                 [](const Tensors& d, const at::Tensor& i) { return Tensors{at::gather(d[0], 1, i)}; },
                 "torch.gather(x, 1, index)"};
    add_gather(indexing, c, dtypes::f32_ints,
               {contiguous, Variant::transposed("x"), Variant::sliced("x"),
                named("transposed_index", Layout::Transposed, "index")});
    c.op = "take_along_dim";
    c.fn = [](const Tensors& d, const at::Tensor& i) { return Tensors{at::take_along_dim(d[0], i, 1)}; };
    c.python = "torch.take_along_dim(x, index, 1)";
    add_gather(indexing, c, dtypes::f32_ints, {contiguous, Variant::transposed("x")});
    c.op = "take";
    c.dup_index = Arg::integers("index", {300}, 0, 32 * 48);
    c.key = Arg::integers("key", {32 * 48}, 0, 100000);
    c.uniq = [](const at::Tensor& k) { return permutation(k).narrow(0, 0, 300); };
    c.uniq_python = "torch.sort(key, stable=True).indices[:300]";
    c.fn = [](const Tensors& d, const at::Tensor& i) { return Tensors{at::take(d[0], i)}; };
    c.python = "torch.take(x, index)";
    add_gather(indexing, c, dtypes::f32_ints, {contiguous, Variant::transposed("x"), Variant::sliced("x")});
  }
  {
    // Advanced indexing x[rows, cols]: backward is index_put with accumulate.
    GatherCase c{"index_tensor",
                 {Arg::randn("x", {48, 48})},
                 Arg::integers("index", {2, 30}, 0, 48),
                 Arg::integers("key", {48}, 0, 1000),
                 [](const at::Tensor& k) { return at::stack({permutation(k).narrow(0, 0, 30), permutation(k).narrow(0, 10, 30)}); },
                 "torch.stack([torch.sort(key, stable=True).indices[:30], torch.sort(key, stable=True).indices[10:40]])",
                 [](const Tensors& d, const at::Tensor& i) {
                   return Tensors{at::index(d[0], Index({i[0], i[1]}))};
                 },
                 "x[index[0], index[1]]"};
    add_gather(indexing, c, dtypes::f32_ints, {contiguous, Variant::transposed("x")});
  }
  {
    // Embedding rows 0..19 with padding_idx 0: row 0 gets no gradient.
    GatherCase c{"embedding",
                 {Arg::randn("weight", {20, 32})},
                 Arg::integers("index", {6, 10}, 0, 20),
                 Arg::integers("key", {20}, 0, 1000),
                 [](const at::Tensor& k) { return permutation(k).reshape({4, 5}); },
                 "torch.sort(key, stable=True).indices.reshape(4, 5)",
                 [](const Tensors& d, const at::Tensor& i) { return Tensors{at::embedding(d[0], i, 0)}; },
                 "torch.nn.functional.embedding(index, weight, padding_idx=0)"};
    add_gather(indexing, c, {c10::kFloat}, {contiguous, Variant::transposed("weight")});
    const char* modes[] = {"sum", "mean", "max"};
    for (int64_t mode = 0; mode < 3; ++mode) {
      const std::string m = modes[mode];
      GatherCase b{"embedding_bag_" + m,
                   {Arg::randn("weight", {50, 16})},
                   Arg::integers("index", {40}, 0, 50),
                   Arg::integers("key", {50}, 0, 1000),
                   [](const at::Tensor& k) { return permutation(k).narrow(0, 0, 40); },
                   "torch.sort(key, stable=True).indices[:40]",
                   [mode](const Tensors& d, const at::Tensor& i) {
                     return Tensors{std::get<0>(at::embedding_bag(d[0], i, bag_offsets(i, 5), false, mode))};
                   },
                   "torch.nn.functional.embedding_bag(index, weight, torch.arange(0, index.numel(), 5, "
                   "device=index.device), mode='" + m + "')"};
      add_gather(indexing, b, {c10::kFloat}, {contiguous, Variant::transposed("weight")});
    }
  }

  // ----- scatters without accumulation: unique indices, every result well defined -----
  indexing.op("scatter",
              {Arg::randn("x", {32, 48}), Arg::randn("src", {32, 20}), Arg::integers("key", {32, 48}, 0, 1000)},
              [](A a) { return at::scatter(a[0], 1, permutation(a[2], 1).narrow(1, 0, 20), a[1]); },
              "torch.scatter(x, 1, torch.sort(key, dim=1, stable=True).indices[:, :20], src)")
      .add(dtypes::all, {contiguous, Variant::transposed("x"), named("transposed_src", Layout::Transposed, "src")});
  indexing.op("scatter_value", {Arg::randn("x", {32, 48}), Arg::integers("index", {32, 20}, 0, 48)},
              [](A a) { return at::scatter(a[0], 1, a[1], 1.5); },
              "torch.scatter(x, 1, index, 1.5)")
      .add(dtypes::all, {contiguous, Variant::transposed("x")});
  indexing.op("index_copy",
              {Arg::randn("x", {64, 32}), Arg::randn("src", {40, 32}), Arg::integers("key", {64}, 0, 1000)},
              [](A a) { return at::index_copy(a[0], 0, permutation(a[2]).narrow(0, 0, 40), a[1]); },
              "torch.index_copy(x, 0, torch.sort(key, stable=True).indices[:40], src)")
      .add(dtypes::all, {contiguous, Variant::transposed("x"), Variant::sliced("src")});
  indexing.op("index_put",
              {Arg::randn("x", {64, 32}), Arg::randn("values", {40, 32}), Arg::integers("key", {64}, 0, 1000)},
              [](A a) {
                return Tensors{at::index_put(a[0], Index({permutation(a[2]).narrow(0, 0, 40)}),
                                             a[1], false)};
              },
              "x.index_put((torch.sort(key, stable=True).indices[:40],), values, False)")
      .add(dtypes::all,
           {contiguous, Variant::transposed("x"), named("transposed_values", Layout::Transposed, "values")});
  indexing.op("index_fill", {Arg::randn("x", {32, 48}), Arg::integers("index", {10}, 0, 48)},
              [](A a) { return at::index_fill(a[0], 1, a[1], -2.5); },
              "torch.index_fill(x, 1, index, -2.5)")
      .add(dtypes::all, {contiguous, Variant::transposed("x"), Variant::sliced("x")});

  // ----- scatters with accumulation: integer-valued inputs, duplicate indices -----
  indexing.op("scatter_add", {exact("x", {32, 48}), exact("src", {32, 64}), Arg::integers("index", {32, 64}, 0, 48)},
              [](A a) { return at::scatter_add(a[0], 1, a[2], a[1]); },
              "torch.scatter_add(x, 1, index, src)")
      .add(dtypes::all, {contiguous, Variant::transposed("x"), named("transposed_src", Layout::Transposed, "src"),
                         named("transposed_index", Layout::Transposed, "index")});
  for (const char* reduce : {"sum", "prod", "amax", "amin", "mean"}) {
    const std::string r = reduce;
    // prod draws from {1, 2} so products stay exact; amax/amin ties are exact too, so the
    // gradient is split among the same elements in every dtype.
    const bool prod = r == "prod";
    Arg x = prod ? Arg::exact_integers("x", {32, 48}, 1, 3) : exact("x", {32, 48});
    Arg src = prod ? Arg::exact_integers("src", {32, 64}, 1, 3) : exact("src", {32, 64});
    indexing.op("scatter_reduce_" + r, {x, src, Arg::integers("index", {32, 64}, 0, 48)},
                [r](A a) { return at::scatter_reduce(a[0], 1, a[2], a[1], r, true); },
                "torch.scatter_reduce(x, 1, index, src, '" + r + "', include_self=True)")
        .add(dtypes::all, {contiguous, Variant::transposed("x"), named("transposed_src", Layout::Transposed, "src")});
  }
  indexing.op("index_put_accumulate",
              {exact("x", {64, 32}), exact("values", {100, 32}), Arg::integers("index", {100}, 0, 64)},
              [](A a) {
                return Tensors{at::index_put(a[0], Index({a[2]}), a[1], true)};
              },
              "x.index_put((index,), values, True)")
      .add(dtypes::all,
           {contiguous, Variant::transposed("x"), named("transposed_values", Layout::Transposed, "values")});
  indexing.op("index_add", {exact("x", {64, 32}), exact("src", {100, 32}), Arg::integers("index", {100}, 0, 64)},
              [](A a) { return at::index_add(a[0], 0, a[2], a[1]); },
              "torch.index_add(x, 0, index, src)")
      .add(dtypes::all, {contiguous, Variant::transposed("x"), Variant::sliced("src")});
  indexing.op("index_add_alpha", {exact("x", {32, 64}), exact("src", {32, 100}), Arg::integers("index", {100}, 0, 64)},
              [](A a) { return at::index_add(a[0], 1, a[2], a[1], 2); },
              "torch.index_add(x, 1, index, src, alpha=2)")
      .add(dtypes::all, {contiguous, Variant::transposed("x")});

  // ----- masks -----
  indexing.op("masked_fill", {Arg::randn("x", {32, 48}), Arg::mask("mask", {32, 48})},
              [](A a) { return at::masked_fill(a[0], a[1], 0.5); },
              "torch.masked_fill(x, mask, 0.5)")
      .add(dtypes::all, {contiguous, Variant::transposed("x"), Variant::expanded("mask"), Variant::sliced("mask")});
  indexing.op("masked_select", {Arg::randn("x", {32, 48}), Arg::mask("mask", {32, 48})},
              [](A a) { return at::masked_select(a[0], a[1]); },
              "torch.masked_select(x, mask)")
      .add(dtypes::all, {contiguous, Variant::transposed("x"), Variant::expanded("mask")});
  indexing.op("masked_scatter", {Arg::randn("x", {32, 48}), Arg::mask("mask", {32, 48}), Arg::randn("src", {32, 48})},
              [](A a) { return at::masked_scatter(a[0], a[1], a[2]); },
              "torch.masked_scatter(x, mask, src)")
      .add(dtypes::all, {contiguous, Variant::transposed("x"), Variant::expanded("mask")});
  indexing.op("bool_mask_index", {Arg::randn("x", {32, 48}), Arg::mask("mask", {32, 48})},
              [](A a) { return at::index(a[0], Index({a[1]})); },
              "x[mask]")
      .add(dtypes::all, {contiguous, Variant::transposed("x"), named("transposed_mask", Layout::Transposed, "mask")});
  indexing.op("bool_mask_rows", {Arg::randn("x", {64, 24}), Arg::mask("mask", {64})},
              [](A a) { return at::index(a[0], Index({a[1]})); },
              "x[mask]")
      .add(dtypes::all, {contiguous, Variant::transposed("x"), Variant::sliced("mask")});
  indexing.op("bool_mask_assign", {Arg::randn("x", {32, 48}), Arg::mask("mask", {32, 48})},
              [](A a) {
                return Tensors{at::index_put(a[0], Index({a[1]}),
                                             at::scalar_tensor(-3, a[0].options().requires_grad(false)), false)};
              },
              "x.index_put((mask,), torch.tensor(-3, dtype=x.dtype, device=x.device))")
      .add(dtypes::all, {contiguous, Variant::transposed("x"), named("transposed_mask", Layout::Transposed, "mask")});

  // ----- index-producing ops (no gradient) -----
  indexing.op("nonzero", {Arg::randn("x", {32, 48})},
              [](A a) { return at::nonzero(at::relu(a[0])); },
              "torch.nonzero(torch.relu(x))")
      .no_grad().add(dtypes::all, {contiguous, Variant::transposed("x"), Variant::sliced("x")});
  indexing.op("nonzero", {Arg::mask("x", {32, 48})},
              [](A a) { return at::nonzero(a[0]); },
              "torch.nonzero(x)")
      .no_grad().add({c10::kBool}, {contiguous, Variant::transposed("x")});
  indexing.op("one_hot", {Arg::integers("index", {64}, 0, 10)},
              [](A a) { return at::one_hot(a[0], 10); },
              "torch.nn.functional.one_hot(index, 10)")
      .no_grad().add({c10::kLong}, {contiguous, Variant::sliced("index")});
  indexing.op("one_hot_2d", {Arg::integers("index", {8, 16}, 0, 7)},
              [](A a) { return at::one_hot(a[0], 7); },
              "torch.nn.functional.one_hot(index, 7)")
      .no_grad().add({c10::kLong}, {contiguous, Variant::transposed("index")});

  // ----- large: flat indices past 2^24, where float-typed index math loses exactness -----
  constexpr int64_t kLarge = (int64_t{1} << 24) + 4096;
  indexing.op("index_select_large", {Arg::randn("x", {kLarge}), Arg::integers("index", {1 << 16}, 1 << 23, kLarge)},
              [](A a) { return at::index_select(a[0], 0, a[1]); },
              "torch.index_select(x, 0, index)")
      .no_grad().large().add(dtypes::f32);
  indexing.op("take_large", {Arg::randn("x", {4097, 4096}), Arg::integers("index", {1 << 16}, 1 << 23, 4097 * 4096)},
              [](A a) { return at::take(a[0], a[1]); },
              "torch.take(x, index)")
      .no_grad().large().add(dtypes::f32);
  indexing.op("scatter_add_large",
              {exact("x", {kLarge}), exact("src", {1 << 16}), Arg::integers("index", {1 << 16}, 1 << 23, kLarge)},
              [](A a) { return at::scatter_add(a[0], 0, a[2], a[1]); },
              "torch.scatter_add(x, 0, index, src)")
      .no_grad().large().add(dtypes::f32);

  // ----- huge: past 2^31 elements, where 32-bit offset math wraps (only --huge selects them) -----
  // x is a 251-element seed (a prime: no row repeats another), repeated on the device into
  // 2^16 + 2 rows of 2^15 int8 values, 2 GiB; the rows selected lie on both sides of element 2^31
  // (row 2^16 starts there), where a kernel with 32-bit offsets reads rows from the start again.
  indexing.op("index_select_huge", {Arg::randn("x", {251})},
              [](A a) {
                const at::Tensor rows = at::tensor(std::vector<int64_t>{0, 1, 12345, 65535, 65536, 65537}, at::kLong);
                return at::index_select(huge_rows(a[0]), 0, rows.to(a[0].device()));
              },
              "torch.index_select(" + huge_rows_py() + ", 0, torch.tensor([0, 1, 12345, 65535, 65536, 65537], "
              "device=x.device))")
      .no_grad().huge(kHugeRowsBytes).add({c10::kChar});
}
// clang-format on

MPSCHECK_PLUGIN("ops-indexing", "0.1.0")

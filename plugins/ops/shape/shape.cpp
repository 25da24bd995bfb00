// Shape and memory family: pure data movement must be exact.
//
// Ops whose backward sums several gradients into one element (repeat, tile, expand, pads that
// reuse edge elements, overlapping unfold) compare under the "indexing" tolerance, since the sum
// order is the backend's choice; in float16/bfloat16 such sums of rounded random gradients can
// cancel, so those dtypes get forward cases only. Every op also runs on int64/int32 and bool.
#include <mpscheck/op.hpp>

using namespace mpscheck::op;

namespace {

const std::vector<c10::ScalarType> kFloats = {c10::kFloat, c10::kHalf, c10::kBFloat16};
const std::vector<c10::ScalarType> kInts = {c10::kLong, c10::kInt};

OpDef def(std::string op, std::vector<Arg> args, OpFn fn, std::string python) {
  OpDef d;
  d.family = "shape";
  d.op = std::move(op);
  d.args = std::move(args);
  d.fn = std::move(fn);
  d.python = std::move(python);
  return d;
}

// Float cases (forward and backward), integer and bool cases (forward) of one op. `bool_ok`:
// the op accepts bool tensors. `accumulating`: its backward sums gradients (see above).
void add_move(mpscheck::Catalog& catalog, OpDef d, const std::vector<Variant>& variants,
              bool accumulating = false, bool bool_ok = true,
              const std::vector<c10::ScalarType>& floats = kFloats) {
  if (accumulating) {
    d.tolerance = "indexing";
    add_op(catalog, d, {c10::kFloat}, variants);
    OpDef fwd = d;
    fwd.differentiable = false;
    add_op(catalog, fwd, {c10::kHalf, c10::kBFloat16}, variants);
  } else {
    add_op(catalog, d, floats, variants);
  }
  add_op(catalog, d, kInts, variants);
  if (!bool_ok) return;
  // Bool data: every randn arg becomes a random 0/1 mask.
  for (auto& a : d.args)
    if (a.fill == Fill::Normal && a.dtype == c10::ScalarType::Undefined) a = Arg::mask(a.name, a.shape);
  add_op(catalog, d, {c10::kBool}, variants);
}

Variant named(std::string name, Layout layout, std::string arg) {
  return Variant::of(std::move(name), layout, std::move(arg));
}

}  // namespace

MPSCHECK_CATALOG(shape_cases) {
  const Variant contiguous = Variant::contiguous();
  const Variant transposed = Variant::transposed(), sliced = Variant::sliced();

  // ----- joining and splitting -----
  add_move(catalog,
           def("cat", {Arg::randn("a", {16, 24}), Arg::randn("b", {16, 24})},
               [](const Tensors& a) { return Tensors{at::cat({a[0], a[1]}, 0)}; }, "torch.cat([a, b], 0)"),
           {contiguous, Variant::transposed("b"), named("sliced_a", Layout::Sliced, "a")});
  add_move(catalog,
           def("cat_dim1", {Arg::randn("a", {16, 24}), Arg::randn("b", {16, 8}), Arg::randn("c", {16, 1})},
               [](const Tensors& a) { return Tensors{at::cat({a[0], a[1], a[2]}, 1)}; },
               "torch.cat([a, b, c], 1)"),
           {contiguous, Variant::transposed("a"), named("sliced_b", Layout::Sliced, "b")});
  add_move(catalog,
           def("cat_4d", {Arg::randn("a", {2, 8, 6, 6}), Arg::randn("b", {2, 4, 6, 6})},
               [](const Tensors& a) { return Tensors{at::cat({a[0], a[1]}, 1)}; }, "torch.cat([a, b], 1)"),
           {contiguous, Variant::channels_last("a"), named("channels_last_b", Layout::ChannelsLast, "b")});
  add_move(catalog,
           def("stack", {Arg::randn("a", {16, 24}), Arg::randn("b", {16, 24})},
               [](const Tensors& a) { return Tensors{at::stack({a[0], a[1]}, 0)}; }, "torch.stack([a, b], 0)"),
           {contiguous, Variant::transposed("a"), named("sliced_b", Layout::Sliced, "b")});
  add_move(catalog,
           def("stack_last", {Arg::randn("a", {16, 24}), Arg::randn("b", {16, 24})},
               [](const Tensors& a) { return Tensors{at::stack({a[0], a[1]}, -1)}; }, "torch.stack([a, b], -1)"),
           {contiguous, Variant::transposed("a")});
  add_move(catalog,
           def("split", {Arg::randn("x", {16, 23})},
               [](const Tensors& a) {
                 auto parts = at::split(a[0], 5, 1);
                 return Tensors(parts.begin(), parts.end());
               },
               "torch.split(x, 5, 1)"),
           {contiguous, transposed, sliced});
  add_move(catalog,
           def("split_with_sizes", {Arg::randn("x", {20, 16})},
               [](const Tensors& a) {
                 auto parts = at::split_with_sizes(a[0], {3, 9, 8}, 0);
                 return Tensors(parts.begin(), parts.end());
               },
               "torch.split(x, [3, 9, 8], 0)"),
           {contiguous, transposed, sliced});
  add_move(catalog,
           def("chunk", {Arg::randn("x", {16, 25})},
               [](const Tensors& a) {
                 auto parts = at::chunk(a[0], 3, -1);
                 return Tensors(parts.begin(), parts.end());
               },
               "torch.chunk(x, 3, -1)"),
           {contiguous, transposed, sliced});
  add_move(catalog,
           def("unbind", {Arg::randn("x", {4, 12, 10})},
               [](const Tensors& a) {
                 auto parts = at::unbind(a[0], 1);
                 return Tensors(parts.begin(), parts.end());
               },
               "torch.unbind(x, 1)"),
           {contiguous, transposed, sliced});

  // ----- layout changes made real by contiguous() -----
  add_move(catalog,
           def("transpose_contiguous", {Arg::randn("x", {24, 40})},
               [](const Tensors& a) { return Tensors{a[0].transpose(0, 1).contiguous()}; },
               "x.transpose(0, 1).contiguous()"),
           {contiguous, transposed, sliced});
  add_move(catalog,
           def("permute_contiguous", {Arg::randn("x", {2, 6, 8, 10})},
               [](const Tensors& a) { return Tensors{a[0].permute({0, 2, 3, 1}).contiguous()}; },
               "x.permute(0, 2, 3, 1).contiguous()"),
           {contiguous, transposed, Variant::channels_last()});
  add_move(catalog,
           def("movedim", {Arg::randn("x", {4, 6, 8})},
               [](const Tensors& a) { return Tensors{at::movedim(a[0], 0, -1).contiguous()}; },
               "torch.movedim(x, 0, -1).contiguous()"),
           {contiguous, transposed, sliced});
  add_move(catalog,
           def("reshape", {Arg::randn("x", {12, 20})},
               [](const Tensors& a) { return Tensors{a[0].reshape({4, 3, 5, 4})}; }, "x.reshape(4, 3, 5, 4)"),
           {contiguous, transposed, sliced});
  add_move(catalog,
           def("flatten", {Arg::randn("x", {2, 6, 5, 4})},
               [](const Tensors& a) { return Tensors{at::flatten(a[0], 1)}; }, "torch.flatten(x, 1)"),
           {contiguous, transposed, Variant::channels_last()});
  add_move(catalog,
           def("clone_channels_last", {Arg::randn("x", {2, 6, 8, 10})},
               [](const Tensors& a) { return Tensors{at::clone(a[0], at::MemoryFormat::ChannelsLast)}; },
               "x.clone(memory_format=torch.channels_last)"),
           {contiguous, transposed, Variant::channels_last()});
  add_move(catalog,
           def("channels_last_to_contiguous", {Arg::randn("x", {2, 6, 8, 10})},
               [](const Tensors& a) {
                 return Tensors{a[0].contiguous(at::MemoryFormat::ChannelsLast).contiguous().view({2, -1})};
               },
               "x.contiguous(memory_format=torch.channels_last).contiguous().view(2, -1)"),
           {contiguous, Variant::channels_last()});
  add_move(catalog,
           def("slice_step", {Arg::randn("x", {24, 40})},
               [](const Tensors& a) { return Tensors{a[0].slice(1, 1, 37, 3).contiguous()}; },
               "x[:, 1:37:3].contiguous()"),
           {contiguous, transposed});
  add_move(catalog,
           def("narrow", {Arg::randn("x", {24, 40})},
               [](const Tensors& a) { return Tensors{at::narrow(a[0], 1, 5, 20).contiguous()}; },
               "torch.narrow(x, 1, 5, 20).contiguous()"),
           {contiguous, transposed, sliced});
  add_move(catalog,
           def("flip", {Arg::randn("x", {16, 24})},
               [](const Tensors& a) { return Tensors{at::flip(a[0], {0, 1})}; }, "torch.flip(x, [0, 1])"),
           {contiguous, transposed, sliced});
  add_move(catalog,
           def("flip_last", {Arg::randn("x", {4, 6, 30})},
               [](const Tensors& a) { return Tensors{at::flip(a[0], {-1})}; }, "torch.flip(x, [-1])"),
           {contiguous, transposed, sliced});
  add_move(catalog,
           def("roll", {Arg::randn("x", {16, 24})},
               [](const Tensors& a) { return Tensors{at::roll(a[0], {3, -5}, {0, 1})}; },
               "torch.roll(x, [3, -5], [0, 1])"),
           {contiguous, transposed, sliced});
  add_move(catalog,
           def("roll_flat", {Arg::randn("x", {16, 24})},
               [](const Tensors& a) { return Tensors{at::roll(a[0], {7})}; }, "torch.roll(x, 7)"),
           {contiguous, transposed, sliced});

  // ----- triangles and diagonals -----
  add_move(catalog,
           def("tril", {Arg::randn("x", {3, 20, 24})},
               [](const Tensors& a) { return Tensors{at::tril(a[0], -1)}; }, "torch.tril(x, -1)"),
           {contiguous, transposed, sliced});
  add_move(catalog,
           def("triu", {Arg::randn("x", {3, 20, 24})},
               [](const Tensors& a) { return Tensors{at::triu(a[0], 2)}; }, "torch.triu(x, 2)"),
           {contiguous, transposed, sliced});
  add_move(catalog,
           def("diag", {Arg::randn("x", {20, 24})},
               [](const Tensors& a) { return Tensors{at::diag(a[0], 1)}; }, "torch.diag(x, 1)"),
           {contiguous, transposed, sliced}, false, true,
           {c10::kFloat, c10::kHalf, c10::kBFloat16});
  add_move(catalog,
           def("diag_1d", {Arg::randn("x", {17})},
               [](const Tensors& a) { return Tensors{at::diag(a[0], -2)}; }, "torch.diag(x, -2)"),
           {contiguous, sliced}, false, true,
           {c10::kFloat, c10::kHalf, c10::kBFloat16});
  add_move(catalog,
           def("diagonal", {Arg::randn("x", {6, 10, 12})},
               [](const Tensors& a) { return Tensors{at::diagonal(a[0], 1, 0, 2).contiguous()}; },
               "torch.diagonal(x, 1, 0, 2).contiguous()"),
           {contiguous, transposed, sliced});
  add_move(catalog,
           def("diag_embed", {Arg::randn("x", {4, 12})},
               [](const Tensors& a) { return Tensors{at::diag_embed(a[0], -1)}; }, "torch.diag_embed(x, -1)"),
           {contiguous, transposed, sliced});

  // ----- ops whose backward accumulates -----
  add_move(catalog,
           def("expand_contiguous", {Arg::randn("x", {1, 24})},
               [](const Tensors& a) { return Tensors{a[0].expand({16, 24}).contiguous()}; },
               "x.expand(16, 24).contiguous()"),
           {contiguous, sliced}, true);
  add_move(catalog,
           def("expand_4d", {Arg::randn("x", {2, 1, 8, 1})},
               [](const Tensors& a) { return Tensors{a[0].expand({2, 6, 8, 5}).contiguous()}; },
               "x.expand(2, 6, 8, 5).contiguous()"),
           {contiguous, transposed}, true);
  add_move(catalog,
           def("repeat", {Arg::randn("x", {8, 12})},
               [](const Tensors& a) { return Tensors{a[0].repeat({2, 3, 1})}; }, "x.repeat(2, 3, 1)"),
           {contiguous, transposed, sliced}, true);
  add_move(catalog,
           def("tile", {Arg::randn("x", {8, 12})},
               [](const Tensors& a) { return Tensors{at::tile(a[0], {3, 2})}; }, "torch.tile(x, (3, 2))"),
           {contiguous, transposed, sliced}, true);
  add_move(catalog,
           def("repeat_interleave", {Arg::randn("x", {8, 12})},
               [](const Tensors& a) { return Tensors{at::repeat_interleave(a[0], 3, 1)}; },
               "torch.repeat_interleave(x, 3, 1)"),
           {contiguous, transposed, sliced}, true);
  add_move(catalog,
           def("repeat_interleave_tensor", {Arg::randn("x", {8, 12}), Arg::integers("repeats", {8}, 0, 4)},
               [](const Tensors& a) { return Tensors{at::repeat_interleave(a[0], a[1], 0)}; },
               "torch.repeat_interleave(x, repeats, 0)"),
           {contiguous, transposed, Variant::sliced("repeats")}, true);
  add_move(catalog,
           def("unfold", {Arg::randn("x", {6, 40})},
               [](const Tensors& a) { return Tensors{a[0].unfold(1, 8, 3).contiguous()}; },
               "x.unfold(1, 8, 3).contiguous()"),
           {contiguous, transposed, sliced}, true);

  // ----- padding: constant moves data; reflect/replicate/circular reuse edges -----
  add_move(catalog,
           def("pad_constant", {Arg::randn("x", {2, 4, 10, 12})},
               [](const Tensors& a) { return Tensors{at::pad(a[0], {1, 2, 3, 0}, "constant", 0.5)}; },
               "torch.nn.functional.pad(x, [1, 2, 3, 0], 'constant', 0.5)"),
           {contiguous, transposed, Variant::channels_last()}, false, false);
  add_move(catalog,
           def("pad_constant_negative", {Arg::randn("x", {4, 10, 12})},
               [](const Tensors& a) { return Tensors{at::pad(a[0], {-2, 3}, "constant", 0)}; },
               "torch.nn.functional.pad(x, [-2, 3], 'constant', 0.0)"),
           {contiguous, transposed, sliced}, false, false);
  for (const char* mode : {"reflect", "replicate", "circular"}) {
    const std::string m = mode;
    OpDef d = def("pad_" + m, {Arg::randn("x", {2, 4, 10, 12})},
                  [m](const Tensors& a) { return Tensors{at::pad(a[0], {2, 3, 1, 2}, m, c10::nullopt)}; },
                  "torch.nn.functional.pad(x, [2, 3, 1, 2], '" + m + "')");
    d.tolerance = "indexing";
    add_op(catalog, d, {c10::kFloat}, {contiguous, transposed, Variant::channels_last()});
    add_op(catalog, d, {c10::kHalf, c10::kBFloat16}, {contiguous, transposed, Variant::channels_last()});
    OpDef d1 = def("pad_" + m + "_1d", {Arg::randn("x", {2, 4, 16})},
                   [m](const Tensors& a) { return Tensors{at::pad(a[0], {3, 4}, m, c10::nullopt)}; },
                   "torch.nn.functional.pad(x, [3, 4], '" + m + "')");
    d1.tolerance = "indexing";
    add_op(catalog, d1, {c10::kFloat}, {contiguous, transposed, sliced});
  }

  // ----- large: more than 2^24 elements moved through a strided copy -----
  OpDef large = def("transpose_contiguous_large", {Arg::randn("x", {4100, 4100})},
                    [](const Tensors& a) { return Tensors{a[0].transpose(0, 1).contiguous()}; },
                    "x.transpose(0, 1).contiguous()");
  large.differentiable = false;
  large.tags = {"large"};
  add_op(catalog, large, {c10::kFloat}, {Variant{"large", [](std::vector<Arg>&) {}}});
  OpDef large_cat = def("cat_large", {Arg::randn("a", {1 << 12, 1 << 12}), Arg::randn("b", {64, 1 << 12})},
                        [](const Tensors& a) { return Tensors{at::cat({a[0], a[1]}, 0)}; }, "torch.cat([a, b], 0)");
  large_cat.differentiable = false;
  large_cat.tags = {"large"};
  add_op(catalog, large_cat, {c10::kFloat}, {Variant{"large", [](std::vector<Arg>&) {}}});
}

MPSCHECK_PLUGIN("ops-shape", "0.1.0")

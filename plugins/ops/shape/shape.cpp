// Shape and memory family: pure data movement must be exact.
//
// Ops whose backward sums several gradients into one element (repeat, tile, expand, pads that
// reuse edge elements, overlapping unfold) compare under the "indexing" tolerance, since the sum
// order is the backend's choice; in float16/bfloat16 such sums of rounded random gradients can
// cancel, so those dtypes get forward cases only. Every op also runs on int64/int32 and bool.
#include <mpscheck/op.hpp>

using namespace mpscheck::op;

namespace {

using A = const Tensors&;

// Float cases (forward and backward), integer and bool cases (forward) of one op. `bool_ok`:
// the op accepts bool tensors. `accumulating`: its backward sums gradients (see above).
void add_move(Case c, bool accumulating = false, bool bool_ok = true) {
  if (accumulating) {
    c = c.tolerance("indexing");
    c.add(dtypes::f32);
    c.no_grad().add(dtypes::reduced);
  } else {
    c.add(dtypes::floats);
  }
  c.add(dtypes::ints);
  if (!bool_ok) return;
  // Bool data: every randn arg becomes a random 0/1 mask.
  std::vector<Arg> masks = c.def().args;
  for (auto& a : masks)
    if (a.fill == Fill::Normal && a.dtype == c10::ScalarType::Undefined) a = Arg::mask(a.name, a.shape);
  c.args(masks).add({c10::kBool});
}

Variant named(std::string name, Layout layout, std::string arg) {
  return Variant::of(std::move(name), layout, std::move(arg));
}

}  // namespace

// clang-format off
MPSCHECK_CATALOG(shape_cases) {
  const Variant contiguous = Variant::contiguous();
  const Variant transposed = Variant::transposed(), sliced = Variant::sliced();
  Family shape(catalog, "shape");

  // ----- joining and splitting -----
  add_move(shape.op("cat", {Arg::randn("a", {16, 24}), Arg::randn("b", {16, 24})},
                    [](A a) { return at::cat({a[0], a[1]}, 0); },
                    "torch.cat([a, b], 0)")
               .variants({contiguous, Variant::transposed("b"), named("sliced_a", Layout::Sliced, "a")}));
  add_move(shape.op("cat_dim1", {Arg::randn("a", {16, 24}), Arg::randn("b", {16, 8}), Arg::randn("c", {16, 1})},
                    [](A a) { return at::cat({a[0], a[1], a[2]}, 1); },
                    "torch.cat([a, b, c], 1)")
               .variants({contiguous, Variant::transposed("a"), named("sliced_b", Layout::Sliced, "b")}));
  add_move(shape.op("cat_4d", {Arg::randn("a", {2, 8, 6, 6}), Arg::randn("b", {2, 4, 6, 6})},
                    [](A a) { return at::cat({a[0], a[1]}, 1); },
                    "torch.cat([a, b], 1)")
               .variants({contiguous, Variant::channels_last("a"), named("channels_last_b", Layout::ChannelsLast, "b")}));
  add_move(shape.op("stack", {Arg::randn("a", {16, 24}), Arg::randn("b", {16, 24})},
                    [](A a) { return at::stack({a[0], a[1]}, 0); },
                    "torch.stack([a, b], 0)")
               .variants({contiguous, Variant::transposed("a"), named("sliced_b", Layout::Sliced, "b")}));
  add_move(shape.op("stack_last", {Arg::randn("a", {16, 24}), Arg::randn("b", {16, 24})},
                    [](A a) { return at::stack({a[0], a[1]}, -1); },
                    "torch.stack([a, b], -1)")
               .variants({contiguous, Variant::transposed("a")}));
  add_move(shape.op("split", {Arg::randn("x", {16, 23})},
                    [](A a) {
                      auto parts = at::split(a[0], 5, 1);
                      return Tensors(parts.begin(), parts.end());
                    },
                    "torch.split(x, 5, 1)")
               .variants({contiguous, transposed, sliced}));
  add_move(shape.op("split_with_sizes", {Arg::randn("x", {20, 16})},
                    [](A a) {
                      auto parts = at::split_with_sizes(a[0], {3, 9, 8}, 0);
                      return Tensors(parts.begin(), parts.end());
                    },
                    "torch.split(x, [3, 9, 8], 0)")
               .variants({contiguous, transposed, sliced}));
  add_move(shape.op("chunk", {Arg::randn("x", {16, 25})},
                    [](A a) {
                      auto parts = at::chunk(a[0], 3, -1);
                      return Tensors(parts.begin(), parts.end());
                    },
                    "torch.chunk(x, 3, -1)")
               .variants({contiguous, transposed, sliced}));
  add_move(shape.op("unbind", {Arg::randn("x", {4, 12, 10})},
                    [](A a) {
                      auto parts = at::unbind(a[0], 1);
                      return Tensors(parts.begin(), parts.end());
                    },
                    "torch.unbind(x, 1)")
               .variants({contiguous, transposed, sliced}));

  // ----- layout changes made real by contiguous() -----
  add_move(shape.op("transpose_contiguous", {Arg::randn("x", {24, 40})},
                    [](A a) { return a[0].transpose(0, 1).contiguous(); },
                    "x.transpose(0, 1).contiguous()")
               .variants({contiguous, transposed, sliced}));
  add_move(shape.op("permute_contiguous", {Arg::randn("x", {2, 6, 8, 10})},
                    [](A a) { return a[0].permute({0, 2, 3, 1}).contiguous(); },
                    "x.permute(0, 2, 3, 1).contiguous()")
               .variants({contiguous, transposed, Variant::channels_last()}));
  add_move(shape.op("movedim", {Arg::randn("x", {4, 6, 8})},
                    [](A a) { return at::movedim(a[0], 0, -1).contiguous(); },
                    "torch.movedim(x, 0, -1).contiguous()")
               .variants({contiguous, transposed, sliced}));
  add_move(shape.op("reshape", {Arg::randn("x", {12, 20})},
                    [](A a) { return a[0].reshape({4, 3, 5, 4}); },
                    "x.reshape(4, 3, 5, 4)")
               .variants({contiguous, transposed, sliced}));
  add_move(shape.op("flatten", {Arg::randn("x", {2, 6, 5, 4})},
                    [](A a) { return at::flatten(a[0], 1); },
                    "torch.flatten(x, 1)")
               .variants({contiguous, transposed, Variant::channels_last()}));
  add_move(shape.op("clone_channels_last", {Arg::randn("x", {2, 6, 8, 10})},
                    [](A a) { return at::clone(a[0], at::MemoryFormat::ChannelsLast); },
                    "x.clone(memory_format=torch.channels_last)")
               .variants({contiguous, transposed, Variant::channels_last()}));
  add_move(shape.op("channels_last_to_contiguous", {Arg::randn("x", {2, 6, 8, 10})},
                    [](A a) {
                      return Tensors{a[0].contiguous(at::MemoryFormat::ChannelsLast).contiguous().view({2, -1})};
                    },
                    "x.contiguous(memory_format=torch.channels_last).contiguous().view(2, -1)")
               .variants({contiguous, Variant::channels_last()}));
  add_move(shape.op("slice_step", {Arg::randn("x", {24, 40})},
                    [](A a) { return a[0].slice(1, 1, 37, 3).contiguous(); },
                    "x[:, 1:37:3].contiguous()")
               .variants({contiguous, transposed}));
  add_move(shape.op("narrow", {Arg::randn("x", {24, 40})},
                    [](A a) { return at::narrow(a[0], 1, 5, 20).contiguous(); },
                    "torch.narrow(x, 1, 5, 20).contiguous()")
               .variants({contiguous, transposed, sliced}));
  add_move(shape.op("flip", {Arg::randn("x", {16, 24})},
                    [](A a) { return at::flip(a[0], {0, 1}); },
                    "torch.flip(x, [0, 1])")
               .variants({contiguous, transposed, sliced}));
  add_move(shape.op("flip_last", {Arg::randn("x", {4, 6, 30})},
                    [](A a) { return at::flip(a[0], {-1}); },
                    "torch.flip(x, [-1])")
               .variants({contiguous, transposed, sliced}));
  add_move(shape.op("roll", {Arg::randn("x", {16, 24})},
                    [](A a) { return at::roll(a[0], {3, -5}, {0, 1}); },
                    "torch.roll(x, [3, -5], [0, 1])")
               .variants({contiguous, transposed, sliced}));
  add_move(shape.op("roll_flat", {Arg::randn("x", {16, 24})},
                    [](A a) { return at::roll(a[0], {7}); },
                    "torch.roll(x, 7)")
               .variants({contiguous, transposed, sliced}));

  // ----- triangles and diagonals -----
  add_move(shape.op("tril", {Arg::randn("x", {3, 20, 24})},
                    [](A a) { return at::tril(a[0], -1); },
                    "torch.tril(x, -1)")
               .variants({contiguous, transposed, sliced}));
  add_move(shape.op("triu", {Arg::randn("x", {3, 20, 24})},
                    [](A a) { return at::triu(a[0], 2); },
                    "torch.triu(x, 2)")
               .variants({contiguous, transposed, sliced}));
  add_move(shape.op("diag", {Arg::randn("x", {20, 24})},
                    [](A a) { return at::diag(a[0], 1); },
                    "torch.diag(x, 1)")
               .variants({contiguous, transposed, sliced}), false, true);
  add_move(shape.op("diag_1d", {Arg::randn("x", {17})},
                    [](A a) { return at::diag(a[0], -2); },
                    "torch.diag(x, -2)")
               .variants({contiguous, sliced}), false, true);
  add_move(shape.op("diagonal", {Arg::randn("x", {6, 10, 12})},
                    [](A a) { return at::diagonal(a[0], 1, 0, 2).contiguous(); },
                    "torch.diagonal(x, 1, 0, 2).contiguous()")
               .variants({contiguous, transposed, sliced}));
  add_move(shape.op("diag_embed", {Arg::randn("x", {4, 12})},
                    [](A a) { return at::diag_embed(a[0], -1); },
                    "torch.diag_embed(x, -1)")
               .variants({contiguous, transposed, sliced}));

  // ----- ops whose backward accumulates -----
  add_move(shape.op("expand_contiguous", {Arg::randn("x", {1, 24})},
                    [](A a) { return a[0].expand({16, 24}).contiguous(); },
                    "x.expand(16, 24).contiguous()")
               .variants({contiguous, sliced}), true);
  add_move(shape.op("expand_4d", {Arg::randn("x", {2, 1, 8, 1})},
                    [](A a) { return a[0].expand({2, 6, 8, 5}).contiguous(); },
                    "x.expand(2, 6, 8, 5).contiguous()")
               .variants({contiguous, transposed}), true);
  add_move(shape.op("repeat", {Arg::randn("x", {8, 12})},
                    [](A a) { return a[0].repeat({2, 3, 1}); },
                    "x.repeat(2, 3, 1)")
               .variants({contiguous, transposed, sliced}), true);
  add_move(shape.op("tile", {Arg::randn("x", {8, 12})},
                    [](A a) { return at::tile(a[0], {3, 2}); },
                    "torch.tile(x, (3, 2))")
               .variants({contiguous, transposed, sliced}), true);
  add_move(shape.op("repeat_interleave", {Arg::randn("x", {8, 12})},
                    [](A a) { return at::repeat_interleave(a[0], 3, 1); },
                    "torch.repeat_interleave(x, 3, 1)")
               .variants({contiguous, transposed, sliced}), true);
  add_move(shape.op("repeat_interleave_tensor", {Arg::randn("x", {8, 12}), Arg::integers("repeats", {8}, 0, 4)},
                    [](A a) { return at::repeat_interleave(a[0], a[1], 0); },
                    "torch.repeat_interleave(x, repeats, 0)")
               .variants({contiguous, transposed, Variant::sliced("repeats")}), true);
  add_move(shape.op("unfold", {Arg::randn("x", {6, 40})},
                    [](A a) { return a[0].unfold(1, 8, 3).contiguous(); },
                    "x.unfold(1, 8, 3).contiguous()")
               .variants({contiguous, transposed, sliced}), true);

  // ----- padding: constant moves data; reflect/replicate/circular reuse edges -----
  add_move(shape.op("pad_constant", {Arg::randn("x", {2, 4, 10, 12})},
                    [](A a) { return at::pad(a[0], {1, 2, 3, 0}, "constant", 0.5); },
                    "torch.nn.functional.pad(x, [1, 2, 3, 0], 'constant', 0.5)")
               .variants({contiguous, transposed, Variant::channels_last()}), false, false);
  add_move(shape.op("pad_constant_negative", {Arg::randn("x", {4, 10, 12})},
                    [](A a) { return at::pad(a[0], {-2, 3}, "constant", 0); },
                    "torch.nn.functional.pad(x, [-2, 3], 'constant', 0.0)")
               .variants({contiguous, transposed, sliced}), false, false);
  for (const char* mode : {"reflect", "replicate", "circular"}) {
    const std::string m = mode;
    shape.op("pad_" + m, {Arg::randn("x", {2, 4, 10, 12})}, [m](A a) { return at::pad(a[0], {2, 3, 1, 2}, m, c10::nullopt); },
             "torch.nn.functional.pad(x, [2, 3, 1, 2], '" + m + "')")
        .tolerance("indexing").add(dtypes::floats, {contiguous, transposed, Variant::channels_last()});
    shape.op("pad_" + m + "_1d", {Arg::randn("x", {2, 4, 16})}, [m](A a) { return at::pad(a[0], {3, 4}, m, c10::nullopt); },
             "torch.nn.functional.pad(x, [3, 4], '" + m + "')")
        .tolerance("indexing").add(dtypes::f32, {contiguous, transposed, sliced});
  }

  // ----- large: more than 2^24 elements moved through a strided copy -----
  shape.op("transpose_contiguous_large", {Arg::randn("x", {4100, 4100})}, [](A a) { return a[0].transpose(0, 1).contiguous(); },
           "x.transpose(0, 1).contiguous()").no_grad().large().add(dtypes::f32);
  shape.op("cat_large", {Arg::randn("a", {1 << 12, 1 << 12}), Arg::randn("b", {64, 1 << 12})},
           [](A a) { return at::cat({a[0], a[1]}, 0); }, "torch.cat([a, b], 0)").no_grad().large().add(dtypes::f32);

  // ----- huge: an output past 2^31 elements (only --huge selects it) -----
  // Two halves of 2^30 + 2^15 int8 each, repeated on the device from 251-element seeds; the output's
  // elements around 2^31 (the second half's start is 2^30 + 2^15 before it) and its tail are kept,
  // where a kernel with 32-bit offsets writes the second half back over the first.
  shape.op("cat_huge", {Arg::randn("a", {251}), Arg::randn("b", {251})},
           [](A a) {
             const int64_t half = (int64_t{1} << 30) + (int64_t{1} << 15), two31 = int64_t{1} << 31;
             auto grow = [&](const at::Tensor& seed) { return seed.repeat({half / 251 + 1}).narrow(0, 0, half); };
             const at::Tensor out = at::cat({grow(a[0]), grow(a[1])}, 0);
             return Tensors{out.narrow(0, 0, 4096).clone(), out.narrow(0, two31 - 4096, 8192).clone(),
                            out.narrow(0, 2 * half - 4096, 4096).clone()};
           },
           "(lambda out: (out[:4096], out[2**31 - 4096:2**31 + 4096], out[-4096:]))(torch.cat([a.repeat(4277987)[:1073774592], "
           "b.repeat(4277987)[:1073774592]], 0))")
      .no_grad().huge(int64_t{9} << 29).add({c10::kChar});
}
// clang-format on

MPSCHECK_PLUGIN("ops-shape", "0.1.0")

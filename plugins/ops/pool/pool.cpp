// Pooling and resizing family: windows over strided/channels_last inputs, and interpolation
// modes whose align_corners conventions backends get wrong.
#include <mpscheck/op.hpp>

using namespace mpscheck::op;

namespace {

OpDef pool(std::string op, std::vector<Arg> args, OpFn fn, std::string python, bool differentiable = true,
           std::vector<std::string> tags = {}) {
  return OpDef{"pool", std::move(op), std::move(args), std::move(fn), std::move(python), differentiable, {},
               std::move(tags), {}};
}

}  // namespace

MPSCHECK_CATALOG(pool_cases) {
  const std::vector<c10::ScalarType> f32{c10::kFloat};
  const std::vector<c10::ScalarType> models{c10::kFloat, c10::kBFloat16};
  const std::vector<Variant> v4d{Variant::contiguous(), Variant::channels_last(), Variant::sliced()};
  const std::vector<Variant> v3d{Variant::contiguous(), Variant::sliced(), Variant::transposed()};

  add_op(catalog, pool("max_pool1d", {Arg::randn("x", {2, 8, 33})},
                       [](const Tensors& a) { return Tensors{at::max_pool1d(a[0], {3}, {2}, {1})}; },
                       "torch.nn.functional.max_pool1d(x, 3, 2, 1)"),
         f32, v3d);
  add_op(catalog, pool("max_pool2d", {Arg::randn("x", {2, 8, 16, 16})},
                       [](const Tensors& a) { return Tensors{at::max_pool2d(a[0], {2, 2}, {2, 2})}; },
                       "torch.nn.functional.max_pool2d(x, 2, 2)"),
         models, v4d);
  add_op(catalog, pool("max_pool2d_padded_dilated", {Arg::randn("x", {2, 4, 15, 15})},
                       [](const Tensors& a) { return Tensors{at::max_pool2d(a[0], {3, 3}, {2, 2}, {1, 1}, {2, 2})}; },
                       "torch.nn.functional.max_pool2d(x, 3, 2, 1, 2)"),
         f32, v4d);
  add_op(catalog, pool("max_pool2d_ceil", {Arg::randn("x", {2, 4, 15, 15})},
                       [](const Tensors& a) {
                         return Tensors{at::max_pool2d(a[0], {3, 3}, {2, 2}, {0, 0}, {1, 1}, true)};
                       },
                       "torch.nn.functional.max_pool2d(x, 3, 2, 0, 1, ceil_mode=True)"),
         f32, v4d);
  add_op(catalog, pool("max_pool3d", {Arg::randn("x", {2, 4, 8, 8, 8})},
                       [](const Tensors& a) { return Tensors{at::max_pool3d(a[0], {2, 2, 2}, {2, 2, 2})}; },
                       "torch.nn.functional.max_pool3d(x, 2, 2)"),
         f32, {Variant::contiguous(), Variant::sliced()});
  add_op(catalog, pool("avg_pool1d", {Arg::randn("x", {2, 8, 33})},
                       [](const Tensors& a) { return Tensors{at::avg_pool1d(a[0], {3}, {2}, {1})}; },
                       "torch.nn.functional.avg_pool1d(x, 3, 2, 1)"),
         f32, v3d);
  add_op(catalog, pool("avg_pool2d", {Arg::randn("x", {2, 8, 16, 16})},
                       [](const Tensors& a) { return Tensors{at::avg_pool2d(a[0], {3, 3}, {2, 2}, {1, 1})}; },
                       "torch.nn.functional.avg_pool2d(x, 3, 2, 1)"),
         models, v4d);
  add_op(catalog, pool("avg_pool2d_exclude_pad_ceil", {Arg::randn("x", {2, 4, 15, 15})},
                       [](const Tensors& a) {
                         return Tensors{at::avg_pool2d(a[0], {3, 3}, {2, 2}, {1, 1}, true, false)};
                       },
                       "torch.nn.functional.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)"),
         f32, v4d);
  add_op(catalog, pool("avg_pool3d", {Arg::randn("x", {2, 4, 8, 8, 8})},
                       [](const Tensors& a) { return Tensors{at::avg_pool3d(a[0], {2, 2, 2}, {2, 2, 2})}; },
                       "torch.nn.functional.avg_pool3d(x, 2, 2)"),
         f32, {Variant::contiguous(), Variant::sliced()});
  add_op(catalog, pool("adaptive_avg_pool1d", {Arg::randn("x", {2, 8, 30})},
                       [](const Tensors& a) { return Tensors{at::adaptive_avg_pool1d(a[0], {7})}; },
                       "torch.nn.functional.adaptive_avg_pool1d(x, 7)"),
         f32, v3d);
  add_op(catalog, pool("adaptive_avg_pool2d", {Arg::randn("x", {2, 8, 15, 13})},
                       [](const Tensors& a) { return Tensors{at::adaptive_avg_pool2d(a[0], {4, 5})}; },
                       "torch.nn.functional.adaptive_avg_pool2d(x, (4, 5))"),
         models, v4d);
  add_op(catalog, pool("adaptive_avg_pool2d_global", {Arg::randn("x", {4, 32, 7, 7})},
                       [](const Tensors& a) { return Tensors{at::adaptive_avg_pool2d(a[0], {1, 1})}; },
                       "torch.nn.functional.adaptive_avg_pool2d(x, 1)"),
         f32, v4d);
  add_op(catalog, pool("adaptive_max_pool1d", {Arg::randn("x", {2, 8, 30})},
                       [](const Tensors& a) { return Tensors{std::get<0>(at::adaptive_max_pool1d(a[0], {7}))}; },
                       "torch.nn.functional.adaptive_max_pool1d(x, 7)"),
         f32, v3d);
  add_op(catalog, pool("adaptive_max_pool2d", {Arg::randn("x", {2, 8, 15, 13})},
                       [](const Tensors& a) { return Tensors{std::get<0>(at::adaptive_max_pool2d(a[0], {4, 5}))}; },
                       "torch.nn.functional.adaptive_max_pool2d(x, (4, 5))"),
         f32, v4d);

  // ----- resizing -----
  add_op(catalog, pool("upsample_nearest2d", {Arg::randn("x", {2, 4, 8, 8})},
                       [](const Tensors& a) {
                         return Tensors{at::upsample_nearest2d(a[0], std::vector<int64_t>{16, 20}, c10::nullopt,
                                                               c10::nullopt)};
                       },
                       "torch.nn.functional.interpolate(x, size=(16, 20), mode='nearest')"),
         models, v4d);
  for (bool align : {false, true}) {
    const std::string suffix = align ? "_align_corners" : "";
    const std::string py_align = align ? "True" : "False";
    add_op(catalog, pool("upsample_bilinear2d" + suffix, {Arg::randn("x", {2, 4, 8, 8})},
                         [align](const Tensors& a) {
                           return Tensors{at::upsample_bilinear2d(a[0], std::vector<int64_t>{13, 16}, align,
                                                                  c10::nullopt, c10::nullopt)};
                         },
                         "torch.nn.functional.interpolate(x, size=(13, 16), mode='bilinear', align_corners=" +
                             py_align + ")"),
           f32, v4d);
    add_op(catalog, pool("upsample_bicubic2d" + suffix, {Arg::randn("x", {2, 4, 8, 8})},
                         [align](const Tensors& a) {
                           return Tensors{at::upsample_bicubic2d(a[0], std::vector<int64_t>{13, 16}, align,
                                                                 c10::nullopt, c10::nullopt)};
                         },
                         "torch.nn.functional.interpolate(x, size=(13, 16), mode='bicubic', align_corners=" +
                             py_align + ")"),
           f32, v4d);
    add_op(catalog, pool("downsample_bilinear2d" + suffix, {Arg::randn("x", {2, 4, 17, 15})},
                         [align](const Tensors& a) {
                           return Tensors{at::upsample_bilinear2d(a[0], std::vector<int64_t>{6, 7}, align,
                                                                  c10::nullopt, c10::nullopt)};
                         },
                         "torch.nn.functional.interpolate(x, size=(6, 7), mode='bilinear', align_corners=" +
                             py_align + ")"),
           f32, v4d);
    add_op(catalog, pool("upsample_linear1d" + suffix, {Arg::randn("x", {2, 4, 10})},
                         [align](const Tensors& a) {
                           return Tensors{at::upsample_linear1d(a[0], std::vector<int64_t>{25}, align, c10::optional<double>())};
                         },
                         "torch.nn.functional.interpolate(x, size=25, mode='linear', align_corners=" + py_align +
                             ")"),
           f32, v3d);
  }
  add_op(catalog, pool("pixel_shuffle", {Arg::randn("x", {2, 16, 5, 6})},
                       [](const Tensors& a) { return Tensors{at::pixel_shuffle(a[0], 2)}; },
                       "torch.nn.functional.pixel_shuffle(x, 2)"),
         {c10::kFloat, c10::kBFloat16, c10::kLong}, v4d);
  add_op(catalog, pool("pixel_unshuffle", {Arg::randn("x", {2, 4, 8, 10})},
                       [](const Tensors& a) { return Tensors{at::pixel_unshuffle(a[0], 2)}; },
                       "torch.nn.functional.pixel_unshuffle(x, 2)"),
         {c10::kFloat, c10::kLong}, v4d);
  for (bool align : {false, true}) {
    const std::string suffix = align ? "_align_corners" : "";
    const std::string py_align = align ? "True" : "False";
    // Sample points inside [-1.1, 1.1] so some fall in the zero-padded border.
    add_op(catalog, pool("grid_sample_bilinear" + suffix,
                         {Arg::randn("x", {2, 3, 8, 8}), Arg::uniform("grid", {2, 6, 7, 2}, -1.1, 1.1)},
                         [align](const Tensors& a) { return Tensors{at::grid_sampler(a[0], a[1], 0, 0, align)}; },
                         "torch.nn.functional.grid_sample(x, grid, mode='bilinear', padding_mode='zeros', "
                         "align_corners=" + py_align + ")"),
           f32, {Variant::contiguous(), Variant::channels_last("x"), Variant::sliced("grid")});
  }
  add_op(catalog, pool("grid_sample_nearest_border", {Arg::randn("x", {2, 3, 8, 8}), Arg::uniform("grid", {2, 6, 7, 2}, -1.1, 1.1).no_grad()},
                       [](const Tensors& a) { return Tensors{at::grid_sampler(a[0], a[1], 1, 1, false)}; },
                       "torch.nn.functional.grid_sample(x, grid, mode='nearest', padding_mode='border', "
                       "align_corners=False)"),
         f32, {Variant::contiguous(), Variant::channels_last("x")});

  // ----- large: a pooling window over many channels and a big resize -----
  const Variant large{"large", [](std::vector<Arg>&) {}};
  add_op(catalog, pool("max_pool2d_many_channels", {Arg::randn("x", {1, 70000, 8, 8})},
                       [](const Tensors& a) { return Tensors{at::max_pool2d(a[0], {2, 2}, {2, 2})}; },
                       "torch.nn.functional.max_pool2d(x, 2, 2)", true, {"large"}),
         f32, {large});
  add_op(catalog, pool("upsample_bilinear2d_big", {Arg::randn("x", {1, 16, 512, 512})},
                       [](const Tensors& a) {
                         return Tensors{at::upsample_bilinear2d(a[0], std::vector<int64_t>{1100, 1100}, false,
                                                                c10::nullopt, c10::nullopt)};
                       },
                       "torch.nn.functional.interpolate(x, size=(1100, 1100), mode='bilinear', align_corners=False)",
                       true, {"large"}),
         f32, {large});
}

MPSCHECK_PLUGIN("ops-pool", "0.1.0")

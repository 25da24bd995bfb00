// Pooling and resizing family: windows over strided/channels_last inputs, and interpolation
// modes whose align_corners conventions backends get wrong.
#include <mpscheck/op.hpp>

using namespace mpscheck::op;

// clang-format off
MPSCHECK_CATALOG(pool_cases) {
  Family pool(catalog, "pool");
  const Variants v4d{Variant::contiguous(), Variant::channels_last(), Variant::sliced()};
  const Variants v3d{Variant::contiguous(), Variant::sliced(), Variant::transposed()};
  pool.variants(v4d);
  using T = const at::Tensor&;

  pool.op("max_pool1d", {Arg::randn("x", {2, 8, 33})}, [](T x) { return at::max_pool1d(x, {3}, {2}, {1}); },
          "torch.nn.functional.max_pool1d(x, 3, 2, 1)").variants(v3d).add();
  pool.op("max_pool2d", {Arg::randn("x", {2, 8, 16, 16})}, [](T x) { return at::max_pool2d(x, {2, 2}, {2, 2}); },
          "torch.nn.functional.max_pool2d(x, 2, 2)").add(dtypes::f32_bf16);
  pool.op("max_pool2d_padded_dilated", {Arg::randn("x", {2, 4, 15, 15})},
          [](T x) { return at::max_pool2d(x, {3, 3}, {2, 2}, {1, 1}, {2, 2}); },
          "torch.nn.functional.max_pool2d(x, 3, 2, 1, 2)").add();
  pool.op("max_pool2d_ceil", {Arg::randn("x", {2, 4, 15, 15})},
          [](T x) { return at::max_pool2d(x, {3, 3}, {2, 2}, {0, 0}, {1, 1}, true); },
          "torch.nn.functional.max_pool2d(x, 3, 2, 0, 1, ceil_mode=True)").add();
  pool.op("max_pool3d", {Arg::randn("x", {2, 4, 8, 8, 8})}, [](T x) { return at::max_pool3d(x, {2, 2, 2}, {2, 2, 2}); },
          "torch.nn.functional.max_pool3d(x, 2, 2)").variants({Variant::contiguous(), Variant::sliced()}).add();
  pool.op("avg_pool1d", {Arg::randn("x", {2, 8, 33})}, [](T x) { return at::avg_pool1d(x, {3}, {2}, {1}); },
          "torch.nn.functional.avg_pool1d(x, 3, 2, 1)").variants(v3d).add();
  pool.op("avg_pool2d", {Arg::randn("x", {2, 8, 16, 16})}, [](T x) { return at::avg_pool2d(x, {3, 3}, {2, 2}, {1, 1}); },
          "torch.nn.functional.avg_pool2d(x, 3, 2, 1)").add(dtypes::f32_bf16);
  pool.op("avg_pool2d_exclude_pad_ceil", {Arg::randn("x", {2, 4, 15, 15})},
          [](T x) { return at::avg_pool2d(x, {3, 3}, {2, 2}, {1, 1}, true, false); },
          "torch.nn.functional.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)").add();
  pool.op("avg_pool3d", {Arg::randn("x", {2, 4, 8, 8, 8})}, [](T x) { return at::avg_pool3d(x, {2, 2, 2}, {2, 2, 2}); },
          "torch.nn.functional.avg_pool3d(x, 2, 2)").variants({Variant::contiguous(), Variant::sliced()}).add();
  pool.op("adaptive_avg_pool1d", {Arg::randn("x", {2, 8, 30})}, [](T x) { return at::adaptive_avg_pool1d(x, {7}); },
          "torch.nn.functional.adaptive_avg_pool1d(x, 7)").variants(v3d).add();
  pool.op("adaptive_avg_pool2d", {Arg::randn("x", {2, 8, 15, 13})}, [](T x) { return at::adaptive_avg_pool2d(x, {4, 5}); },
          "torch.nn.functional.adaptive_avg_pool2d(x, (4, 5))").add(dtypes::f32_bf16);
  pool.op("adaptive_avg_pool2d_global", {Arg::randn("x", {4, 32, 7, 7})},
          [](T x) { return at::adaptive_avg_pool2d(x, {1, 1}); }, "torch.nn.functional.adaptive_avg_pool2d(x, 1)").add();
  pool.op("adaptive_max_pool1d", {Arg::randn("x", {2, 8, 30})},
          [](T x) { return std::get<0>(at::adaptive_max_pool1d(x, {7})); },
          "torch.nn.functional.adaptive_max_pool1d(x, 7)").variants(v3d).add();
  pool.op("adaptive_max_pool2d", {Arg::randn("x", {2, 8, 15, 13})},
          [](T x) { return std::get<0>(at::adaptive_max_pool2d(x, {4, 5})); },
          "torch.nn.functional.adaptive_max_pool2d(x, (4, 5))").add();

  // ----- resizing -----
  pool.op("upsample_nearest2d", {Arg::randn("x", {2, 4, 8, 8})},
          [](T x) { return at::upsample_nearest2d(x, std::vector<int64_t>{16, 20}, c10::nullopt, c10::nullopt); },
          "torch.nn.functional.interpolate(x, size=(16, 20), mode='nearest')").add(dtypes::f32_bf16);
  for (bool align : {false, true}) {
    const std::string suffix = align ? "_align_corners" : "";
    const std::string py_align = align ? "True" : "False";
    pool.op("upsample_bilinear2d" + suffix, {Arg::randn("x", {2, 4, 8, 8})},
            [align](T x) {
              return at::upsample_bilinear2d(x, std::vector<int64_t>{13, 16}, align, c10::nullopt, c10::nullopt);
            },
            "torch.nn.functional.interpolate(x, size=(13, 16), mode='bilinear', align_corners=" + py_align + ")")
        .add();
    pool.op("upsample_bicubic2d" + suffix, {Arg::randn("x", {2, 4, 8, 8})},
            [align](T x) {
              return at::upsample_bicubic2d(x, std::vector<int64_t>{13, 16}, align, c10::nullopt, c10::nullopt);
            },
            "torch.nn.functional.interpolate(x, size=(13, 16), mode='bicubic', align_corners=" + py_align + ")")
        .add();
    pool.op("downsample_bilinear2d" + suffix, {Arg::randn("x", {2, 4, 17, 15})},
            [align](T x) {
              return at::upsample_bilinear2d(x, std::vector<int64_t>{6, 7}, align, c10::nullopt, c10::nullopt);
            },
            "torch.nn.functional.interpolate(x, size=(6, 7), mode='bilinear', align_corners=" + py_align + ")")
        .add();
    pool.op("upsample_linear1d" + suffix, {Arg::randn("x", {2, 4, 10})},
            [align](T x) { return at::upsample_linear1d(x, std::vector<int64_t>{25}, align, c10::optional<double>()); },
            "torch.nn.functional.interpolate(x, size=25, mode='linear', align_corners=" + py_align + ")")
        .variants(v3d).add();
  }
  pool.op("pixel_shuffle", {Arg::randn("x", {2, 16, 5, 6})}, [](T x) { return at::pixel_shuffle(x, 2); },
          "torch.nn.functional.pixel_shuffle(x, 2)").add({c10::kFloat, c10::kBFloat16, c10::kLong});
  pool.op("pixel_unshuffle", {Arg::randn("x", {2, 4, 8, 10})}, [](T x) { return at::pixel_unshuffle(x, 2); },
          "torch.nn.functional.pixel_unshuffle(x, 2)").add({c10::kFloat, c10::kLong});
  for (bool align : {false, true}) {
    const std::string suffix = align ? "_align_corners" : "";
    const std::string py_align = align ? "True" : "False";
    // Sample points inside [-1.1, 1.1] so some fall in the zero-padded border.
    pool.op("grid_sample_bilinear" + suffix, {Arg::randn("x", {2, 3, 8, 8}), Arg::uniform("grid", {2, 6, 7, 2}, -1.1, 1.1)},
            [align](const Tensors& a) { return at::grid_sampler(a[0], a[1], 0, 0, align); },
            "torch.nn.functional.grid_sample(x, grid, mode='bilinear', padding_mode='zeros', align_corners=" +
                py_align + ")")
        .variants({Variant::contiguous(), Variant::channels_last("x"), Variant::sliced("grid")}).add();
  }
  pool.op("grid_sample_nearest_border",
          {Arg::randn("x", {2, 3, 8, 8}), Arg::uniform("grid", {2, 6, 7, 2}, -1.1, 1.1).no_grad()},
          [](const Tensors& a) { return at::grid_sampler(a[0], a[1], 1, 1, false); },
          "torch.nn.functional.grid_sample(x, grid, mode='nearest', padding_mode='border', align_corners=False)")
      .variants({Variant::contiguous(), Variant::channels_last("x")}).add();

  // ----- large: a pooling window over many channels and a big resize -----
  pool.op("max_pool2d_many_channels", {Arg::randn("x", {1, 70000, 8, 8})},
          [](T x) { return at::max_pool2d(x, {2, 2}, {2, 2}); }, "torch.nn.functional.max_pool2d(x, 2, 2)").large().add();
  pool.op("upsample_bilinear2d_big", {Arg::randn("x", {1, 16, 512, 512})},
          [](T x) { return at::upsample_bilinear2d(x, std::vector<int64_t>{1100, 1100}, false, c10::nullopt, c10::nullopt); },
          "torch.nn.functional.interpolate(x, size=(1100, 1100), mode='bilinear', align_corners=False)")
      .large().add();
}
// clang-format on

MPSCHECK_PLUGIN("ops-pool", "0.1.0")

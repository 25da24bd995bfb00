// Loss family: reductions over the batch, class-index targets (int64), ignored and smoothed
// labels, log-space targets and the CTC recursion.
#include <mpscheck/op.hpp>

using namespace mpscheck::op;

namespace {

using A = const Tensors&;

struct Reduction {
  const char* name;  // torch's reduction= string, and the suffix of the op name
  int64_t value;     // at::Reduction::Reduction
};
const std::vector<Reduction> kReductions = {
    {"mean", at::Reduction::Mean}, {"sum", at::Reduction::Sum}, {"none", at::Reduction::None}};

// Python call with the reduction appended: "f(x, y" + ", reduction='sum')".
std::string with_reduction(const std::string& call_head, const Reduction& r) {
  return call_head + ", reduction='" + r.name + "')";
}

std::string op_name(const std::string& base, const Reduction& r) { return base + "_" + r.name; }

Arg logits() { return Arg::randn("x", {32, 10}); }
Arg labels() { return Arg::integers("target", {32}, 0, 10); }
Arg probabilities(const std::string& name, std::vector<int64_t> shape) {
  return Arg::uniform(name, std::move(shape), 0.02, 0.98);
}

// Most losses run in float32 and bfloat16 (float16 where models train in it).
Family loss_family(mpscheck::Catalog& catalog, Variants variants) {
  Family f(catalog, "loss");
  f.dtypes(dtypes::f32_bf16).variants(std::move(variants));
  return f;
}

}  // namespace

// clang-format off
MPSCHECK_CATALOG(loss_classification_cases) {
  const Family loss = loss_family(catalog, {Variant::contiguous(), Variant::transposed("x")});
  for (const auto& r : kReductions) {
    const int64_t red = r.value;
    loss.op(op_name("cross_entropy", r), {logits(), labels()},
            [red](A a) { return at::cross_entropy_loss(a[0], a[1], {}, red, -100, 0.0); },
            with_reduction("torch.nn.functional.cross_entropy(x, target", r)).add(dtypes::floats);
    loss.op(op_name("cross_entropy_smoothing", r), {logits(), labels()},
            [red](A a) { return at::cross_entropy_loss(a[0], a[1], {}, red, -100, 0.1); },
            with_reduction("torch.nn.functional.cross_entropy(x, target, label_smoothing=0.1", r)).add();
    // Class 0 is ignored: about a tenth of the rows drop out of the mean's denominator.
    loss.op(op_name("cross_entropy_ignore_index", r), {logits(), labels()},
            [red](A a) { return at::cross_entropy_loss(a[0], a[1], {}, red, 0, 0.0); },
            with_reduction("torch.nn.functional.cross_entropy(x, target, ignore_index=0", r)).add();
    loss.op(op_name("nll_loss", r), {logits(), labels()}, [red](A a) { return at::nll_loss(a[0], a[1], {}, red, -100); },
            with_reduction("torch.nn.functional.nll_loss(x, target", r)).add();
    loss.op(op_name("binary_cross_entropy", r), {probabilities("p", {32, 10}), probabilities("y", {32, 10}).no_grad()},
            [red](A a) { return at::binary_cross_entropy(a[0], a[1], {}, red); },
            with_reduction("torch.nn.functional.binary_cross_entropy(p, y", r))
        .variants({Variant::contiguous(), Variant::transposed("p")}).add();
    loss.op(op_name("bce_with_logits", r), {Arg::uniform("x", {32, 10}, -8, 8), probabilities("y", {32, 10}).no_grad()},
            [red](A a) { return at::binary_cross_entropy_with_logits(a[0], a[1], {}, {}, red); },
            with_reduction("torch.nn.functional.binary_cross_entropy_with_logits(x, y", r)).add(dtypes::floats);
  }
  // Class weights and positive weights are buffers in models: no gradient.
  loss.op("cross_entropy_weight", {logits(), labels(), Arg::uniform("weight", {10}, 0.5, 2).no_grad()},
          [](A a) { return at::cross_entropy_loss(a[0], a[1], a[2], at::Reduction::Mean, -100, 0.0); },
          "torch.nn.functional.cross_entropy(x, target, weight=weight)").add();
  loss.op("cross_entropy_probs", {logits(), probabilities("target", {32, 10}).no_grad()},
          [](A a) { return at::cross_entropy_loss(a[0], a[1], {}, at::Reduction::Mean, -100, 0.0); },
          "torch.nn.functional.cross_entropy(x, target)").add();
  // Segmentation shape: class dim 1 of an image, where channels_last changes its stride.
  loss.op("cross_entropy_2d", {Arg::randn("x", {2, 5, 8, 8}), Arg::integers("target", {2, 8, 8}, 0, 5)},
          [](A a) { return at::cross_entropy_loss(a[0], a[1], {}, at::Reduction::Mean, -100, 0.0); },
          "torch.nn.functional.cross_entropy(x, target)")
      .variants({Variant::contiguous(), Variant::channels_last("x")}).add();
  // Contiguous only: LibTorch 1.13's CPU nll_loss2d backward rejects any strided input
  // ("grad_input must be contiguous", also from Python), so the float32 reference cannot run it.
  loss.op("nll_loss_2d", {Arg::randn("x", {2, 5, 8, 8}), Arg::integers("target", {2, 8, 8}, 0, 5)},
          [](A a) { return at::nll_loss_nd(a[0], a[1], {}, at::Reduction::Mean, -100); },
          "torch.nn.functional.nll_loss(x, target)").add(dtypes::f32, {Variant::contiguous()});
  loss.op("bce_with_logits_pos_weight",
          {Arg::uniform("x", {32, 10}, -8, 8), probabilities("y", {32, 10}).no_grad(),
           Arg::uniform("pos_weight", {10}, 0.5, 3).no_grad()},
          [](A a) { return at::binary_cross_entropy_with_logits(a[0], a[1], {}, a[2], at::Reduction::Mean); },
          "torch.nn.functional.binary_cross_entropy_with_logits(x, y, pos_weight=pos_weight)").add();
  loss.op("soft_margin_loss", {logits(), Arg::integers("y", {32, 10}, 0, 2, c10::ScalarType::Undefined).no_grad()},
          [](A a) { return at::soft_margin_loss(a[0], a[1] * 2 - 1, at::Reduction::Mean); },
          "torch.nn.functional.soft_margin_loss(x, y * 2 - 1)").add(dtypes::f32);
}
// clang-format on

// clang-format off
MPSCHECK_CATALOG(loss_regression_cases) {
  const Family loss = loss_family(catalog, {Variant::contiguous(), Variant::transposed("a"), Variant::expanded("b")});
  const std::vector<int64_t> shape = {32, 48};
  for (const auto& r : kReductions) {
    const int64_t red = r.value;
    loss.op(op_name("mse", r), {Arg::randn("a", shape), Arg::randn("b", shape)},
            [red](A a) { return at::mse_loss(a[0], a[1], red); },
            with_reduction("torch.nn.functional.mse_loss(a, b", r)).add(dtypes::floats);
    loss.op(op_name("l1", r), {Arg::randn("a", shape), Arg::randn("b", shape)},
            [red](A a) { return at::l1_loss(a[0], a[1], red); }, with_reduction("torch.nn.functional.l1_loss(a, b", r))
        .add();
    loss.op(op_name("smooth_l1", r), {Arg::randn("a", shape), Arg::randn("b", shape)},
            [red](A a) { return at::smooth_l1_loss(a[0], a[1], red, 0.5); },
            with_reduction("torch.nn.functional.smooth_l1_loss(a, b, beta=0.5", r)).add();
    loss.op(op_name("huber", r), {Arg::randn("a", shape), Arg::randn("b", shape)},
            [red](A a) { return at::huber_loss(a[0], a[1], red, 1.5); },
            with_reduction("torch.nn.functional.huber_loss(a, b, delta=1.5", r)).add();
    // Input is a log-probability; the target once as probabilities, once in log space.
    loss.op(op_name("kl_div", r), {logits(), Arg::uniform("target", {32, 10}, 0.01, 1)},
            [red](A a) { return at::kl_div(at::log_softmax(a[0], -1), a[1], red, false); },
            with_reduction("torch.nn.functional.kl_div(x.log_softmax(-1), target", r))
        .variants({Variant::contiguous(), Variant::transposed("x")}).add();
    loss.op(op_name("kl_div_log_target", r), {logits(), Arg::uniform("target", {32, 10}, -5, 0)},
            [red](A a) { return at::kl_div(at::log_softmax(a[0], -1), a[1], red, true); },
            with_reduction("torch.nn.functional.kl_div(x.log_softmax(-1), target, log_target=True", r))
        .variants({Variant::contiguous(), Variant::transposed("target")}).add();
  }
  loss.op("poisson_nll", {Arg::randn("a", shape), Arg::uniform("b", shape, 0, 5).no_grad()},
          [](A a) { return at::poisson_nll_loss(a[0], a[1], true, false, 1e-8, at::Reduction::Mean); },
          "torch.nn.functional.poisson_nll_loss(a, b)").add(dtypes::f32, {Variant::contiguous(), Variant::transposed("a")});
}
// clang-format on

// clang-format off
MPSCHECK_CATALOG(loss_embedding_cases) {
  const Family loss = loss_family(catalog, {Variant::contiguous(), Variant::transposed("a")});
  for (const auto& r : kReductions) {
    const int64_t red = r.value;
    // y in {-1, 1}, drawn as {0, 1}.
    loss.op(op_name("margin_ranking", r),
            {Arg::randn("a", {64}), Arg::randn("b", {64}),
             Arg::integers("y", {64}, 0, 2, c10::ScalarType::Undefined).no_grad()},
            [red](A a) { return at::margin_ranking_loss(a[0], a[1], a[2] * 2 - 1, 0.1, red); },
            with_reduction("torch.nn.functional.margin_ranking_loss(a, b, y * 2 - 1, margin=0.1", r))
        .variants({Variant::contiguous(), Variant::sliced("a")}).add();
    loss.op(op_name("cosine_embedding", r),
            {Arg::randn("a", {16, 32}), Arg::randn("b", {16, 32}),
             Arg::integers("y", {16}, 0, 2, c10::ScalarType::Undefined).no_grad()},
            [red](A a) { return at::cosine_embedding_loss(a[0], a[1], a[2] * 2 - 1, 0.2, red); },
            with_reduction("torch.nn.functional.cosine_embedding_loss(a, b, y * 2 - 1, margin=0.2", r)).add();
  }
  loss.op("triplet_margin", {Arg::randn("a", {16, 32}), Arg::randn("p", {16, 32}), Arg::randn("n", {16, 32})},
          [](A a) { return at::triplet_margin_loss(a[0], a[1], a[2], 1.0, 2, 1e-6, false, at::Reduction::Mean); },
          "torch.nn.functional.triplet_margin_loss(a, p, n, margin=1.0, p=2, eps=1e-6)").add(dtypes::f32);
}
// clang-format on

// clang-format off
MPSCHECK_CATALOG(loss_ctc_cases) {
  const Family loss = loss_family(catalog, {Variant::contiguous(), Variant::transposed("x")});
  // (T, N, C) = (50, 4, 20), targets of length 10 drawn from the non-blank classes.
  const std::vector<int64_t> input_lengths = {50, 50, 50, 50};
  const std::vector<int64_t> target_lengths = {10, 10, 10, 10};
  for (const auto& r : kReductions) {
    const int64_t red = r.value;
    loss.op(op_name("ctc", r), {Arg::randn("x", {50, 4, 20}), Arg::integers("target", {4, 10}, 1, 20)},
            [=](A a) {
              return at::ctc_loss(at::log_softmax(a[0], 2), a[1], input_lengths, target_lengths, 0, red, false);
            },
            with_reduction("torch.nn.functional.ctc_loss(x.log_softmax(2), target, [50, 50, 50, 50], "
                           "[10, 10, 10, 10]", r)).add();
  }
  // Targets longer than the input can align: infinite loss, zeroed by zero_infinity.
  loss.op("ctc_zero_infinity", {Arg::randn("x", {8, 4, 20}), Arg::integers("target", {4, 10}, 1, 20)},
          [](A a) {
            return at::ctc_loss(at::log_softmax(a[0], 2), a[1], {8, 8, 8, 8}, {10, 10, 10, 10}, 0, at::Reduction::Mean,
                                true);
          },
          "torch.nn.functional.ctc_loss(x.log_softmax(2), target, [8, 8, 8, 8], [10, 10, 10, 10], "
          "zero_infinity=True)").add(dtypes::f32, {Variant::contiguous()});
}
// clang-format on

MPSCHECK_PLUGIN("ops-loss", "0.1.0")

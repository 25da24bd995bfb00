// Loss family: reductions over the batch, class-index targets (int64), ignored and smoothed
// labels, log-space targets and the CTC recursion.
#include <mpscheck/op.hpp>

using namespace mpscheck::op;

namespace {

const std::vector<c10::ScalarType> kModelDtypes = {c10::kFloat, c10::kHalf, c10::kBFloat16};
const std::vector<c10::ScalarType> kF32Bf16 = {c10::kFloat, c10::kBFloat16};

struct Reduction {
  const char* name;  // torch's reduction= string, and the suffix of the op name
  int64_t value;     // at::Reduction::Reduction
};
const std::vector<Reduction> kReductions = {
    {"mean", at::Reduction::Mean}, {"sum", at::Reduction::Sum}, {"none", at::Reduction::None}};

OpDef make(std::string op, std::vector<Arg> args, std::function<at::Tensor(const Tensors&)> fn,
           std::string python) {
  OpDef d;
  d.family = "loss";
  d.op = std::move(op);
  d.args = std::move(args);
  d.fn = [fn = std::move(fn)](const Tensors& a) { return Tensors{fn(a)}; };
  d.python = std::move(python);
  return d;
}

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

}  // namespace

MPSCHECK_CATALOG(loss_classification_cases) {
  const std::vector<Variant> xt = {Variant::contiguous(), Variant::transposed("x")};
  for (const auto& r : kReductions) {
    const int64_t red = r.value;
    add_op(catalog,
           make(op_name("cross_entropy", r), {logits(), labels()},
                [red](const Tensors& a) { return at::cross_entropy_loss(a[0], a[1], {}, red, -100, 0.0); },
                with_reduction("torch.nn.functional.cross_entropy(x, target", r)),
           kModelDtypes, xt);
    add_op(catalog,
           make(op_name("cross_entropy_smoothing", r), {logits(), labels()},
                [red](const Tensors& a) { return at::cross_entropy_loss(a[0], a[1], {}, red, -100, 0.1); },
                with_reduction("torch.nn.functional.cross_entropy(x, target, label_smoothing=0.1", r)),
           kF32Bf16, xt);
    // Class 0 is ignored: about a tenth of the rows drop out of the mean's denominator.
    add_op(catalog,
           make(op_name("cross_entropy_ignore_index", r), {logits(), labels()},
                [red](const Tensors& a) { return at::cross_entropy_loss(a[0], a[1], {}, red, 0, 0.0); },
                with_reduction("torch.nn.functional.cross_entropy(x, target, ignore_index=0", r)),
           kF32Bf16, xt);
    add_op(catalog,
           make(op_name("nll_loss", r), {logits(), labels()},
                [red](const Tensors& a) { return at::nll_loss(a[0], a[1], {}, red, -100); },
                with_reduction("torch.nn.functional.nll_loss(x, target", r)),
           kF32Bf16, xt);
    add_op(catalog,
           make(op_name("binary_cross_entropy", r), {probabilities("p", {32, 10}), probabilities("y", {32, 10}).no_grad()},
                [red](const Tensors& a) { return at::binary_cross_entropy(a[0], a[1], {}, red); },
                with_reduction("torch.nn.functional.binary_cross_entropy(p, y", r)),
           kF32Bf16, {Variant::contiguous(), Variant::transposed("p")});
    add_op(catalog,
           make(op_name("bce_with_logits", r),
                {Arg::uniform("x", {32, 10}, -8, 8), probabilities("y", {32, 10}).no_grad()},
                [red](const Tensors& a) {
                  return at::binary_cross_entropy_with_logits(a[0], a[1], {}, {}, red);
                },
                with_reduction("torch.nn.functional.binary_cross_entropy_with_logits(x, y", r)),
           kModelDtypes, xt);
  }
  // Class weights and positive weights are buffers in models: no gradient.
  add_op(catalog,
         make("cross_entropy_weight", {logits(), labels(), Arg::uniform("weight", {10}, 0.5, 2).no_grad()},
              [](const Tensors& a) { return at::cross_entropy_loss(a[0], a[1], a[2], at::Reduction::Mean, -100, 0.0); },
              "torch.nn.functional.cross_entropy(x, target, weight=weight)"),
         kF32Bf16, xt);
  add_op(catalog,
         make("cross_entropy_probs", {logits(), probabilities("target", {32, 10}).no_grad()},
              [](const Tensors& a) { return at::cross_entropy_loss(a[0], a[1], {}, at::Reduction::Mean, -100, 0.0); },
              "torch.nn.functional.cross_entropy(x, target)"),
         kF32Bf16, xt);
  // Segmentation shape: class dim 1 of an image, where channels_last changes its stride.
  add_op(catalog,
         make("cross_entropy_2d", {Arg::randn("x", {2, 5, 8, 8}), Arg::integers("target", {2, 8, 8}, 0, 5)},
              [](const Tensors& a) { return at::cross_entropy_loss(a[0], a[1], {}, at::Reduction::Mean, -100, 0.0); },
              "torch.nn.functional.cross_entropy(x, target)"),
         kF32Bf16, {Variant::contiguous(), Variant::channels_last("x")});
  // Contiguous only: LibTorch 1.13's CPU nll_loss2d backward rejects any strided input
  // ("grad_input must be contiguous", also from Python), so the float32 reference cannot run it.
  add_op(catalog,
         make("nll_loss_2d", {Arg::randn("x", {2, 5, 8, 8}), Arg::integers("target", {2, 8, 8}, 0, 5)},
              [](const Tensors& a) { return at::nll_loss_nd(a[0], a[1], {}, at::Reduction::Mean, -100); },
              "torch.nn.functional.nll_loss(x, target)"),
         {c10::kFloat}, {Variant::contiguous()});
  add_op(catalog,
         make("bce_with_logits_pos_weight",
              {Arg::uniform("x", {32, 10}, -8, 8), probabilities("y", {32, 10}).no_grad(),
               Arg::uniform("pos_weight", {10}, 0.5, 3).no_grad()},
              [](const Tensors& a) {
                return at::binary_cross_entropy_with_logits(a[0], a[1], {}, a[2], at::Reduction::Mean);
              },
              "torch.nn.functional.binary_cross_entropy_with_logits(x, y, pos_weight=pos_weight)"),
         kF32Bf16, xt);
  add_op(catalog,
         make("soft_margin_loss", {logits(), Arg::integers("y", {32, 10}, 0, 2, c10::ScalarType::Undefined).no_grad()},
              [](const Tensors& a) { return at::soft_margin_loss(a[0], a[1] * 2 - 1, at::Reduction::Mean); },
              "torch.nn.functional.soft_margin_loss(x, y * 2 - 1)"),
         {c10::kFloat}, xt);
}

MPSCHECK_CATALOG(loss_regression_cases) {
  const std::vector<Variant> ab = {Variant::contiguous(), Variant::transposed("a"), Variant::expanded("b")};
  const std::vector<int64_t> shape = {32, 48};
  for (const auto& r : kReductions) {
    const int64_t red = r.value;
    add_op(catalog,
           make(op_name("mse", r), {Arg::randn("a", shape), Arg::randn("b", shape)},
                [red](const Tensors& a) { return at::mse_loss(a[0], a[1], red); },
                with_reduction("torch.nn.functional.mse_loss(a, b", r)),
           kModelDtypes, ab);
    add_op(catalog,
           make(op_name("l1", r), {Arg::randn("a", shape), Arg::randn("b", shape)},
                [red](const Tensors& a) { return at::l1_loss(a[0], a[1], red); },
                with_reduction("torch.nn.functional.l1_loss(a, b", r)),
           kF32Bf16, ab);
    add_op(catalog,
           make(op_name("smooth_l1", r), {Arg::randn("a", shape), Arg::randn("b", shape)},
                [red](const Tensors& a) { return at::smooth_l1_loss(a[0], a[1], red, 0.5); },
                with_reduction("torch.nn.functional.smooth_l1_loss(a, b, beta=0.5", r)),
           kF32Bf16, ab);
    add_op(catalog,
           make(op_name("huber", r), {Arg::randn("a", shape), Arg::randn("b", shape)},
                [red](const Tensors& a) { return at::huber_loss(a[0], a[1], red, 1.5); },
                with_reduction("torch.nn.functional.huber_loss(a, b, delta=1.5", r)),
           kF32Bf16, ab);
    // Input is a log-probability; the target once as probabilities, once in log space.
    add_op(catalog,
           make(op_name("kl_div", r), {logits(), Arg::uniform("target", {32, 10}, 0.01, 1)},
                [red](const Tensors& a) { return at::kl_div(at::log_softmax(a[0], -1), a[1], red, false); },
                with_reduction("torch.nn.functional.kl_div(x.log_softmax(-1), target", r)),
           kF32Bf16, {Variant::contiguous(), Variant::transposed("x")});
    add_op(catalog,
           make(op_name("kl_div_log_target", r), {logits(), Arg::uniform("target", {32, 10}, -5, 0)},
                [red](const Tensors& a) { return at::kl_div(at::log_softmax(a[0], -1), a[1], red, true); },
                with_reduction("torch.nn.functional.kl_div(x.log_softmax(-1), target, log_target=True", r)),
           kF32Bf16, {Variant::contiguous(), Variant::transposed("target")});
  }
  add_op(catalog,
         make("poisson_nll", {Arg::randn("a", shape), Arg::uniform("b", shape, 0, 5).no_grad()},
              [](const Tensors& a) { return at::poisson_nll_loss(a[0], a[1], true, false, 1e-8, at::Reduction::Mean); },
              "torch.nn.functional.poisson_nll_loss(a, b)"),
         {c10::kFloat}, {Variant::contiguous(), Variant::transposed("a")});
}

MPSCHECK_CATALOG(loss_embedding_cases) {
  const std::vector<Variant> ab = {Variant::contiguous(), Variant::transposed("a")};
  for (const auto& r : kReductions) {
    const int64_t red = r.value;
    // y in {-1, 1}, drawn as {0, 1}.
    add_op(catalog,
           make(op_name("margin_ranking", r),
                {Arg::randn("a", {64}), Arg::randn("b", {64}),
                 Arg::integers("y", {64}, 0, 2, c10::ScalarType::Undefined).no_grad()},
                [red](const Tensors& a) { return at::margin_ranking_loss(a[0], a[1], a[2] * 2 - 1, 0.1, red); },
                with_reduction("torch.nn.functional.margin_ranking_loss(a, b, y * 2 - 1, margin=0.1", r)),
           kF32Bf16, {Variant::contiguous(), Variant::sliced("a")});
    add_op(catalog,
           make(op_name("cosine_embedding", r),
                {Arg::randn("a", {16, 32}), Arg::randn("b", {16, 32}),
                 Arg::integers("y", {16}, 0, 2, c10::ScalarType::Undefined).no_grad()},
                [red](const Tensors& a) { return at::cosine_embedding_loss(a[0], a[1], a[2] * 2 - 1, 0.2, red); },
                with_reduction("torch.nn.functional.cosine_embedding_loss(a, b, y * 2 - 1, margin=0.2", r)),
           kF32Bf16, ab);
  }
  add_op(catalog,
         make("triplet_margin", {Arg::randn("a", {16, 32}), Arg::randn("p", {16, 32}), Arg::randn("n", {16, 32})},
              [](const Tensors& a) {
                return at::triplet_margin_loss(a[0], a[1], a[2], 1.0, 2, 1e-6, false, at::Reduction::Mean);
              },
              "torch.nn.functional.triplet_margin_loss(a, p, n, margin=1.0, p=2, eps=1e-6)"),
         {c10::kFloat}, ab);
}

MPSCHECK_CATALOG(loss_ctc_cases) {
  // (T, N, C) = (50, 4, 20), targets of length 10 drawn from the non-blank classes.
  const std::vector<int64_t> input_lengths = {50, 50, 50, 50};
  const std::vector<int64_t> target_lengths = {10, 10, 10, 10};
  for (const auto& r : kReductions) {
    const int64_t red = r.value;
    add_op(catalog,
           make(op_name("ctc", r), {Arg::randn("x", {50, 4, 20}), Arg::integers("target", {4, 10}, 1, 20)},
                [=](const Tensors& a) {
                  return at::ctc_loss(at::log_softmax(a[0], 2), a[1], input_lengths, target_lengths, 0, red, false);
                },
                with_reduction("torch.nn.functional.ctc_loss(x.log_softmax(2), target, [50, 50, 50, 50], "
                               "[10, 10, 10, 10]", r)),
           kF32Bf16, {Variant::contiguous(), Variant::transposed("x")});
  }
  // Targets longer than the input can align: infinite loss, zeroed by zero_infinity.
  add_op(catalog,
         make("ctc_zero_infinity", {Arg::randn("x", {8, 4, 20}), Arg::integers("target", {4, 10}, 1, 20)},
              [](const Tensors& a) {
                return at::ctc_loss(at::log_softmax(a[0], 2), a[1], {8, 8, 8, 8}, {10, 10, 10, 10}, 0,
                                    at::Reduction::Mean, true);
              },
              "torch.nn.functional.ctc_loss(x.log_softmax(2), target, [8, 8, 8, 8], [10, 10, 10, 10], "
              "zero_infinity=True)"),
         {c10::kFloat}, {Variant::contiguous()});
}

MPSCHECK_PLUGIN("ops-loss", "0.1.0")

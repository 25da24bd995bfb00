// Elementwise unary math and activations: libm approximations, strided inputs and reduced
// precision are where backends differ.
#include <mpscheck/op.hpp>

using namespace mpscheck::op;

namespace {

using UnaryFn = std::function<at::Tensor(const at::Tensor&)>;

const std::vector<int64_t> kShape = {64, 96};

OpDef unary(std::string op, Arg x, UnaryFn f, std::string python) {
  OpDef d;
  d.family = "activation";
  d.op = std::move(op);
  d.args = {std::move(x)};
  d.fn = [f = std::move(f)](const Tensors& a) { return Tensors{f(a[0])}; };
  d.python = std::move(python);
  return d;
}

struct Coverage {
  bool reduced = true;                    // also float16 and bfloat16
  std::vector<c10::ScalarType> integers;  // integer dtypes the op takes
};

// float32 gets every layout; other dtypes the contiguous one and one strided one.
void add_unary(mpscheck::Catalog& catalog, const OpDef& def, const Coverage& cov = {}) {
  const std::vector<Variant> all = {Variant::contiguous(), Variant::transposed(), Variant::sliced()};
  const std::vector<Variant> two = {Variant::contiguous(), Variant::sliced()};
  add_op(catalog, def, {c10::kFloat}, all);
  if (cov.reduced) add_op(catalog, def, {c10::kHalf, c10::kBFloat16}, two);
  if (!cov.integers.empty()) add_op(catalog, def, cov.integers, two);
}

OpDef exact(OpDef d) {  // ops whose result is exact in any backend (sign flips, comparisons)
  d.tolerance = "elementwise";
  return d;
}

OpDef no_grad(OpDef d) {
  d.differentiable = false;
  return d;
}

}  // namespace

MPSCHECK_CATALOG(activation_math_cases) {
  const Coverage floats;
  const Coverage f32_only{false, {}};
  const Coverage ints{true, {c10::kLong, c10::kInt}};
  const auto x = Arg::randn("x", kShape);

  add_unary(catalog, unary("exp", x, [](const at::Tensor& t) { return at::exp(t); }, "torch.exp(x)"), floats);
  add_unary(catalog, unary("exp2", x, [](const at::Tensor& t) { return at::exp2(t); }, "torch.exp2(x)"), f32_only);
  add_unary(catalog, unary("expm1", x, [](const at::Tensor& t) { return at::expm1(t); }, "torch.expm1(x)"), floats);
  add_unary(catalog, unary("log", Arg::uniform("x", kShape, 0.05, 10),
                           [](const at::Tensor& t) { return at::log(t); }, "torch.log(x)"), floats);
  add_unary(catalog, unary("log2", Arg::uniform("x", kShape, 0.05, 10),
                           [](const at::Tensor& t) { return at::log2(t); }, "torch.log2(x)"), f32_only);
  add_unary(catalog, unary("log10", Arg::uniform("x", kShape, 0.05, 10),
                           [](const at::Tensor& t) { return at::log10(t); }, "torch.log10(x)"), f32_only);
  add_unary(catalog, unary("log1p", Arg::uniform("x", kShape, -0.9, 5),
                           [](const at::Tensor& t) { return at::log1p(t); }, "torch.log1p(x)"), floats);
  add_unary(catalog, unary("sqrt", Arg::uniform("x", kShape, 0.01, 10),
                           [](const at::Tensor& t) { return at::sqrt(t); }, "torch.sqrt(x)"), floats);
  add_unary(catalog, unary("rsqrt", Arg::uniform("x", kShape, 0.05, 10),
                           [](const at::Tensor& t) { return at::rsqrt(t); }, "torch.rsqrt(x)"), floats);
  add_unary(catalog, unary("reciprocal", Arg::uniform("x", kShape, 0.25, 4),
                           [](const at::Tensor& t) { return at::reciprocal(t); }, "torch.reciprocal(x)"), floats);
  add_unary(catalog, unary("square", x, [](const at::Tensor& t) { return at::square(t); }, "torch.square(x)"), ints);
  add_unary(catalog, unary("sin", Arg::uniform("x", kShape, -6, 6),
                           [](const at::Tensor& t) { return at::sin(t); }, "torch.sin(x)"), floats);
  add_unary(catalog, unary("cos", Arg::uniform("x", kShape, -6, 6),
                           [](const at::Tensor& t) { return at::cos(t); }, "torch.cos(x)"), floats);
  // Away from pi/2, where tan is ill-conditioned.
  add_unary(catalog, unary("tan", Arg::uniform("x", kShape, -1.2, 1.2),
                           [](const at::Tensor& t) { return at::tan(t); }, "torch.tan(x)"), f32_only);
  add_unary(catalog, unary("asin", Arg::uniform("x", kShape, -0.95, 0.95),
                           [](const at::Tensor& t) { return at::asin(t); }, "torch.asin(x)"), f32_only);
  add_unary(catalog, unary("acos", Arg::uniform("x", kShape, -0.95, 0.95),
                           [](const at::Tensor& t) { return at::acos(t); }, "torch.acos(x)"), f32_only);
  add_unary(catalog, unary("atan", Arg::uniform("x", kShape, -5, 5),
                           [](const at::Tensor& t) { return at::atan(t); }, "torch.atan(x)"), f32_only);
  add_unary(catalog, unary("sinh", Arg::uniform("x", kShape, -4, 4),
                           [](const at::Tensor& t) { return at::sinh(t); }, "torch.sinh(x)"), f32_only);
  add_unary(catalog, unary("cosh", Arg::uniform("x", kShape, -4, 4),
                           [](const at::Tensor& t) { return at::cosh(t); }, "torch.cosh(x)"), f32_only);
  add_unary(catalog, unary("asinh", x, [](const at::Tensor& t) { return at::asinh(t); }, "torch.asinh(x)"),
            f32_only);
  add_unary(catalog, unary("acosh", Arg::uniform("x", kShape, 1.1, 5),
                           [](const at::Tensor& t) { return at::acosh(t); }, "torch.acosh(x)"), f32_only);
  add_unary(catalog, unary("atanh", Arg::uniform("x", kShape, -0.9, 0.9),
                           [](const at::Tensor& t) { return at::atanh(t); }, "torch.atanh(x)"), f32_only);
  add_unary(catalog, unary("erf", x, [](const at::Tensor& t) { return at::erf(t); }, "torch.erf(x)"), floats);
  add_unary(catalog, unary("erfc", x, [](const at::Tensor& t) { return at::erfc(t); }, "torch.erfc(x)"), f32_only);
  add_unary(catalog, unary("erfinv", Arg::uniform("x", kShape, -0.9, 0.9),
                           [](const at::Tensor& t) { return at::erfinv(t); }, "torch.erfinv(x)"), f32_only);
  add_unary(catalog, unary("logit", Arg::uniform("x", kShape, 0.05, 0.95),
                           [](const at::Tensor& t) { return at::logit(t); }, "torch.logit(x)"), f32_only);

  // Sign and rounding: exact, gradient zero (or sign) as in torch.
  add_unary(catalog, exact(unary("abs", x, [](const at::Tensor& t) { return at::abs(t); }, "torch.abs(x)")), ints);
  add_unary(catalog, exact(unary("neg", x, [](const at::Tensor& t) { return at::neg(t); }, "torch.neg(x)")), ints);
  add_unary(catalog, exact(unary("sign", x, [](const at::Tensor& t) { return at::sign(t); }, "torch.sign(x)")),
            ints);
  const auto spread = Arg::uniform("x", kShape, -20, 20);
  add_unary(catalog, exact(unary("floor", spread, [](const at::Tensor& t) { return at::floor(t); },
                                 "torch.floor(x)")), f32_only);
  add_unary(catalog, exact(unary("ceil", spread, [](const at::Tensor& t) { return at::ceil(t); },
                                 "torch.ceil(x)")), f32_only);
  add_unary(catalog, exact(unary("round", spread, [](const at::Tensor& t) { return at::round(t); },
                                 "torch.round(x)")), f32_only);
  add_unary(catalog, exact(unary("round_decimals", spread,
                                 [](const at::Tensor& t) { return at::round(t, 2); },
                                 "torch.round(x, decimals=2)")), f32_only);
  add_unary(catalog, exact(unary("trunc", spread, [](const at::Tensor& t) { return at::trunc(t); },
                                 "torch.trunc(x)")), f32_only);
  add_unary(catalog, exact(unary("frac", spread, [](const at::Tensor& t) { return at::frac(t); },
                                 "torch.frac(x)")), f32_only);
  add_unary(catalog, exact(unary("clamp", x, [](const at::Tensor& t) { return at::clamp(t, -0.5, 0.5); },
                                 "torch.clamp(x, -0.5, 0.5)")), ints);
  add_unary(catalog, exact(unary("clamp_min", x, [](const at::Tensor& t) { return at::clamp_min(t, 0.25); },
                                 "torch.clamp_min(x, 0.25)")), f32_only);
  add_unary(catalog, no_grad(exact(unary("isfinite", x, [](const at::Tensor& t) { return at::isfinite(t); },
                                         "torch.isfinite(x)"))), floats);
}

MPSCHECK_CATALOG(activation_nn_cases) {
  const Coverage floats;
  const Coverage f32_only{false, {}};
  const auto x = Arg::randn("x", kShape);
  const auto wide = Arg::uniform("x", kShape, -6, 6);

  add_unary(catalog, unary("relu", x, [](const at::Tensor& t) { return at::relu(t); },
                           "torch.relu(x)"), Coverage{true, {c10::kLong}});
  add_unary(catalog, unary("relu6", Arg::uniform("x", kShape, -3, 9),
                           [](const at::Tensor& t) { return at::hardtanh(t, 0, 6); },
                           "torch.nn.functional.relu6(x)"), f32_only);
  add_unary(catalog, unary("hardtanh", wide, [](const at::Tensor& t) { return at::hardtanh(t, -1, 1); },
                           "torch.nn.functional.hardtanh(x, -1.0, 1.0)"), f32_only);
  add_unary(catalog, unary("tanh", wide, [](const at::Tensor& t) { return at::tanh(t); }, "torch.tanh(x)"), floats);
  add_unary(catalog, unary("sigmoid", wide, [](const at::Tensor& t) { return at::sigmoid(t); },
                           "torch.sigmoid(x)"), floats);
  add_unary(catalog, unary("logsigmoid", wide, [](const at::Tensor& t) { return at::log_sigmoid(t); },
                           "torch.nn.functional.logsigmoid(x)"), floats);
  add_unary(catalog, unary("gelu", x, [](const at::Tensor& t) { return at::gelu(t); },
                           "torch.nn.functional.gelu(x)"), floats);
  add_unary(catalog, unary("gelu_tanh", x, [](const at::Tensor& t) { return at::gelu(t, "tanh"); },
                           "torch.nn.functional.gelu(x, approximate='tanh')"), floats);
  add_unary(catalog, unary("silu", x, [](const at::Tensor& t) { return at::silu(t); },
                           "torch.nn.functional.silu(x)"), floats);
  add_unary(catalog, unary("mish", x, [](const at::Tensor& t) { return at::mish(t); },
                           "torch.nn.functional.mish(x)"), floats);
  add_unary(catalog, unary("elu", x, [](const at::Tensor& t) { return at::elu(t, 1.0); },
                           "torch.nn.functional.elu(x, 1.0)"), floats);
  add_unary(catalog, unary("selu", x, [](const at::Tensor& t) { return at::selu(t); },
                           "torch.selu(x)"), f32_only);
  add_unary(catalog, unary("celu", x, [](const at::Tensor& t) { return at::celu(t, 0.5); },
                           "torch.celu(x, 0.5)"), f32_only);
  add_unary(catalog, unary("leaky_relu", x, [](const at::Tensor& t) { return at::leaky_relu(t, 0.01); },
                           "torch.nn.functional.leaky_relu(x, 0.01)"), floats);
  add_unary(catalog, unary("hardswish", wide, [](const at::Tensor& t) { return at::hardswish(t); },
                           "torch.nn.functional.hardswish(x)"), floats);
  add_unary(catalog, unary("hardsigmoid", wide, [](const at::Tensor& t) { return at::hardsigmoid(t); },
                           "torch.nn.functional.hardsigmoid(x)"), floats);
  add_unary(catalog, unary("softplus", wide, [](const at::Tensor& t) { return at::softplus(t, 1, 20); },
                           "torch.nn.functional.softplus(x, 1.0, 20.0)"), floats);
  // beta * x crosses the threshold inside the range: both branches are exercised.
  add_unary(catalog, unary("softplus_beta", wide, [](const at::Tensor& t) { return at::softplus(t, 4, 10); },
                           "torch.nn.functional.softplus(x, 4.0, 10.0)"), f32_only);
  add_unary(catalog, unary("softsign", x, [](const at::Tensor& t) { return t / (t.abs() + 1); },
                           "torch.nn.functional.softsign(x)"), f32_only);
  add_unary(catalog, unary("tanhshrink", x, [](const at::Tensor& t) { return t - at::tanh(t); },
                           "torch.nn.functional.tanhshrink(x)"), f32_only);
  add_unary(catalog, unary("hardshrink", x, [](const at::Tensor& t) { return at::hardshrink(t, 0.5); },
                           "torch.nn.functional.hardshrink(x, 0.5)"), f32_only);
  add_unary(catalog, unary("softshrink", x, [](const at::Tensor& t) { return at::softshrink(t, 0.5); },
                           "torch.nn.functional.softshrink(x, 0.5)"), f32_only);
  add_unary(catalog, unary("threshold", x, [](const at::Tensor& t) { return at::threshold(t, 0.1, -2.0); },
                           "torch.nn.functional.threshold(x, 0.1, -2.0)"), f32_only);
  add_unary(catalog, unary("glu", x, [](const at::Tensor& t) { return at::glu(t, -1); },
                           "torch.nn.functional.glu(x, -1)"), floats);

  OpDef prelu;
  prelu.family = "activation";
  prelu.op = "prelu";
  prelu.args = {Arg::randn("x", {8, 16, 12, 12}), Arg::uniform("weight", {16}, 0.05, 0.5)};
  prelu.fn = [](const Tensors& a) { return Tensors{at::prelu(a[0], a[1])}; };
  prelu.python = "torch.nn.functional.prelu(x, weight)";
  add_op(catalog, prelu, {c10::kFloat}, {Variant::contiguous(), Variant::channels_last("x")});
  add_op(catalog, prelu, {c10::kBFloat16}, {Variant::contiguous()});
}

MPSCHECK_PLUGIN("ops-activation", "0.1.0")

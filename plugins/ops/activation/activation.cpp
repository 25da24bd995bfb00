// Elementwise unary math and activations: libm approximations, strided inputs and reduced
// precision are where backends differ.
#include <mpscheck/op.hpp>

using namespace mpscheck::op;

namespace {

const std::vector<int64_t> kShape = {64, 96};

using T = const at::Tensor&;

// float32 gets every strided layout; other dtypes the contiguous one and one strided one.
Family activation_family(mpscheck::Catalog& catalog) {
  return Family(catalog, "activation")
      .dtypes(dtypes::floats)
      .variants(layouts::strided, {Variant::contiguous(), Variant::sliced()});
}

}  // namespace

// clang-format off
MPSCHECK_CATALOG(activation_math_cases) {
  const Family activation = activation_family(catalog);
  const auto x = Arg::randn("x", kShape);
  const auto in = [](double lo, double hi) { return Arg::uniform("x", kShape, lo, hi); };

  activation.op("exp", {x}, [](T t) { return at::exp(t); }, "torch.exp(x)").add();
  activation.op("exp2", {x}, [](T t) { return at::exp2(t); }, "torch.exp2(x)").add(dtypes::f32);
  activation.op("expm1", {x}, [](T t) { return at::expm1(t); }, "torch.expm1(x)").add();
  activation.op("log", {in(0.05, 10)}, [](T t) { return at::log(t); }, "torch.log(x)").add();
  activation.op("log2", {in(0.05, 10)}, [](T t) { return at::log2(t); }, "torch.log2(x)").add(dtypes::f32);
  activation.op("log10", {in(0.05, 10)}, [](T t) { return at::log10(t); }, "torch.log10(x)").add(dtypes::f32);
  activation.op("log1p", {in(-0.9, 5)}, [](T t) { return at::log1p(t); }, "torch.log1p(x)").add();
  activation.op("sqrt", {in(0.01, 10)}, [](T t) { return at::sqrt(t); }, "torch.sqrt(x)").add();
  activation.op("rsqrt", {in(0.05, 10)}, [](T t) { return at::rsqrt(t); }, "torch.rsqrt(x)").add();
  activation.op("reciprocal", {in(0.25, 4)}, [](T t) { return at::reciprocal(t); }, "torch.reciprocal(x)").add();
  activation.op("square", {x}, [](T t) { return at::square(t); }, "torch.square(x)").add(dtypes::all);
  activation.op("sin", {in(-6, 6)}, [](T t) { return at::sin(t); }, "torch.sin(x)").add();
  activation.op("cos", {in(-6, 6)}, [](T t) { return at::cos(t); }, "torch.cos(x)").add();
  // Away from pi/2, where tan is ill-conditioned.
  activation.op("tan", {in(-1.2, 1.2)}, [](T t) { return at::tan(t); }, "torch.tan(x)").add(dtypes::f32);
  activation.op("asin", {in(-0.95, 0.95)}, [](T t) { return at::asin(t); }, "torch.asin(x)").add(dtypes::f32);
  activation.op("acos", {in(-0.95, 0.95)}, [](T t) { return at::acos(t); }, "torch.acos(x)").add(dtypes::f32);
  activation.op("atan", {in(-5, 5)}, [](T t) { return at::atan(t); }, "torch.atan(x)").add(dtypes::f32);
  activation.op("sinh", {in(-4, 4)}, [](T t) { return at::sinh(t); }, "torch.sinh(x)").add(dtypes::f32);
  activation.op("cosh", {in(-4, 4)}, [](T t) { return at::cosh(t); }, "torch.cosh(x)").add(dtypes::f32);
  activation.op("asinh", {x}, [](T t) { return at::asinh(t); }, "torch.asinh(x)").add(dtypes::f32);
  activation.op("acosh", {in(1.1, 5)}, [](T t) { return at::acosh(t); }, "torch.acosh(x)").add(dtypes::f32);
  activation.op("atanh", {in(-0.9, 0.9)}, [](T t) { return at::atanh(t); }, "torch.atanh(x)").add(dtypes::f32);
  activation.op("erf", {x}, [](T t) { return at::erf(t); }, "torch.erf(x)").add();
  activation.op("erfc", {x}, [](T t) { return at::erfc(t); }, "torch.erfc(x)").add(dtypes::f32);
  activation.op("erfinv", {in(-0.9, 0.9)}, [](T t) { return at::erfinv(t); }, "torch.erfinv(x)").add(dtypes::f32);
  activation.op("logit", {in(0.05, 0.95)}, [](T t) { return at::logit(t); }, "torch.logit(x)").add(dtypes::f32);

  // Sign and rounding: exact, gradient zero (or sign) as in torch.
  Family exact = activation;
  exact.tolerance("elementwise");
  exact.op("abs", {x}, [](T t) { return at::abs(t); }, "torch.abs(x)").add(dtypes::all);
  exact.op("neg", {x}, [](T t) { return at::neg(t); }, "torch.neg(x)").add(dtypes::all);
  exact.op("sign", {x}, [](T t) { return at::sign(t); }, "torch.sign(x)").add(dtypes::all);
  const auto spread = in(-20, 20);
  exact.op("floor", {spread}, [](T t) { return at::floor(t); }, "torch.floor(x)").add(dtypes::f32);
  exact.op("ceil", {spread}, [](T t) { return at::ceil(t); }, "torch.ceil(x)").add(dtypes::f32);
  exact.op("round", {spread}, [](T t) { return at::round(t); }, "torch.round(x)").add(dtypes::f32);
  exact.op("round_decimals", {spread}, [](T t) { return at::round(t, 2); }, "torch.round(x, decimals=2)")
      .add(dtypes::f32);
  exact.op("trunc", {spread}, [](T t) { return at::trunc(t); }, "torch.trunc(x)").add(dtypes::f32);
  exact.op("frac", {spread}, [](T t) { return at::frac(t); }, "torch.frac(x)").add(dtypes::f32);
  exact.op("clamp", {x}, [](T t) { return at::clamp(t, -0.5, 0.5); }, "torch.clamp(x, -0.5, 0.5)").add(dtypes::all);
  exact.op("clamp_min", {x}, [](T t) { return at::clamp_min(t, 0.25); }, "torch.clamp_min(x, 0.25)").add(dtypes::f32);
  exact.op("isfinite", {x}, [](T t) { return at::isfinite(t); }, "torch.isfinite(x)").no_grad().add();
}
// clang-format on

// clang-format off
MPSCHECK_CATALOG(activation_nn_cases) {
  const Family activation = activation_family(catalog);
  const auto x = Arg::randn("x", kShape);
  const auto wide = Arg::uniform("x", kShape, -6, 6);

  activation.op("relu", {x}, [](T t) { return at::relu(t); }, "torch.relu(x)")
      .add({c10::kFloat, c10::kHalf, c10::kBFloat16, c10::kLong});
  activation.op("relu6", {Arg::uniform("x", kShape, -3, 9)}, [](T t) { return at::hardtanh(t, 0, 6); },
                "torch.nn.functional.relu6(x)").add(dtypes::f32);
  activation.op("hardtanh", {wide}, [](T t) { return at::hardtanh(t, -1, 1); },
                "torch.nn.functional.hardtanh(x, -1.0, 1.0)").add(dtypes::f32);
  activation.op("tanh", {wide}, [](T t) { return at::tanh(t); }, "torch.tanh(x)").add();
  activation.op("sigmoid", {wide}, [](T t) { return at::sigmoid(t); }, "torch.sigmoid(x)").add();
  activation.op("logsigmoid", {wide}, [](T t) { return at::log_sigmoid(t); }, "torch.nn.functional.logsigmoid(x)")
      .add();
  activation.op("gelu", {x}, [](T t) { return at::gelu(t); }, "torch.nn.functional.gelu(x)").add();
  activation.op("gelu_tanh", {x}, [](T t) { return at::gelu(t, "tanh"); },
                "torch.nn.functional.gelu(x, approximate='tanh')").add();
  activation.op("silu", {x}, [](T t) { return at::silu(t); }, "torch.nn.functional.silu(x)").add();
  activation.op("mish", {x}, [](T t) { return at::mish(t); }, "torch.nn.functional.mish(x)").add();
  activation.op("elu", {x}, [](T t) { return at::elu(t, 1.0); }, "torch.nn.functional.elu(x, 1.0)").add();
  activation.op("selu", {x}, [](T t) { return at::selu(t); }, "torch.selu(x)").add(dtypes::f32);
  activation.op("celu", {x}, [](T t) { return at::celu(t, 0.5); }, "torch.celu(x, 0.5)").add(dtypes::f32);
  activation.op("leaky_relu", {x}, [](T t) { return at::leaky_relu(t, 0.01); },
                "torch.nn.functional.leaky_relu(x, 0.01)").add();
  activation.op("hardswish", {wide}, [](T t) { return at::hardswish(t); }, "torch.nn.functional.hardswish(x)").add();
  activation.op("hardsigmoid", {wide}, [](T t) { return at::hardsigmoid(t); },
                "torch.nn.functional.hardsigmoid(x)").add();
  activation.op("softplus", {wide}, [](T t) { return at::softplus(t, 1, 20); },
                "torch.nn.functional.softplus(x, 1.0, 20.0)").add();
  // beta * x crosses the threshold inside the range: both branches are exercised.
  activation.op("softplus_beta", {wide}, [](T t) { return at::softplus(t, 4, 10); },
                "torch.nn.functional.softplus(x, 4.0, 10.0)").add(dtypes::f32);
  activation.op("softsign", {x}, [](T t) { return t / (t.abs() + 1); }, "torch.nn.functional.softsign(x)")
      .add(dtypes::f32);
  activation.op("tanhshrink", {x}, [](T t) { return t - at::tanh(t); }, "torch.nn.functional.tanhshrink(x)")
      .add(dtypes::f32);
  activation.op("hardshrink", {x}, [](T t) { return at::hardshrink(t, 0.5); },
                "torch.nn.functional.hardshrink(x, 0.5)").add(dtypes::f32);
  activation.op("softshrink", {x}, [](T t) { return at::softshrink(t, 0.5); },
                "torch.nn.functional.softshrink(x, 0.5)").add(dtypes::f32);
  activation.op("threshold", {x}, [](T t) { return at::threshold(t, 0.1, -2.0); },
                "torch.nn.functional.threshold(x, 0.1, -2.0)").add(dtypes::f32);
  activation.op("glu", {x}, [](T t) { return at::glu(t, -1); }, "torch.nn.functional.glu(x, -1)").add();

  activation.op("prelu", {Arg::randn("x", {8, 16, 12, 12}), Arg::uniform("weight", {16}, 0.05, 0.5)},
                [](const Tensors& a) { return at::prelu(a[0], a[1]); }, "torch.nn.functional.prelu(x, weight)")
      .add(Coverage(dtypes::f32_bf16, {Variant::contiguous(), Variant::channels_last("x")}, {Variant::contiguous()}));
}
// clang-format on

MPSCHECK_PLUGIN("ops-activation", "0.1.0")

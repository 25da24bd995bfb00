// Binary elementwise ops and comparisons: broadcasting (expanded) operands, strided operands,
// integer and bool paths are where accelerator backends go wrong.
#include <mpscheck/op.hpp>

#include <cmath>
#include <functional>
#include <string>

using namespace mpscheck::op;

namespace {

const std::vector<int64_t> kShape = {48, 64};

// Integer-valued floats inside the arg's range: comparisons then meet equal elements in every dtype.
Arg exact_grid(const Arg& x) {
  if (x.dtype != c10::ScalarType::Undefined || x.fill == Fill::Integers) return x;
  int64_t lo = -3, hi = 4;
  if (x.fill == Fill::Uniform) {
    lo = static_cast<int64_t>(std::ceil(x.lo));
    hi = static_cast<int64_t>(std::floor(x.hi)) + 1;
  }
  Arg g = Arg::integers(x.name, x.shape, lo, hi, c10::ScalarType::Undefined);
  g.grad = x.grad;
  g.layout = x.layout;
  return g;
}

// A binary op that is the torch function of its name: at::<name>(a, b), torch.<name>(a, b) in Python.
struct TorchBinary {
  using Fn = at::Tensor (*)(const at::Tensor&, const at::Tensor&);
  const char* name;
  Fn at_fn;

  std::function<at::Tensor(const Tensors&)> fn() const {
    return [f = at_fn](const Tensors& a) { return f(a[0], a[1]); };
  }
  std::string python() const { return std::string("torch.") + name + "(a, b)"; }
};

// float32: contiguous, transposed a, sliced b, broadcast b; other dtypes: contiguous and broadcast
// b. Ops without a b get sliced a in place of b's layouts.
Family binary_family(mpscheck::Catalog& catalog) {
  Family f(catalog, "binary");
  f.tolerance("elementwise")
      .dtypes(dtypes::floats)
      .variants({Variant::contiguous(), Variant::transposed("a"), Variant::sliced("b"), Variant::expanded("b")},
                {Variant::contiguous(), Variant::expanded("b")});
  return f;
}
Family one_operand_family(mpscheck::Catalog& catalog) {
  Family f = binary_family(catalog);
  f.variants({Variant::contiguous(), Variant::transposed("a"), Variant::sliced("a")},
             {Variant::contiguous(), Variant::sliced("a")});
  return f;
}

const DTypes kFloatsAndInt64 = {c10::kFloat, c10::kHalf, c10::kBFloat16, c10::kLong};

Arg a_arg() { return Arg::randn("a", kShape); }
Arg b_arg() { return Arg::randn("b", kShape); }
// Divisors kept away from zero; as integers 1..3.
Arg divisor() { return Arg::uniform("b", kShape, 1, 4); }
Arg grid(const std::string& name) { return exact_grid(Arg::randn(name, kShape)); }

}  // namespace

// clang-format off
MPSCHECK_CATALOG(binary_arith_cases) {
  const Family binary = binary_family(catalog), one_operand = one_operand_family(catalog);
  using A = const Tensors&;

  binary.op("add", {a_arg(), b_arg()}, [](A a) { return at::add(a[0], a[1]); }, "torch.add(a, b)").add(dtypes::all);
  binary.op("add_alpha", {a_arg(), b_arg()}, [](A a) { return at::add(a[0], a[1], 0.5); },
            "torch.add(a, b, alpha=0.5)").add();
  binary.op("add_alpha_int", {a_arg(), b_arg()}, [](A a) { return at::add(a[0], a[1], 3); },
            "torch.add(a, b, alpha=3)").add(dtypes::ints);
  binary.op("sub", {a_arg(), b_arg()}, [](A a) { return at::sub(a[0], a[1]); }, "torch.sub(a, b)").add(dtypes::all);
  binary.op("mul", {a_arg(), b_arg()}, [](A a) { return at::mul(a[0], a[1]); }, "torch.mul(a, b)").add(dtypes::all);
  one_operand.op("mul_scalar", {a_arg()}, [](A a) { return at::mul(a[0], 1.75); }, "torch.mul(a, 1.75)").add();
  binary.op("div", {a_arg(), divisor()}, [](A a) { return at::div(a[0], a[1]); }, "torch.div(a, b)").add(dtypes::all);
  const auto wide = Arg::uniform("a", kShape, -20, 20);
  binary.op("div_trunc", {wide, divisor()}, [](A a) { return at::div(a[0], a[1], "trunc"); },
            "torch.div(a, b, rounding_mode='trunc')").add(dtypes::all);
  binary.op("div_floor", {wide, divisor()}, [](A a) { return at::div(a[0], a[1], "floor"); },
            "torch.div(a, b, rounding_mode='floor')").add(dtypes::all);
  binary.op("floor_divide", {wide, divisor()}, [](A a) { return at::floor_divide(a[0], a[1]); },
            "torch.floor_divide(a, b)").no_grad().add(dtypes::f32_ints);
  binary.op("fmod", {wide, divisor()}, [](A a) { return at::fmod(a[0], a[1]); }, "torch.fmod(a, b)").add(dtypes::all);
  binary.op("remainder", {wide, divisor()}, [](A a) { return at::remainder(a[0], a[1]); }, "torch.remainder(a, b)")
      .add(dtypes::all);
  binary.op("pow", {Arg::uniform("a", kShape, 0.5, 3), Arg::uniform("b", kShape, -2, 2)},
            [](A a) { return at::pow(a[0], a[1]); }, "torch.pow(a, b)").tolerance("activation").add();
  one_operand.op("pow_scalar", {Arg::uniform("a", kShape, 0.5, 3)}, [](A a) { return at::pow(a[0], 2.5); },
                 "torch.pow(a, 2.5)").tolerance("activation").add();
  one_operand.op("pow_square", {a_arg()}, [](A a) { return at::pow(a[0], 2); }, "torch.pow(a, 2)").add(dtypes::all);
  binary.op("pow_int", {Arg::uniform("a", kShape, -3, 4), Arg::uniform("b", kShape, 0, 4)},
            [](A a) { return at::pow(a[0], a[1]); }, "torch.pow(a, b)").add(dtypes::ints);
  binary.op("atan2", {a_arg(), b_arg()}, [](A a) { return at::atan2(a[0], a[1]); }, "torch.atan2(a, b)")
      .tolerance("activation").add(dtypes::f32);
  binary.op("hypot", {a_arg(), b_arg()}, [](A a) { return at::hypot(a[0], a[1]); }, "torch.hypot(a, b)")
      .tolerance("activation").add(dtypes::f32);
  binary.op("logaddexp", {a_arg(), b_arg()}, [](A a) { return at::logaddexp(a[0], a[1]); }, "torch.logaddexp(a, b)")
      .tolerance("activation").add(dtypes::f32);
  binary.op("xlogy", {a_arg(), Arg::uniform("b", kShape, 0.1, 4)}, [](A a) { return at::xlogy(a[0], a[1]); },
            "torch.xlogy(a, b)").tolerance("activation").add(dtypes::f32);
  binary.op("copysign", {a_arg(), b_arg()}, [](A a) { return at::copysign(a[0], a[1]); }, "torch.copysign(a, b)")
      .add(dtypes::f32);
  binary.op("maximum", {a_arg(), b_arg()}, [](A a) { return at::maximum(a[0], a[1]); }, "torch.maximum(a, b)")
      .add(dtypes::all);
  binary.op("minimum", {a_arg(), b_arg()}, [](A a) { return at::minimum(a[0], a[1]); }, "torch.minimum(a, b)")
      .add(dtypes::all);
  binary.op("lerp", {a_arg(), b_arg()}, [](A a) { return at::lerp(a[0], a[1], 0.3); }, "torch.lerp(a, b, 0.3)").add();
  binary.op("lerp_tensor", {a_arg(), b_arg(), Arg::uniform("weight", kShape, 0, 1)},
            [](A a) { return at::lerp(a[0], a[1], a[2]); }, "torch.lerp(a, b, weight)").add(dtypes::f32);
  binary.op("addcmul", {Arg::randn("s", kShape), a_arg(), b_arg()},
            [](A a) { return at::addcmul(a[0], a[1], a[2], 0.5); }, "torch.addcmul(s, a, b, value=0.5)").add();
  binary.op("addcdiv", {Arg::randn("s", kShape), a_arg(), divisor()},
            [](A a) { return at::addcdiv(a[0], a[1], a[2], 0.5); }, "torch.addcdiv(s, a, b, value=0.5)").add();
  binary.op("clamp_tensor", {a_arg(), Arg::uniform("b", kShape, -1, 0), Arg::uniform("hi", kShape, 0, 1)},
            [](A a) { return at::clamp(a[0], a[1], a[2]); }, "torch.clamp(a, b, hi)").add(dtypes::f32);
  binary.op("where", {Arg::mask("cond", kShape), a_arg(), b_arg()}, [](A a) { return at::where(a[0], a[1], a[2]); },
            "torch.where(cond, a, b)").add(dtypes::all);
  binary.op("masked_fill", {a_arg(), Arg::mask("b", kShape)}, [](A a) { return at::masked_fill(a[0], a[1], -1e4); },
            "a.masked_fill(b, -1e4)").add(kFloatsAndInt64);
}
// clang-format on

// clang-format off
MPSCHECK_CATALOG(binary_compare_cases) {
  // Integer-valued operands so that equal elements exist in every dtype.
  const Family binary = binary_family(catalog).no_grad(), one_operand = one_operand_family(catalog).no_grad();
  for (const TorchBinary& op : {TorchBinary{"eq", at::eq}, {"ne", at::ne}, {"lt", at::lt}, {"le", at::le},
                                {"gt", at::gt}, {"ge", at::ge}})
    binary.op(op.name, {grid("a"), grid("b")}, op.fn(), op.python()).add(dtypes::all);
  one_operand.op("eq_scalar", {grid("a")}, [](const Tensors& a) { return at::eq(a[0], 1); }, "torch.eq(a, 1)")
      .add(dtypes::all);
  // On the integer grid |a - b| is a whole k and the bound 0.6 + 0.25 |b| is never within 0.1 of
  // one: equal elements are close, neighbours are close only where |b| >= 2, and no rounding of any
  // dtype moves an element across the bound. (An operand computed on the device, a + b * 1e-6, put
  // elements within a float32 unit of it, so that honest rounding, and bfloat16 always, flipped them.)
  binary.op("isclose", {grid("a"), grid("b")}, [](const Tensors& a) { return at::isclose(a[0], a[1], 0.25, 0.6); },
            "torch.isclose(a, b, 0.25, 0.6)").add(dtypes::f32);

  // Logical ops take any dtype (nonzero = true); bitwise ops integers and bool.
  for (const TorchBinary& op :
       {TorchBinary{"logical_and", at::logical_and}, {"logical_or", at::logical_or}, {"logical_xor", at::logical_xor}}) {
    const Case on_bool = binary.op(op.name, {Arg::mask("a", kShape), Arg::mask("b", kShape)}, op.fn(), op.python());
    on_bool.add({c10::kBool}, {Variant::contiguous(), Variant::transposed("a"), Variant::sliced("b"), Variant::expanded("b")});
    on_bool.args({grid("a"), grid("b")}).add({c10::kFloat, c10::kLong}, {Variant::contiguous(), Variant::expanded("b")});
  }
  binary.op("logical_not", {Arg::mask("a", kShape)}, [](const at::Tensor& a) { return at::logical_not(a); },
            "torch.logical_not(a)").add({c10::kBool}, {Variant::contiguous(), Variant::transposed("a")});

  for (const TorchBinary& op :
       {TorchBinary{"bitwise_and", at::bitwise_and}, {"bitwise_or", at::bitwise_or}, {"bitwise_xor", at::bitwise_xor}}) {
    const Case c = binary.op(op.name, {Arg::randn("a", kShape), Arg::randn("b", kShape)}, op.fn(), op.python());
    c.add({c10::kLong, c10::kInt, c10::kChar}, {Variant::contiguous(), Variant::transposed("a"), Variant::expanded("b")});
    c.args({Arg::mask("a", kShape), Arg::mask("b", kShape)}).add({c10::kBool}, {Variant::contiguous(), Variant::sliced("b")});
  }
  binary.op("bitwise_not", {Arg::randn("a", kShape)}, [](const at::Tensor& a) { return at::bitwise_not(a); },
            "torch.bitwise_not(a)").add(dtypes::ints, {Variant::contiguous(), Variant::transposed("a")});
  binary.op("bitwise_shift_left", {Arg::uniform("a", kShape, 0, 64), Arg::uniform("b", kShape, 0, 8)},
            [](const Tensors& a) { return at::bitwise_left_shift(a[0], a[1]); }, "torch.bitwise_left_shift(a, b)")
      .add(dtypes::ints, {Variant::contiguous(), Variant::expanded("b")});
}
// clang-format on

MPSCHECK_PLUGIN("ops-binary", "0.1.0")

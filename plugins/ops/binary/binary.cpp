// Binary elementwise ops and comparisons: broadcasting (expanded) operands, strided operands,
// integer and bool paths are where accelerator backends go wrong.
#include <mpscheck/op.hpp>

#include <cmath>
#include <tuple>

using namespace mpscheck::op;

namespace {

const std::vector<int64_t> kShape = {48, 64};
const std::vector<c10::ScalarType> kInts = {c10::kLong, c10::kInt};

struct Coverage {
  bool reduced = true;                    // also float16 and bfloat16
  std::vector<c10::ScalarType> integers;  // integer dtypes the op takes
  bool floats = true;                     // float32 at all (false: integer/bool-only ops)
};

OpDef make(std::string op, std::vector<Arg> args, OpFn fn, std::string python,
           std::string tolerance = "elementwise") {
  OpDef d;
  d.family = "binary";
  d.op = std::move(op);
  d.args = std::move(args);
  d.fn = std::move(fn);
  d.python = std::move(python);
  d.tolerance = std::move(tolerance);
  return d;
}

OpDef no_grad(OpDef d) {
  d.differentiable = false;
  return d;
}

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

bool has_arg(const OpDef& d, const std::string& name) {
  for (const auto& a : d.args)
    if (a.name == name) return true;
  return false;
}

// float32: contiguous, transposed a, sliced b, broadcast b; other dtypes: contiguous and broadcast b.
void add_binary(mpscheck::Catalog& catalog, const OpDef& def, const Coverage& cov = {}) {
  std::vector<Variant> all = {Variant::contiguous(), Variant::transposed("a")};
  std::vector<Variant> two = {Variant::contiguous()};
  if (has_arg(def, "b")) {
    all.push_back(Variant::sliced("b"));
    all.push_back(Variant::expanded("b"));
    two.push_back(Variant::expanded("b"));
  } else {
    all.push_back(Variant::sliced("a"));
    two.push_back(Variant::sliced("a"));
  }
  if (cov.floats) add_op(catalog, def, {c10::kFloat}, all);
  if (cov.reduced) add_op(catalog, def, {c10::kHalf, c10::kBFloat16}, two);
  if (!cov.integers.empty()) add_op(catalog, def, cov.integers, two);
}

Arg a_arg() { return Arg::randn("a", kShape); }
Arg b_arg() { return Arg::randn("b", kShape); }
// Divisors kept away from zero; as integers 1..3.
Arg divisor() { return Arg::uniform("b", kShape, 1, 4); }
Arg grid(const std::string& name) { return exact_grid(Arg::randn(name, kShape)); }

}  // namespace

MPSCHECK_CATALOG(binary_arith_cases) {
  const Coverage ints{true, kInts};
  const Coverage f32_only{false, {}};
  const Coverage f32_ints{false, kInts};
  const auto t = [](std::function<at::Tensor(const Tensors&)> f) {
    return [f = std::move(f)](const Tensors& a) { return Tensors{f(a)}; };
  };

  add_binary(catalog, make("add", {a_arg(), b_arg()}, t([](const Tensors& a) { return at::add(a[0], a[1]); }),
                           "torch.add(a, b)"), ints);
  add_binary(catalog, make("add_alpha", {a_arg(), b_arg()},
                           t([](const Tensors& a) { return at::add(a[0], a[1], 0.5); }),
                           "torch.add(a, b, alpha=0.5)"), Coverage{true, {}});
  add_binary(catalog, make("add_alpha_int", {a_arg(), b_arg()},
                           t([](const Tensors& a) { return at::add(a[0], a[1], 3); }),
                           "torch.add(a, b, alpha=3)"), Coverage{false, kInts, false});
  add_binary(catalog, make("sub", {a_arg(), b_arg()}, t([](const Tensors& a) { return at::sub(a[0], a[1]); }),
                           "torch.sub(a, b)"), ints);
  add_binary(catalog, make("mul", {a_arg(), b_arg()}, t([](const Tensors& a) { return at::mul(a[0], a[1]); }),
                           "torch.mul(a, b)"), ints);
  add_binary(catalog, make("mul_scalar", {a_arg()}, t([](const Tensors& a) { return at::mul(a[0], 1.75); }),
                           "torch.mul(a, 1.75)"), Coverage{true, {}});
  add_binary(catalog, make("div", {a_arg(), divisor()}, t([](const Tensors& a) { return at::div(a[0], a[1]); }),
                           "torch.div(a, b)"), ints);
  const auto wide = Arg::uniform("a", kShape, -20, 20);
  add_binary(catalog, make("div_trunc", {wide, divisor()},
                           t([](const Tensors& a) { return at::div(a[0], a[1], "trunc"); }),
                           "torch.div(a, b, rounding_mode='trunc')"), ints);
  add_binary(catalog, make("div_floor", {wide, divisor()},
                           t([](const Tensors& a) { return at::div(a[0], a[1], "floor"); }),
                           "torch.div(a, b, rounding_mode='floor')"), ints);
  add_binary(catalog, no_grad(make("floor_divide", {wide, divisor()},
                                   t([](const Tensors& a) { return at::floor_divide(a[0], a[1]); }),
                                   "torch.floor_divide(a, b)")), f32_ints);
  add_binary(catalog, make("fmod", {wide, divisor()}, t([](const Tensors& a) { return at::fmod(a[0], a[1]); }),
                           "torch.fmod(a, b)"), ints);
  add_binary(catalog, make("remainder", {wide, divisor()},
                           t([](const Tensors& a) { return at::remainder(a[0], a[1]); }),
                           "torch.remainder(a, b)"), ints);
  add_binary(catalog, make("pow", {Arg::uniform("a", kShape, 0.5, 3), Arg::uniform("b", kShape, -2, 2)},
                           t([](const Tensors& a) { return at::pow(a[0], a[1]); }), "torch.pow(a, b)",
                           "activation"));
  add_binary(catalog, make("pow_scalar", {Arg::uniform("a", kShape, 0.5, 3)},
                           t([](const Tensors& a) { return at::pow(a[0], 2.5); }), "torch.pow(a, 2.5)",
                           "activation"));
  add_binary(catalog, make("pow_square", {a_arg()}, t([](const Tensors& a) { return at::pow(a[0], 2); }),
                           "torch.pow(a, 2)"), ints);
  add_binary(catalog, make("pow_int", {Arg::uniform("a", kShape, -3, 4), Arg::uniform("b", kShape, 0, 4)},
                           t([](const Tensors& a) { return at::pow(a[0], a[1]); }), "torch.pow(a, b)"),
             Coverage{false, kInts, false});
  add_binary(catalog, make("atan2", {a_arg(), b_arg()}, t([](const Tensors& a) { return at::atan2(a[0], a[1]); }),
                           "torch.atan2(a, b)", "activation"), f32_only);
  add_binary(catalog, make("hypot", {a_arg(), b_arg()}, t([](const Tensors& a) { return at::hypot(a[0], a[1]); }),
                           "torch.hypot(a, b)", "activation"), f32_only);
  add_binary(catalog, make("logaddexp", {a_arg(), b_arg()},
                           t([](const Tensors& a) { return at::logaddexp(a[0], a[1]); }),
                           "torch.logaddexp(a, b)", "activation"), f32_only);
  add_binary(catalog, make("xlogy", {a_arg(), Arg::uniform("b", kShape, 0.1, 4)},
                           t([](const Tensors& a) { return at::xlogy(a[0], a[1]); }), "torch.xlogy(a, b)",
                           "activation"), f32_only);
  add_binary(catalog, make("copysign", {a_arg(), b_arg()},
                           t([](const Tensors& a) { return at::copysign(a[0], a[1]); }), "torch.copysign(a, b)"),
             f32_only);
  add_binary(catalog, make("maximum", {a_arg(), b_arg()},
                           t([](const Tensors& a) { return at::maximum(a[0], a[1]); }), "torch.maximum(a, b)"),
             ints);
  add_binary(catalog, make("minimum", {a_arg(), b_arg()},
                           t([](const Tensors& a) { return at::minimum(a[0], a[1]); }), "torch.minimum(a, b)"),
             ints);
  add_binary(catalog, make("lerp", {a_arg(), b_arg()}, t([](const Tensors& a) { return at::lerp(a[0], a[1], 0.3); }),
                           "torch.lerp(a, b, 0.3)"));
  add_binary(catalog, make("lerp_tensor", {a_arg(), b_arg(), Arg::uniform("weight", kShape, 0, 1)},
                           t([](const Tensors& a) { return at::lerp(a[0], a[1], a[2]); }),
                           "torch.lerp(a, b, weight)"), f32_only);
  add_binary(catalog, make("addcmul", {Arg::randn("s", kShape), a_arg(), b_arg()},
                           t([](const Tensors& a) { return at::addcmul(a[0], a[1], a[2], 0.5); }),
                           "torch.addcmul(s, a, b, value=0.5)"));
  add_binary(catalog, make("addcdiv", {Arg::randn("s", kShape), a_arg(), divisor()},
                           t([](const Tensors& a) { return at::addcdiv(a[0], a[1], a[2], 0.5); }),
                           "torch.addcdiv(s, a, b, value=0.5)"));
  add_binary(catalog, make("clamp_tensor", {a_arg(), Arg::uniform("b", kShape, -1, 0), Arg::uniform("hi", kShape, 0, 1)},
                           t([](const Tensors& a) { return at::clamp(a[0], a[1], a[2]); }),
                           "torch.clamp(a, b, hi)"), f32_only);
  add_binary(catalog, make("where", {Arg::mask("cond", kShape), a_arg(), b_arg()},
                           t([](const Tensors& a) { return at::where(a[0], a[1], a[2]); }),
                           "torch.where(cond, a, b)"), ints);
  add_binary(catalog, make("masked_fill", {a_arg(), Arg::mask("b", kShape)},
                           t([](const Tensors& a) { return at::masked_fill(a[0], a[1], -1e4); }),
                           "a.masked_fill(b, -1e4)"), Coverage{true, {c10::kLong}});
}

MPSCHECK_CATALOG(binary_compare_cases) {
  // Integer-valued operands so that equal elements exist in every dtype.
  const Coverage ints{true, kInts};
  using Cmp = at::Tensor (*)(const at::Tensor&, const at::Tensor&);
  const std::vector<std::tuple<std::string, Cmp, std::string>> comparisons = {
      {"eq", [](const at::Tensor& x, const at::Tensor& y) { return at::eq(x, y); }, "torch.eq(a, b)"},
      {"ne", [](const at::Tensor& x, const at::Tensor& y) { return at::ne(x, y); }, "torch.ne(a, b)"},
      {"lt", [](const at::Tensor& x, const at::Tensor& y) { return at::lt(x, y); }, "torch.lt(a, b)"},
      {"le", [](const at::Tensor& x, const at::Tensor& y) { return at::le(x, y); }, "torch.le(a, b)"},
      {"gt", [](const at::Tensor& x, const at::Tensor& y) { return at::gt(x, y); }, "torch.gt(a, b)"},
      {"ge", [](const at::Tensor& x, const at::Tensor& y) { return at::ge(x, y); }, "torch.ge(a, b)"},
  };
  for (const auto& [name, cmp, python] : comparisons) {
    add_binary(catalog, no_grad(make(name, {grid("a"), grid("b")},
                                     [cmp = cmp](const Tensors& a) { return Tensors{cmp(a[0], a[1])}; }, python)),
               ints);
  }
  add_binary(catalog, no_grad(make("eq_scalar", {grid("a")},
                                   [](const Tensors& a) { return Tensors{at::eq(a[0], 1)}; }, "torch.eq(a, 1)")),
             ints);
  add_binary(catalog, no_grad(make("isclose", {a_arg(), b_arg()},
                                   [](const Tensors& a) {
                                     return Tensors{at::isclose(a[0], a[0] + a[1] * 1e-6, 1e-5, 1e-8)};
                                   },
                                   "torch.isclose(a, a + b * 1e-6, 1e-5, 1e-8)")),
             Coverage{false, {}});

  // Logical ops take any dtype (nonzero = true); bitwise ops integers and bool.
  using Bin = at::Tensor (*)(const at::Tensor&, const at::Tensor&);
  const std::vector<std::tuple<std::string, Bin, std::string>> logical = {
      {"logical_and", [](const at::Tensor& x, const at::Tensor& y) { return at::logical_and(x, y); },
       "torch.logical_and(a, b)"},
      {"logical_or", [](const at::Tensor& x, const at::Tensor& y) { return at::logical_or(x, y); },
       "torch.logical_or(a, b)"},
      {"logical_xor", [](const at::Tensor& x, const at::Tensor& y) { return at::logical_xor(x, y); },
       "torch.logical_xor(a, b)"},
  };
  for (const auto& [name, fn, python] : logical) {
    OpDef on_bool = no_grad(make(name, {Arg::mask("a", kShape), Arg::mask("b", kShape)},
                                 [fn = fn](const Tensors& a) { return Tensors{fn(a[0], a[1])}; }, python));
    add_op(catalog, on_bool, {c10::kBool},
           {Variant::contiguous(), Variant::transposed("a"), Variant::sliced("b"), Variant::expanded("b")});
    OpDef on_numbers = on_bool;
    on_numbers.args = {grid("a"), grid("b")};
    add_op(catalog, on_numbers, {c10::kFloat, c10::kLong}, {Variant::contiguous(), Variant::expanded("b")});
  }
  add_op(catalog, no_grad(make("logical_not", {Arg::mask("a", kShape)},
                               [](const Tensors& a) { return Tensors{at::logical_not(a[0])}; },
                               "torch.logical_not(a)")),
         {c10::kBool}, {Variant::contiguous(), Variant::transposed("a")});

  const std::vector<std::tuple<std::string, Bin, std::string>> bitwise = {
      {"bitwise_and", [](const at::Tensor& x, const at::Tensor& y) { return at::bitwise_and(x, y); },
       "torch.bitwise_and(a, b)"},
      {"bitwise_or", [](const at::Tensor& x, const at::Tensor& y) { return at::bitwise_or(x, y); },
       "torch.bitwise_or(a, b)"},
      {"bitwise_xor", [](const at::Tensor& x, const at::Tensor& y) { return at::bitwise_xor(x, y); },
       "torch.bitwise_xor(a, b)"},
  };
  for (const auto& [name, fn, python] : bitwise) {
    OpDef d = no_grad(make(name, {Arg::randn("a", kShape), Arg::randn("b", kShape)},
                           [fn = fn](const Tensors& a) { return Tensors{fn(a[0], a[1])}; }, python));
    add_op(catalog, d, {c10::kLong, c10::kInt, c10::kChar},
           {Variant::contiguous(), Variant::transposed("a"), Variant::expanded("b")});
    d.args = {Arg::mask("a", kShape), Arg::mask("b", kShape)};
    add_op(catalog, d, {c10::kBool}, {Variant::contiguous(), Variant::sliced("b")});
  }
  add_op(catalog, no_grad(make("bitwise_not", {Arg::randn("a", kShape)},
                               [](const Tensors& a) { return Tensors{at::bitwise_not(a[0])}; },
                               "torch.bitwise_not(a)")),
         {c10::kLong, c10::kInt}, {Variant::contiguous(), Variant::transposed("a")});
  add_op(catalog, no_grad(make("bitwise_shift_left", {Arg::uniform("a", kShape, 0, 64), Arg::uniform("b", kShape, 0, 8)},
                               [](const Tensors& a) { return Tensors{at::bitwise_left_shift(a[0], a[1])}; },
                               "torch.bitwise_left_shift(a, b)")),
         {c10::kLong, c10::kInt}, {Variant::contiguous(), Variant::expanded("b")});
}

MPSCHECK_PLUGIN("ops-binary", "0.1.0")

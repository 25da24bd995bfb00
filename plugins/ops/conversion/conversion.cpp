// Conversion family: dtype casts, where integer and bool paths go silently wrong on accelerators.
//
// Float inputs to float->integer casts are quarter-integers (an integer grid divided by 4): exact
// in float16 and bfloat16 too, so every dtype truncates the same value toward zero (-2.75 -> -2).
// Out-of-range values are used only where the result is defined (IEEE overflow to inf, unsigned
// wrap-around); float->uint8 of negative values is undefined and is not tested.
#include <mpscheck/op.hpp>

using namespace mpscheck::op;

namespace {

const std::vector<c10::ScalarType> kFloats = {c10::kFloat, c10::kHalf, c10::kBFloat16};

OpDef def(std::string op, std::vector<Arg> args, OpFn fn, std::string python, bool differentiable = false) {
  OpDef d;
  d.family = "conversion";
  d.op = std::move(op);
  d.args = std::move(args);
  d.fn = std::move(fn);
  d.python = std::move(python);
  d.differentiable = differentiable;
  d.tolerance = "shape";  // a cast is exact: one rounding, defined by IEEE or C
  return d;
}

// Integers in [lo, hi) in the case dtype (divided down inside the op).
Arg grid(std::string name, std::vector<int64_t> shape, int64_t lo, int64_t hi) {
  Arg a = Arg::integers(std::move(name), std::move(shape), lo, hi);
  a.dtype = c10::ScalarType::Undefined;
  return a;
}

struct IntTarget {
  const char* name;
  c10::ScalarType dtype;
  int64_t lo, hi;  // grid range: x / 4 stays inside the target's range
};

}  // namespace

MPSCHECK_CATALOG(conversion_cases) {
  const Variant contiguous = Variant::contiguous();
  const std::vector<Variant> strided = {contiguous, Variant::transposed("x"), Variant::sliced("x")};

  // ----- float -> integer and bool: truncation toward zero -----
  const IntTarget targets[] = {{"to_int64", c10::kLong, -256, 256},  {"to_int32", c10::kInt, -256, 256},
                               {"to_int16", c10::kShort, -256, 256}, {"to_int8", c10::kChar, -256, 256},
                               {"to_uint8", c10::kByte, 0, 256},     {"to_bool", c10::kBool, -8, 8}};
  for (const IntTarget& t : targets) {
    const c10::ScalarType to = t.dtype;
    add_op(catalog,
           def(t.name, {grid("x", {32, 48}, t.lo, t.hi)}, [to](const Tensors& a) { return Tensors{(a[0] / 4).to(to)}; },
               "(x / 4).to(" + dtype_python(to) + ")"),
           kFloats, strided);
  }
  // Magnitudes past int32: multiples of 2^21 up to 2^32, exact in float32.
  add_op(catalog,
         def("to_int64_large_values", {grid("x", {32, 48}, -2048, 2048)},
             [](const Tensors& a) { return Tensors{(a[0] * 2097152).to(at::kLong)}; },
             "(x * 2097152).to(torch.int64)"),
         {c10::kFloat}, strided);
  // Rounding before the cast (round half to even), then truncation is a no-op.
  add_op(catalog,
         def("round_to_int32", {grid("x", {32, 48}, -256, 256)},
             [](const Tensors& a) { return Tensors{at::round(a[0] / 4).to(at::kInt)}; },
             "torch.round(x / 4).to(torch.int32)"),
         {c10::kFloat, c10::kHalf, c10::kBFloat16}, strided);

  // ----- integer and bool -> float -----
  add_op(catalog,
         def("to_float32", {Arg::integers("x", {32, 48}, 0, 256, c10::kByte)},
             [](const Tensors& a) { return Tensors{a[0].to(at::kFloat)}; }, "x.to(torch.float32)"),
         {c10::kByte}, strided);
  add_op(catalog,
         def("to_float32", {Arg::mask("x", {32, 48})}, [](const Tensors& a) { return Tensors{a[0].to(at::kFloat)}; },
             "x.to(torch.float32)"),
         {c10::kBool}, strided);
  // int64 past 2^24: float32 rounds to nearest even, the classic lossy cast.
  add_op(catalog,
         def("to_float32", {Arg::integers("x", {32, 48}, -(int64_t{1} << 40), int64_t{1} << 40, c10::kLong)},
             [](const Tensors& a) { return Tensors{a[0].to(at::kFloat)}; }, "x.to(torch.float32)"),
         {c10::kLong}, strided);
  add_op(catalog,
         def("to_float32", {Arg::integers("x", {32, 48}, -(int64_t{1} << 30), int64_t{1} << 30, c10::kInt)},
             [](const Tensors& a) { return Tensors{a[0].to(at::kFloat)}; }, "x.to(torch.float32)"),
         {c10::kInt}, strided);
  add_op(catalog,
         def("to_float16", {Arg::integers("x", {32, 48}, -65504, 65505, c10::kLong)},
             [](const Tensors& a) { return Tensors{a[0].to(at::kHalf)}; }, "x.to(torch.float16)"),
         {c10::kLong}, strided);
  // Past float16's largest finite value (65504) the cast overflows to +-inf.
  add_op(catalog,
         def("to_float16_overflow", {Arg::integers("x", {32, 48}, -100000, 100000, c10::kLong)},
             [](const Tensors& a) { return Tensors{a[0].to(at::kHalf)}; }, "x.to(torch.float16)"),
         {c10::kLong}, strided);
  add_op(catalog,
         def("to_bfloat16", {Arg::integers("x", {32, 48}, -(int64_t{1} << 20), int64_t{1} << 20, c10::kLong)},
             [](const Tensors& a) { return Tensors{a[0].to(at::kBFloat16)}; }, "x.to(torch.bfloat16)"),
         {c10::kLong}, strided);

  // ----- integer <-> integer -----
  add_op(catalog,
         def("to_int64", {Arg::integers("x", {32, 48}, -(int64_t{1} << 31), int64_t{1} << 31, c10::kInt)},
             [](const Tensors& a) { return Tensors{a[0].to(at::kLong)}; }, "x.to(torch.int64)"),
         {c10::kInt}, strided);
  add_op(catalog,
         def("to_int64", {Arg::integers("x", {32, 48}, 0, 256, c10::kByte)},
             [](const Tensors& a) { return Tensors{a[0].to(at::kLong)}; }, "x.to(torch.int64)"),
         {c10::kByte}, strided);
  add_op(catalog,
         def("to_int64", {Arg::mask("x", {32, 48})}, [](const Tensors& a) { return Tensors{a[0].to(at::kLong)}; },
             "x.to(torch.int64)"),
         {c10::kBool}, strided);
  add_op(catalog,
         def("to_bool", {Arg::integers("x", {32, 48}, -3, 3, c10::kLong)},
             [](const Tensors& a) { return Tensors{a[0].to(at::kBool)}; }, "x.to(torch.bool)"),
         {c10::kLong}, strided);
  // Sign extension: int8 -> int32 keeps negative values negative.
  add_op(catalog,
         def("to_int32", {Arg::integers("x", {32, 48}, -128, 128, c10::kChar)},
             [](const Tensors& a) { return Tensors{a[0].to(at::kInt)}; }, "x.to(torch.int32)"),
         {c10::kChar}, strided);

  // ----- int64 arithmetic whose values overflow int32 -----
  add_op(catalog,
         def("int64_mul_add_past_int32",
             {Arg::integers("x", {32, 48}, 1 << 20, 1 << 30, c10::kLong), Arg::integers("y", {32, 48}, 3, 40, c10::kLong)},
             [](const Tensors& a) { return Tensors{a[0] * a[1] + a[0]}; }, "x * y + x"),
         {c10::kLong}, {contiguous, Variant::transposed("x"), Variant::sliced("y")});
  add_op(catalog,
         def("int64_sum_past_int32", {Arg::integers("x", {64, 256}, 1 << 28, 1 << 30, c10::kLong)},
             [](const Tensors& a) { return Tensors{a[0].sum(), a[0].sum(-1), at::cumsum(a[0], -1)}; },
             "(x.sum(), x.sum(-1), torch.cumsum(x, -1))"),
         {c10::kLong}, strided);
  add_op(catalog,
         def("int64_shift_past_int32", {Arg::integers("x", {32, 48}, 1, 1 << 20, c10::kLong)},
             [](const Tensors& a) { return Tensors{at::bitwise_left_shift(a[0], 20)}; }, "x << 20"),
         {c10::kLong}, strided);
  // uint8 arithmetic wraps modulo 256 (defined for unsigned types).
  add_op(catalog,
         def("uint8_add_wrap",
             {Arg::integers("x", {32, 48}, 0, 256, c10::kByte), Arg::integers("y", {32, 48}, 0, 256, c10::kByte)},
             [](const Tensors& a) { return Tensors{a[0] + a[1], a[0] * a[1]}; }, "(x + y, x * y)"),
         {c10::kByte}, {contiguous, Variant::transposed("x"), Variant::sliced("y")});

  // ----- type promotion -----
  add_op(catalog,
         def("promote_int64_float",
             {Arg::integers("i", {32, 48}, -1000, 1000, c10::kLong), Arg::randn("x", {32, 48})},
             [](const Tensors& a) { return Tensors{a[0] + a[1]}; }, "i + x", true),
         {c10::kFloat}, {contiguous, Variant::transposed("x"), Variant::sliced("i")});
  add_op(catalog,
         def("promote_uint8_int8",
             {Arg::integers("x", {32, 48}, 0, 256, c10::kByte), Arg::integers("y", {32, 48}, -128, 128, c10::kChar)},
             [](const Tensors& a) { return Tensors{a[0] + a[1]}; }, "x + y"),
         {c10::kByte}, {contiguous, Variant::transposed("x")});
  add_op(catalog,
         def("promote_bool_int",
             {Arg::mask("m", {32, 48}), Arg::integers("y", {32, 48}, -100, 100, c10::kInt)},
             [](const Tensors& a) { return Tensors{a[0] + a[1], a[0].sum()}; }, "(m + y, m.sum())"),
         {c10::kBool}, {contiguous, Variant::transposed("m")});

  // ----- float <-> float: round trips (differentiable: the gradient is cast back) -----
  add_op(catalog,
         def("float16_round_trip", {Arg::randn("x", {32, 48})},
             [](const Tensors& a) { return Tensors{a[0].to(at::kHalf).to(at::kFloat)}; },
             "x.to(torch.float16).to(torch.float32)", true),
         kFloats, strided);
  // bfloat16 -> float16 rounds twice; a float16 case would differ by a bfloat16 ulp from float32.
  add_op(catalog,
         def("bfloat16_round_trip", {Arg::randn("x", {32, 48})},
             [](const Tensors& a) { return Tensors{a[0].to(at::kBFloat16).to(at::kFloat)}; },
             "x.to(torch.bfloat16).to(torch.float32)", true),
         {c10::kFloat, c10::kBFloat16}, strided);
  // IEEE overflow to inf and gradual underflow to subnormals in float16.
  add_op(catalog,
         def("float16_overflow", {Arg::randn("x", {32, 48})},
             [](const Tensors& a) { return Tensors{(a[0] * 50000).to(at::kHalf).to(at::kFloat)}; },
             "(x * 50000).to(torch.float16).to(torch.float32)"),
         {c10::kFloat}, strided);
  add_op(catalog,
         def("float16_subnormal", {Arg::randn("x", {32, 48})},
             [](const Tensors& a) { return Tensors{(a[0] * 1e-5).to(at::kHalf).to(at::kFloat)}; },
             "(x * 1e-5).to(torch.float16).to(torch.float32)", true),
         {c10::kFloat}, strided);
  // ----- large: a cast over more than 2^24 elements -----
  OpDef large = def("to_int64_large", {grid("x", {(int64_t{1} << 24) + 4096}, -256, 256)},
                    [](const Tensors& a) { return Tensors{(a[0] / 4).to(at::kLong)}; }, "(x / 4).to(torch.int64)");
  large.tags = {"large"};
  add_op(catalog, large, {c10::kFloat}, {Variant{"large", [](std::vector<Arg>&) {}}});
}

MPSCHECK_PLUGIN("ops-conversion", "0.1.0")

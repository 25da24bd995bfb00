// Conversion family: dtype casts, where integer and bool paths go silently wrong on accelerators.
//
// Float inputs to float->integer casts are quarter-integers (an integer grid divided by 4): exact
// in float16 and bfloat16 too, so every dtype truncates the same value toward zero (-2.75 -> -2).
// Out-of-range values are used only where the result is defined (IEEE overflow to inf, unsigned
// wrap-around); float->uint8 of negative values is undefined and is not tested.
#include <mpscheck/op.hpp>

using namespace mpscheck::op;

namespace {

using A = const Tensors&;
using T = const at::Tensor&;

// Integers in [lo, hi) in the case dtype (divided down inside the op).
Arg grid(std::string name, std::vector<int64_t> shape, int64_t lo, int64_t hi) {
  Arg a = Arg::integers(std::move(name), std::move(shape), lo, hi);
  a.dtype = c10::ScalarType::Undefined;
  return a;
}

Arg ints(std::string name, int64_t lo, int64_t hi, c10::ScalarType dtype) {
  return Arg::integers(std::move(name), {32, 48}, lo, hi, dtype);
}

struct IntTarget {
  const char* name;
  c10::ScalarType dtype;
  int64_t lo, hi;  // grid range: x / 4 stays inside the target's range
};

}  // namespace

// clang-format off
MPSCHECK_CATALOG(conversion_cases) {
  // A cast is exact: one rounding, defined by IEEE or C. Forward only unless a case says otherwise.
  const Variant contiguous = Variant::contiguous();
  Family conversion(catalog, "conversion");
  conversion.tolerance("shape").no_grad().variants({contiguous, Variant::transposed("x"), Variant::sliced("x")});
  constexpr int64_t k2to31 = int64_t{1} << 31, k2to40 = int64_t{1} << 40;

  // ----- float -> integer and bool: truncation toward zero -----
  const IntTarget targets[] = {{"to_int64", c10::kLong, -256, 256},  {"to_int32", c10::kInt, -256, 256},
                               {"to_int16", c10::kShort, -256, 256}, {"to_int8", c10::kChar, -256, 256},
                               {"to_uint8", c10::kByte, 0, 256},     {"to_bool", c10::kBool, -8, 8}};
  for (const IntTarget& t : targets) {
    const c10::ScalarType to = t.dtype;
    conversion.op(t.name, {grid("x", {32, 48}, t.lo, t.hi)}, [to](T x) { return (x / 4).to(to); },
                  "(x / 4).to(" + dtype_python(to) + ")").add(dtypes::floats);
  }
  // Magnitudes past int32: multiples of 2^21 up to 2^32, exact in float32.
  conversion.op("to_int64_large_values", {grid("x", {32, 48}, -2048, 2048)}, [](T x) { return (x * 2097152).to(at::kLong); },
                "(x * 2097152).to(torch.int64)").add(dtypes::f32);
  // Rounding before the cast (round half to even), then truncation is a no-op.
  conversion.op("round_to_int32", {grid("x", {32, 48}, -256, 256)}, [](T x) { return at::round(x / 4).to(at::kInt); },
                "torch.round(x / 4).to(torch.int32)").add(dtypes::floats);

  // ----- integer and bool -> float -----
  conversion.op("to_float32", {ints("x", 0, 256, c10::kByte)}, [](T x) { return x.to(at::kFloat); },
                "x.to(torch.float32)").add({c10::kByte});
  conversion.op("to_float32", {Arg::mask("x", {32, 48})}, [](T x) { return x.to(at::kFloat); }, "x.to(torch.float32)")
      .add({c10::kBool});
  // int64 past 2^24: float32 rounds to nearest even, the classic lossy cast.
  conversion.op("to_float32", {ints("x", -k2to40, k2to40, c10::kLong)}, [](T x) { return x.to(at::kFloat); },
                "x.to(torch.float32)").add({c10::kLong});
  conversion.op("to_float32", {ints("x", -(int64_t{1} << 30), int64_t{1} << 30, c10::kInt)},
                [](T x) { return x.to(at::kFloat); }, "x.to(torch.float32)").add({c10::kInt});
  conversion.op("to_float16", {ints("x", -65504, 65505, c10::kLong)}, [](T x) { return x.to(at::kHalf); },
                "x.to(torch.float16)").add({c10::kLong});
  // Past float16's largest finite value (65504) the cast overflows to +-inf.
  conversion.op("to_float16_overflow", {ints("x", -100000, 100000, c10::kLong)}, [](T x) { return x.to(at::kHalf); },
                "x.to(torch.float16)").add({c10::kLong});
  conversion.op("to_bfloat16", {ints("x", -(int64_t{1} << 20), int64_t{1} << 20, c10::kLong)},
                [](T x) { return x.to(at::kBFloat16); }, "x.to(torch.bfloat16)").add({c10::kLong});

  // ----- integer <-> integer -----
  conversion.op("to_int64", {ints("x", -k2to31, k2to31, c10::kInt)}, [](T x) { return x.to(at::kLong); },
                "x.to(torch.int64)").add({c10::kInt});
  conversion.op("to_int64", {ints("x", 0, 256, c10::kByte)}, [](T x) { return x.to(at::kLong); }, "x.to(torch.int64)")
      .add({c10::kByte});
  conversion.op("to_int64", {Arg::mask("x", {32, 48})}, [](T x) { return x.to(at::kLong); }, "x.to(torch.int64)")
      .add({c10::kBool});
  conversion.op("to_bool", {ints("x", -3, 3, c10::kLong)}, [](T x) { return x.to(at::kBool); }, "x.to(torch.bool)")
      .add({c10::kLong});
  // Sign extension: int8 -> int32 keeps negative values negative.
  conversion.op("to_int32", {ints("x", -128, 128, c10::kChar)}, [](T x) { return x.to(at::kInt); }, "x.to(torch.int32)")
      .add({c10::kChar});

  // ----- int64 arithmetic whose values overflow int32 -----
  conversion.op("int64_mul_add_past_int32", {ints("x", 1 << 20, 1 << 30, c10::kLong), ints("y", 3, 40, c10::kLong)},
                [](A a) { return a[0] * a[1] + a[0]; }, "x * y + x")
      .add({c10::kLong}, {contiguous, Variant::transposed("x"), Variant::sliced("y")});
  conversion.op("int64_sum_past_int32", {Arg::integers("x", {64, 256}, 1 << 28, 1 << 30, c10::kLong)},
                [](T x) { return Tensors{x.sum(), x.sum(-1), at::cumsum(x, -1)}; },
                "(x.sum(), x.sum(-1), torch.cumsum(x, -1))").add({c10::kLong});
  conversion.op("int64_shift_past_int32", {ints("x", 1, 1 << 20, c10::kLong)},
                [](T x) { return at::bitwise_left_shift(x, 20); }, "x << 20").add({c10::kLong});
  // uint8 arithmetic wraps modulo 256 (defined for unsigned types).
  conversion.op("uint8_add_wrap", {ints("x", 0, 256, c10::kByte), ints("y", 0, 256, c10::kByte)},
                [](A a) { return Tensors{a[0] + a[1], a[0] * a[1]}; }, "(x + y, x * y)")
      .add({c10::kByte}, {contiguous, Variant::transposed("x"), Variant::sliced("y")});

  // ----- type promotion -----
  conversion.op("promote_int64_float", {ints("i", -1000, 1000, c10::kLong), Arg::randn("x", {32, 48})},
                [](A a) { return a[0] + a[1]; }, "i + x")
      .with_grad().add(dtypes::f32, {contiguous, Variant::transposed("x"), Variant::sliced("i")});
  conversion.op("promote_uint8_int8", {ints("x", 0, 256, c10::kByte), ints("y", -128, 128, c10::kChar)},
                [](A a) { return a[0] + a[1]; }, "x + y").add({c10::kByte}, {contiguous, Variant::transposed("x")});
  conversion.op("promote_bool_int", {Arg::mask("m", {32, 48}), ints("y", -100, 100, c10::kInt)},
                [](A a) { return Tensors{a[0] + a[1], a[0].sum()}; }, "(m + y, m.sum())")
      .add({c10::kBool}, {contiguous, Variant::transposed("m")});

  // ----- float <-> float: round trips (differentiable: the gradient is cast back) -----
  conversion.op("float16_round_trip", {Arg::randn("x", {32, 48})}, [](T x) { return x.to(at::kHalf).to(at::kFloat); },
                "x.to(torch.float16).to(torch.float32)").with_grad().add(dtypes::floats);
  // bfloat16 -> float16 rounds twice; a float16 case would differ by a bfloat16 ulp from float32.
  conversion.op("bfloat16_round_trip", {Arg::randn("x", {32, 48})},
                [](T x) { return x.to(at::kBFloat16).to(at::kFloat); }, "x.to(torch.bfloat16).to(torch.float32)")
      .with_grad().add(dtypes::f32_bf16);
  // IEEE overflow to inf and gradual underflow to subnormals in float16.
  conversion.op("float16_overflow", {Arg::randn("x", {32, 48})},
                [](T x) { return (x * 50000).to(at::kHalf).to(at::kFloat); },
                "(x * 50000).to(torch.float16).to(torch.float32)").add(dtypes::f32);
  conversion.op("float16_subnormal", {Arg::randn("x", {32, 48})},
                [](T x) { return (x * 1e-5).to(at::kHalf).to(at::kFloat); },
                "(x * 1e-5).to(torch.float16).to(torch.float32)").with_grad().add(dtypes::f32);
  // ----- large: a cast over more than 2^24 elements -----
  conversion.op("to_int64_large", {grid("x", {(int64_t{1} << 24) + 4096}, -256, 256)},
                [](T x) { return (x / 4).to(at::kLong); }, "(x / 4).to(torch.int64)").large().add(dtypes::f32);
}
// clang-format on

MPSCHECK_PLUGIN("ops-conversion", "0.1.0")

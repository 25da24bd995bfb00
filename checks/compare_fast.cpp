// The fast half of compare_tensors' element pass: block predicates that prove a block changes
// nothing, in front of the scalar pass (element_stats.hpp). The argument for their soundness is
// beside each predicate.
#include "checks/element_stats.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace mpscheck::compare_detail {

namespace {

// ---- The fast pass ----
//
// Most blocks of a comparison change nothing: no element is non-finite, none is outside the
// tolerance, none is further off than the largest error seen so far, none has a larger relative
// error. The fast pass asks only that question, block by block, with a predicate that is
// conservative (it may call a quiet block loud, never a loud block quiet), and hands every loud
// block to ElementStats::scan (element_stats.hpp), the scalar pass, which then records exactly what it always
// recorded. The fields of the OutputReport are therefore those of the scalar pass by construction;
// the predicates decide only how fast a block is passed over.
//
// Two predicates, tried in turn:
//  - quiet_float: in float32 (float16 and bfloat16 widened to it exactly, in registers or by F16C),
//    four (SSE2, NEON) or eight (AVX2) elements per instruction, against thresholds
//    shrunk by 2^-20 so that every rounding of float32 arithmetic stays on the safe side (the
//    argument is next to the function). Elements within about 2^-20 of a threshold come out loud.
//  - quiet_double: the scalar pass's own double arithmetic on the same elements, written without
//    branches so that it vectorises; exact, so it settles the near-ties quiet_float leaves (an
//    output whose errors are all equal, say) before the scalar pass is needed.
// On x86-64 Linux both are compiled twice (SSE2 and AVX2, picked at load time by the CPU); AVX2
// brings no FMA, so no product is fused with a sum differently from the scalar pass. On arm64
// (NEON) the baseline build is already vectorised, four floats or two doubles to an instruction.
constexpr std::int64_t kBlock = 1024;

// Thresholds from the scalar pass's state: the tolerance, the largest error so far (max_abs, -1
// before the first element) and the largest relative error so far (max_rel).
struct Thresholds {
  double atol, rtol, max_abs, max_rel;
};

#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(__SANITIZE_ADDRESS__)
#define MPSCHECK_X86_CLONES 1
#define MPSCHECK_MULTIVERSION __attribute__((target_clones("avx2", "default")))
#else
#define MPSCHECK_X86_CLONES 0
#define MPSCHECK_MULTIVERSION
#endif

// quiet_float's argument assumes gradual underflow. A thread that flushes subnormals to zero
// (torch.set_flush_denormal, which sets FTZ and DAZ) skips it and goes by quiet_double, whose
// arithmetic is the scalar pass's own under any mode.
bool flushes_subnormals() {
#if defined(__x86_64__) || defined(__i386__)
  return (_mm_getcsr() & 0x8040u) != 0;  // FTZ (bit 15) or DAZ (bit 6)
#elif defined(__aarch64__)
  std::uint64_t fpcr;
  asm volatile("mrs %0, fpcr" : "=r"(fpcr));
  return ((fpcr >> 24) & 1u) != 0;  // FZ
#else
  return true;
#endif
}

// The largest float not above y (y >= 0 or negative; never NaN here).
float float_down(double y) {
  float f = static_cast<float>(y);
  if (static_cast<double>(f) > y) f = std::nextafter(f, -std::numeric_limits<float>::infinity());
  return f;
}

// float32 thresholds for quiet_float, each shrunk so that the float32 tests below imply the
// scalar pass's double tests. With x = |t - r| exact, df = fl32(x) and diff = fl64(x):
//  x <= df (1 + 2^-23) (float32 subtraction is exact where its result is subnormal, and gradual
//  underflow makes df = 0 only when x = 0), and diff <= x (1 + 2^-53).
//  - diff <= max_abs  <=  df <= a  with a <= max_abs (1 - 2^-20); a is finite, so the test also
//    fails for NaN and infinite df (a non-finite element is always loud). Or, for a tie with the
//    largest error (common where values are quantized, as float16 and bfloat16 outputs are): when
//    the float32 subtraction was exact (its rounding error, found by Knuth's TwoSum, is zero), then
//    diff = x = df, and df <= a_tie with a_tie the largest float not above max_abs is exact.
//  - diff <= lim = fl64(atol + fl64(rtol |r|))  <=  df <= L  with L = fl32(at + fl32(rt |r|)),
//    at <= atol (1 - 2^-20), rt <= rtol (1 - 2^-20), provided L >= 2^-100 (so that float32's
//    absolute underflow error, at most 2^-150, and float64's, are far below the 2^-20 margin),
//    or df = 0 (x = 0 is never outside a tolerance with atol, rtol >= 0).
//  - fl64(diff / |r|) <= max_rel, which holds when x (1 + 2^-53) <= max_rel |r|  <=  df <= P with
//    P = fl32(m |r|), m <= max_rel (1 - 2^-20), under the same proviso P >= 2^-100 or df = 0; or
//    |r| <= atol, where the scalar pass takes no relative error at all.
// Multiplying out the margins: (1 - 2^-20)(1 + 2^-24)^2 (1 + 2^-23)(1 + 2^-53) < 1 - 2^-21.
struct FloatThresholds {
  float a, a_tie, at, rt, m, atol_down;
  bool tolerance_implied;  // max_abs <= atol: no element within max_abs can be outside the tolerance
  explicit FloatThresholds(const Thresholds& th) {
    tolerance_implied = th.max_abs >= 0 && th.max_abs <= th.atol;
    constexpr double kShrink = 1.0 - 0x1p-20;
    const double fmax = std::numeric_limits<float>::max();
    a = th.max_abs < 0 ? -1.0f : float_down(std::min(th.max_abs * kShrink, fmax));
    a_tie = th.max_abs < 0 ? -1.0f : float_down(std::min(th.max_abs, fmax));
    at = float_down(std::min(th.atol * kShrink, fmax));
    rt = float_down(std::min(th.rtol * kShrink, fmax));
    m = float_down(std::min(th.max_rel * kShrink, fmax));
    atol_down = float_down(std::min(th.atol, fmax));
  }
};

// float16 and bfloat16 widened exactly to float32 on raw bits, without branches so that loops
// over them vectorise. float16: a normal number's exponent and mantissa move into float32's
// fields and the exponent is rebiased by a multiplication by 2^-112 (the largest exponent lands on
// float32's infinity/NaN exponent, and the multiplication keeps it there); a subnormal's mantissa
// m is placed under the exponent of 0.5, and 0.5 subtracted again leaves m 2^-24. Both are exact.
struct Float32Bits {
  using raw = float;
  static float widen(float x) { return x; }
};
struct Float16Bits {
  using raw = std::uint16_t;
  static float widen(std::uint16_t h) {
    const std::uint32_t w = h;
    const std::uint32_t sign = (w & 0x8000u) << 16, body = w & 0x7fffu;
    const float normal = std::bit_cast<float>((body << 13) + (std::uint32_t{0xe0} << 23)) * 0x1p-112f;
    const float subnormal = std::bit_cast<float>(body | (std::uint32_t{126} << 23)) - 0.5f;
    const std::uint32_t is_subnormal = std::uint32_t{0} - static_cast<std::uint32_t>((w & 0x7c00u) == 0);  // a mask
    const std::uint32_t bits = (std::bit_cast<std::uint32_t>(subnormal) & is_subnormal) |
                               (std::bit_cast<std::uint32_t>(normal) & ~is_subnormal);
    return std::bit_cast<float>(sign | bits);
  }
};
struct BFloat16Bits {
  using raw = std::uint16_t;
  static float widen(std::uint16_t h) { return std::bit_cast<float>(std::uint32_t{h} << 16); }
};

// kTolerance false: the tolerance test is left out, which is sound when max_abs <= atol, since
// then diff <= max_abs <= atol <= lim.
// kTies: take the exact path for ties with the largest error, worth its cost only where both sides
// are quantized to 16 bits; elsewhere a tie is rare, and quiet_double settles it.
template <class R, class T, bool kTolerance, bool kTies>
inline bool quiet_float_loop(const void* rv, const void* tv, std::int64_t n, const FloatThresholds& th) {
  constexpr float kTiny = 0x1p-100f;
  const auto* rp = static_cast<const typename R::raw*>(rv);
  const auto* tp = static_cast<const typename T::raw*>(tv);
  const float a = th.a, a_tie = th.a_tie, at = th.at, rt = th.rt, m = th.m, atol_down = th.atol_down;
  int loud = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const float r = R::widen(rp[i]), t = T::widen(tp[i]);
    const float d = t - r;
    const float df = std::abs(d), mag = std::abs(r);
    const float rel = m * mag;
    bool within_abs = df <= a;
    if constexpr (kTies) {
      const float back = d - t;  // TwoSum of t and -r: the rounding error of d, 0 when d is exact
      const float error = (t - (d - back)) - (r + back);
      within_abs |= (error == 0.0f) & (df <= a_tie);
    }
    const bool within_rel = (mag <= atol_down) | (df <= (rel >= kTiny ? rel : 0.0f));
    if constexpr (kTolerance) {
      const float lim = at + rt * mag;
      const bool within_tol = df <= (lim >= kTiny ? lim : 0.0f);
      loud |= !(within_abs & within_tol & within_rel);
    } else {
      loud |= !(within_abs & within_rel);
    }
  }
  return loud == 0;
}
template <class R, class T, bool kTies>
inline bool quiet_float_impl(const void* rv, const void* tv, std::int64_t n, const FloatThresholds& th) {
  return th.tolerance_implied ? quiet_float_loop<R, T, false, kTies>(rv, tv, n, th)
                              : quiet_float_loop<R, T, true, kTies>(rv, tv, n, th);
}
using QuietFloat = bool (*)(const void*, const void*, std::int64_t, const FloatThresholds&);
// One function per pairing, each compiled for the baseline and AVX2 (a template cannot be).
MPSCHECK_MULTIVERSION bool quiet_f32_f32(const void* r, const void* t, std::int64_t n, const FloatThresholds& th) {
  return quiet_float_impl<Float32Bits, Float32Bits, false>(r, t, n, th);
}
// float16 and bfloat16 pairs widened to float32 buffers beforehand (F16C).
MPSCHECK_MULTIVERSION bool quiet_f32_f32_ties(const void* r, const void* t, std::int64_t n, const FloatThresholds& th) {
  return quiet_float_impl<Float32Bits, Float32Bits, true>(r, t, n, th);
}
MPSCHECK_MULTIVERSION bool quiet_bf16_bf16(const void* r, const void* t, std::int64_t n, const FloatThresholds& th) {
  return quiet_float_impl<BFloat16Bits, BFloat16Bits, true>(r, t, n, th);
}
MPSCHECK_MULTIVERSION bool quiet_f32_bf16(const void* r, const void* t, std::int64_t n, const FloatThresholds& th) {
  return quiet_float_impl<Float32Bits, BFloat16Bits, false>(r, t, n, th);
}

// The scalar pass's tests in its own arithmetic: the element is quiet when it is finite, within
// the tolerance (the same expression as ElementStats::finite_element), not above max_abs, and
// either exactly equal or with diff < fl64(max_rel |r|), which rounding's monotonicity turns into
// fl64(diff / |r|) <= max_rel. For float64 inputs a finite pair whose difference overflows is
// loud too, and the scalar pass decides it.
template <class T>
inline bool quiet_double_impl(const T* r, const T* t, std::int64_t n, const Thresholds& th) {
  constexpr double kMax = std::numeric_limits<double>::max();
  const double atol = th.atol, rtol = th.rtol, a = th.max_abs, m = th.max_rel;
  constexpr int kLanes = 8;  // independent accumulators: a floating sum vectorises only lane-wise
  double loud[kLanes] = {};
  std::int64_t i = 0;
  auto test = [&](std::int64_t k) {
    const double rv = static_cast<double>(r[k]), tv = static_cast<double>(t[k]);
    const double diff = std::abs(tv - rv), mag = std::abs(rv);
    const bool quiet = (diff <= atol + rtol * mag) & (diff <= kMax) & (diff <= a) & ((diff == 0) | (diff < m * mag));
    return quiet ? 0.0 : 1.0;
  };
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) loud[j] += test(i + j);
  double any = 0;
  for (; i < n; ++i) any += test(i);
  for (int j = 0; j < kLanes; ++j) any += loud[j];
  return any == 0;
}
MPSCHECK_MULTIVERSION
bool quiet_double(const float* r, const float* t, std::int64_t n, const Thresholds& th) {
  return quiet_double_impl(r, t, n, th);
}
MPSCHECK_MULTIVERSION
bool quiet_double(const double* r, const double* t, std::int64_t n, const Thresholds& th) {
  return quiet_double_impl(r, t, n, th);
}

// A block of float16/bfloat16 widened into float32 for quiet_double and the scalar pass.
MPSCHECK_MULTIVERSION void widen_half(const std::uint16_t* h, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = Float16Bits::widen(h[i]);
}
#if MPSCHECK_X86_CLONES
#define MPSCHECK_F16C __attribute__((target("avx2,f16c")))
// The helpers below pass __m256 values, which GCC notes would change the ABI without AVX; they
// are compiled with AVX and called only from functions compiled with it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
// x86's F16C instruction widens eight float16 to float32 exactly in one step, where the bit
// manipulation above takes a dozen; compilers do not produce it from portable code. It is used
// only while the thread keeps subnormals (the scalar pass then reads the same values whatever
// F16C does under DAZ).
MPSCHECK_F16C __m256 load8_half(const std::uint16_t* h) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)));
}
MPSCHECK_F16C void widen_half_f16c(const std::uint16_t* h, float* out, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, load8_half(h + i));
  for (; i < n; ++i) out[i] = Float16Bits::widen(h[i]);
}
bool has_f16c() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  return yes;
}

// quiet_float_loop written out in AVX2 for the pairings with a 16-bit side, eight elements at a
// time, each side widened in registers (float16 by F16C, bfloat16 by a 16-bit shift), so that the
// block is read once and nothing is stored. Every lane computes quiet_float_loop's float32
// expressions, operation for operation (no FMA: the target has none), with the same comparisons
// (ordered: false for NaN, as C++'s <= is), so a lane is quiet exactly when quiet_float_loop
// would call that element quiet; the last n % 8 elements go to quiet_float_loop itself. Called
// only where has_f16c() holds.
struct Float32Lanes : Float32Bits {
  MPSCHECK_F16C static __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
};
struct Float16Lanes : Float16Bits {
  static constexpr std::uint16_t kExponent = 0x7c00;  // all ones: an infinity or a NaN
  MPSCHECK_F16C static __m256 load8(const std::uint16_t* p) { return load8_half(p); }
};
struct BFloat16Lanes : BFloat16Bits {
  static constexpr std::uint16_t kExponent = 0x7f80;
  MPSCHECK_F16C static __m256 load8(const std::uint16_t* p) {
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
};
MPSCHECK_F16C inline __m256 le(__m256 x, __m256 y) { return _mm256_cmp_ps(x, y, _CMP_LE_OQ); }
// x where x >= 2^-100, else +0 (the mask of a false comparison is all zeros).
MPSCHECK_F16C inline __m256 unless_tiny(__m256 x) {
  return _mm256_and_ps(x, _mm256_cmp_ps(x, _mm256_set1_ps(0x1p-100f), _CMP_GE_OQ));
}
template <class R, class T, bool kTolerance, bool kTies>
MPSCHECK_F16C inline bool quiet_lanes_loop(const void* rv, const void* tv, std::int64_t n, const FloatThresholds& th) {
  const auto* rp = static_cast<const typename R::raw*>(rv);
  const auto* tp = static_cast<const typename T::raw*>(tv);
  const __m256 sign = _mm256_set1_ps(-0.0f), zero = _mm256_setzero_ps();
  const __m256 a = _mm256_set1_ps(th.a), a_tie = _mm256_set1_ps(th.a_tie), at = _mm256_set1_ps(th.at),
               rt = _mm256_set1_ps(th.rt), m = _mm256_set1_ps(th.m), atol_down = _mm256_set1_ps(th.atol_down);
  __m256 quiet = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
  // One vector: its quiet mask without the tie test, and what the tie test needs.
  struct Lanes {
    __m256 r, t, d, df, within_abs, rest, ok;
  };
  auto lanes = [&](std::int64_t at_i) MPSCHECK_F16C {
    Lanes v;
    v.r = R::load8(rp + at_i), v.t = T::load8(tp + at_i);
    v.d = _mm256_sub_ps(v.t, v.r);
    v.df = _mm256_andnot_ps(sign, v.d);
    const __m256 mag = _mm256_andnot_ps(sign, v.r);
    v.rest = _mm256_or_ps(le(mag, atol_down), le(v.df, unless_tiny(_mm256_mul_ps(m, mag))));  // within_rel
    if constexpr (kTolerance)
      v.rest = _mm256_and_ps(v.rest, le(v.df, unless_tiny(_mm256_add_ps(at, _mm256_mul_ps(rt, mag)))));
    v.within_abs = le(v.df, a);
    v.ok = _mm256_and_ps(v.within_abs, v.rest);
    return v;
  };
  // The tie test can only turn a loud lane quiet, so it is worked out only for a vector with a
  // loud lane; a vector still loud after it makes the block loud.
  auto quiet_with_ties = [&](const Lanes& v) MPSCHECK_F16C {
    if (_mm256_movemask_ps(v.ok) == 0xff) return true;
    const __m256 back = _mm256_sub_ps(v.d, v.t);
    const __m256 error = _mm256_sub_ps(_mm256_sub_ps(v.t, _mm256_sub_ps(v.d, back)), _mm256_add_ps(v.r, back));
    const __m256 tie = _mm256_and_ps(_mm256_cmp_ps(error, zero, _CMP_EQ_OQ), le(v.df, a_tie));
    return _mm256_movemask_ps(_mm256_and_ps(_mm256_or_ps(v.within_abs, tie), v.rest)) == 0xff;
  };
  std::int64_t i = 0;
  // Same-dtype 16-bit pairs only: sixteen elements a step. Where both sides hold the same bits and
  // none is an infinity or a NaN, every lane has df = +0, so within_rel and the tolerance hold
  // (0 <= +0 or a positive bound), and the lane is quiet exactly when a >= 0: the lanes below
  // would say the same at a fraction of the work, and equal elements are most of a 16-bit
  // target's output. After a step that is not all equal the next seven skip the test: where many
  // elements differ, it would almost never pass and would cost a fifth of the step.
  if constexpr (kTies && std::is_same_v<R, T> && sizeof(typename R::raw) == 2) {
    if (th.a >= 0) {
      const __m256i exponent = _mm256_set1_epi16(static_cast<std::int16_t>(R::kExponent));
      int skip_equal_test = 0;
      for (; i + 16 <= n; i += 16) {
        if (skip_equal_test > 0) {
          --skip_equal_test;
        } else {
          const __m256i rb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rp + i));
          const __m256i tb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tp + i));
          const __m256i special = _mm256_cmpeq_epi16(_mm256_and_si256(rb, exponent), exponent);
          const __m256i quiet_equal = _mm256_andnot_si256(special, _mm256_cmpeq_epi16(rb, tb));
          if (static_cast<unsigned>(_mm256_movemask_epi8(quiet_equal)) == 0xffffffffu) continue;
          skip_equal_test = 7;
        }
        if (!quiet_with_ties(lanes(i)) || !quiet_with_ties(lanes(i + 8))) return false;
      }
    }
  }
  for (; i + 8 <= n; i += 8) {
    const Lanes v = lanes(i);
    if constexpr (kTies) {
      if (!quiet_with_ties(v)) return false;
    } else {
      quiet = _mm256_and_ps(quiet, v.ok);
    }
  }
  return _mm256_movemask_ps(quiet) == 0xff && quiet_float_loop<R, T, kTolerance, kTies>(rp + i, tp + i, n - i, th);
}
template <class R, class T, bool kTies>
MPSCHECK_F16C inline bool quiet_lanes_impl(const void* rv, const void* tv, std::int64_t n, const FloatThresholds& th) {
  return th.tolerance_implied ? quiet_lanes_loop<R, T, false, kTies>(rv, tv, n, th)
                              : quiet_lanes_loop<R, T, true, kTies>(rv, tv, n, th);
}
// The in-register predicate for a pairing, or null where there is none.
QuietFloat quiet_lanes_for(c10::ScalarType r, c10::ScalarType t) {
  if (r == at::kHalf && t == at::kHalf) return quiet_lanes_impl<Float16Lanes, Float16Lanes, true>;
  if (r == at::kBFloat16 && t == at::kBFloat16) return quiet_lanes_impl<BFloat16Lanes, BFloat16Lanes, true>;
  if (r == at::kFloat && t == at::kHalf) return quiet_lanes_impl<Float32Lanes, Float16Lanes, false>;
  if (r == at::kFloat && t == at::kBFloat16) return quiet_lanes_impl<Float32Lanes, BFloat16Lanes, false>;
  return nullptr;
}
#pragma GCC diagnostic pop
#else
void widen_half_f16c(const std::uint16_t* h, float* out, std::int64_t n) { widen_half(h, out, n); }
bool has_f16c() { return false; }
QuietFloat quiet_lanes_for(c10::ScalarType, c10::ScalarType) { return nullptr; }
#endif
MPSCHECK_MULTIVERSION void widen_bfloat16(const std::uint16_t* h, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = BFloat16Bits::widen(h[i]);
}

// One side of a float32/float16/bfloat16 comparison: its raw elements, and a block of them as float32.
struct FloatSource {
  using value_type = float;
  c10::ScalarType dtype = at::kFloat;
  const void* data = nullptr;
  static FloatSource of(const at::Tensor& x) { return FloatSource{x.scalar_type(), x.const_data_ptr()}; }
  const void* raw(std::int64_t begin) const {
    return dtype == at::kFloat ? static_cast<const void*>(static_cast<const float*>(data) + begin)
                               : static_cast<const void*>(static_cast<const std::uint16_t*>(data) + begin);
  }
  bool f16c = false;  // widen float16 with F16C
  const float* block(std::int64_t begin, std::int64_t len, float* buffer) const {
    if (dtype == at::kFloat) return static_cast<const float*>(data) + begin;
    const auto* bits = static_cast<const std::uint16_t*>(data) + begin;
    if (dtype == at::kBFloat16)
      widen_bfloat16(bits, buffer, len);
    else if (f16c)
      widen_half_f16c(bits, buffer, len);
    else
      widen_half(bits, buffer, len);
    return buffer;
  }
};
// The float32 predicate on a pairing's raw elements, where bfloat16's widening (a shift) costs
// nothing; null for the others, whose blocks are widened to float32 first.
QuietFloat quiet_float_for(c10::ScalarType r, c10::ScalarType t) {
  if (r == at::kFloat && t == at::kFloat) return quiet_f32_f32;
  if (r == at::kBFloat16 && t == at::kBFloat16) return quiet_bf16_bf16;
  if (r == at::kFloat && t == at::kBFloat16) return quiet_f32_bf16;
  return nullptr;
}
// A float64 side, read in place.
struct DoubleSource {
  using value_type = double;
  const double* f64 = nullptr;
  static DoubleSource of(const at::Tensor& x) { return DoubleSource{x.data_ptr<double>()}; }
  const double* block(std::int64_t begin, std::int64_t, double*) const { return f64 + begin; }
};

// Float32 sources: quiet_float on the raw elements where there is a function for the pairing (in
// AVX2 registers where the CPU has F16C), else on the block widened to float32 (float16 by F16C
// where the CPU has it); then quiet_double and the scalar pass on the widened block. A thread that
// flushes subnormals goes by quiet_double alone.
template <class Source>
void scan_blocks(ElementStats& s, const Source& rs_in, const Source& ts_in, std::int64_t n) {
  using V = typename Source::value_type;
  alignas(64) V rbuf[kBlock], tbuf[kBlock];
  Source rs = rs_in, ts = ts_in;
  [[maybe_unused]] bool gradual = false;
  [[maybe_unused]] QuietFloat on_raw = nullptr, on_widened = nullptr;
  if constexpr (std::is_same_v<Source, FloatSource>) {
    gradual = !flushes_subnormals();
    const bool f16c = gradual && has_f16c() && (rs.dtype == at::kHalf || ts.dtype == at::kHalf);
    rs.f16c = ts.f16c = f16c;
    // The in-register predicates where the CPU has AVX2 and F16C, else the portable ones
    // compiled for the baseline and AVX2.
    if (gradual && has_f16c()) on_raw = quiet_lanes_for(rs.dtype, ts.dtype);
    if (gradual && !on_raw) on_raw = quiet_float_for(rs.dtype, ts.dtype);
    const bool both_16_bits = rs.dtype != at::kFloat && ts.dtype != at::kFloat;
    if (gradual && !on_raw) on_widened = both_16_bits ? quiet_f32_f32_ties : quiet_f32_f32;
  }
  for (std::int64_t begin = 0; begin < n; begin += kBlock) {
    const std::int64_t len = std::min(kBlock, n - begin);
    const Thresholds th{s.atol, s.rtol, s.max_abs, s.max_rel};
    if constexpr (std::is_same_v<Source, FloatSource>) {
      if (on_raw && on_raw(rs.raw(begin), ts.raw(begin), len, FloatThresholds(th))) continue;
    }
    const V* r = rs.block(begin, len, rbuf);
    const V* t = ts.block(begin, len, tbuf);
    if constexpr (std::is_same_v<Source, FloatSource>) {
      if (on_widened && on_widened(r, t, len, FloatThresholds(th))) continue;
    }
    if (quiet_double(r, t, len, th)) continue;
    s.scan(r, t, begin, len);
  }
}

}  // namespace

void ElementStats::scan_fast(const at::Tensor& r, const at::Tensor& t) {
  if (r.scalar_type() == at::kDouble)
    scan_blocks(*this, DoubleSource::of(r), DoubleSource::of(t), r.numel());
  else
    scan_blocks(*this, FloatSource::of(r), FloatSource::of(t), r.numel());
}

bool fast_pair(c10::ScalarType rt, c10::ScalarType tt, const Tolerance& tol) {
  auto narrow = [](c10::ScalarType s) { return s == at::kFloat || s == at::kHalf || s == at::kBFloat16; };
  const bool tol_ok = tol.atol >= 0 && tol.rtol >= 0 && std::isfinite(tol.atol) && std::isfinite(tol.rtol);
  return tol_ok && ((narrow(rt) && narrow(tt)) || (rt == at::kDouble && tt == at::kDouble));
}

}  // namespace mpscheck::compare_detail

#include "checks/compare.hpp"

#include "util/text.hpp"

#include <ATen/core/grad_mode.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace mpscheck {

namespace {

std::string shape_string(at::IntArrayRef s) {
  return fmt::format("[{}]", fmt::join(s.begin(), s.end(), ", "));
}

bool is_reduced(c10::ScalarType t) { return t == c10::kHalf || t == c10::kBFloat16; }
bool is_integral(c10::ScalarType t) { return !c10::isFloatingType(t) && !c10::isComplexType(t); }

// The element-wise statistics of one comparison, gathered in a single pass.
struct ElementStats {
  explicit ElementStats(const Tolerance& tol) : atol(tol.atol), rtol(tol.rtol) {}
  double atol, rtol;
  std::int64_t nan_r = 0, nan_t = 0, inf_r = 0, inf_t = 0, bad = 0, first_bad = -1, worst = 0;
  double max_abs = -1, max_rel = 0;

  void finite_element(double diff, double mag, std::int64_t at) {
    const bool is_bad = diff > atol + rtol * mag;
    if (mag > atol) max_rel = std::max(max_rel, diff / mag);
    count(is_bad, diff, at);
  }
  // Non-finite positions agree only when both sides hold the same non-finite value.
  void nonfinite_element(bool nan_rv, bool nan_tv, bool inf_rv, bool inf_tv, bool same, std::int64_t at) {
    nan_r += nan_rv, nan_t += nan_tv;
    inf_r += inf_rv, inf_t += inf_tv;
    count(!same, 0, at);
  }
  void count(bool is_bad, double diff, std::int64_t at) {
    if (is_bad) {
      if (first_bad < 0) first_bad = at;
      ++bad;
    }
    if (diff > max_abs) max_abs = diff, worst = at;
  }

  template <class T>
  void scan(const T* r, const T* t, std::int64_t offset, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_integral_v<T>) {
        // Exact: int64 beyond 2^53 is not rounded through double.
        const double diff = std::abs(static_cast<double>(t[i]) - static_cast<double>(r[i]));
        const double mag = std::abs(static_cast<double>(r[i]));
        if (mag > 0) max_rel = std::max(max_rel, diff / mag);
        count(r[i] != t[i], diff, offset + i);
      } else {
        const double rv = static_cast<double>(r[i]), tv = static_cast<double>(t[i]);
        if (std::isfinite(rv) && std::isfinite(tv)) {
          finite_element(std::abs(tv - rv), std::abs(rv), offset + i);
        } else {
          const bool rn = std::isnan(rv), tn = std::isnan(tv);
          nonfinite_element(rn, tn, std::isinf(rv), std::isinf(tv), (rn && tn) || (std::isinf(rv) && rv == tv),
                            offset + i);
        }
      }
    }
  }

  // Complex values: both parts count, |t - r| is the modulus of the difference.
  void scan_complex(const c10::complex<double>* r, const c10::complex<double>* t, std::int64_t offset,
                    std::int64_t n) {
    auto same = [](double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; };
    for (std::int64_t i = 0; i < n; ++i) {
      const double rr = r[i].real(), ri = r[i].imag(), tr = t[i].real(), ti = t[i].imag();
      if (std::isfinite(rr) && std::isfinite(ri) && std::isfinite(tr) && std::isfinite(ti)) {
        finite_element(std::hypot(tr - rr, ti - ri), std::hypot(rr, ri), offset + i);
      } else {
        const bool rn = std::isnan(rr) || std::isnan(ri), tn = std::isnan(tr) || std::isnan(ti);
        nonfinite_element(rn, tn, !rn && (std::isinf(rr) || std::isinf(ri)), !tn && (std::isinf(tr) || std::isinf(ti)),
                          same(rr, tr) && same(ri, ti), offset + i);
      }
    }
  }

  // The fast pass over contiguous float32/float16/bfloat16 (or float64) pairs; defined below.
  template <class Source>
  void scan_fast(const Source& r, const Source& t, std::int64_t n);

  void fill(OutputReport& o) const {
    o.nan_reference = nan_r, o.nan_target = nan_t, o.inf_reference = inf_r, o.inf_target = inf_t;
    o.mismatches = bad, o.first_mismatch = first_bad, o.max_abs = std::max(max_abs, 0.0), o.max_rel = max_rel;
  }
};

// ---- The fast pass ----
//
// Most blocks of a comparison change nothing: no element is non-finite, none is outside the
// tolerance, none is further off than the largest error seen so far, none has a larger relative
// error. The fast pass asks only that question, block by block, with a predicate that is
// conservative (it may call a quiet block loud, never a loud block quiet), and hands every loud
// block to ElementStats::scan above, the scalar pass, which then records exactly what it always
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
    if (dtype == at::kBFloat16) widen_bfloat16(bits, buffer, len);
    else if (f16c) widen_half_f16c(bits, buffer, len);
    else widen_half(bits, buffer, len);
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
void ElementStats::scan_fast(const Source& rs_in, const Source& ts_in, std::int64_t n) {
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
    const Thresholds th{atol, rtol, max_abs, max_rel};
    if constexpr (std::is_same_v<Source, FloatSource>) {
      if (on_raw && on_raw(rs.raw(begin), ts.raw(begin), len, FloatThresholds(th))) continue;
    }
    const V* r = rs.block(begin, len, rbuf);
    const V* t = ts.block(begin, len, tbuf);
    if constexpr (std::is_same_v<Source, FloatSource>) {
      if (on_widened && on_widened(r, t, len, FloatThresholds(th))) continue;
    }
    if (quiet_double(r, t, len, th)) continue;
    scan(r, t, begin, len);
  }
}

// Whether compare_tensors may take the fast pass: float32/float16/bfloat16 on both sides (any
// pairing), or float64 on both, with a tolerance the predicates' argument covers.
bool fast_pair(c10::ScalarType rt, c10::ScalarType tt, const Tolerance& tol) {
  auto narrow = [](c10::ScalarType s) { return s == at::kFloat || s == at::kHalf || s == at::kBFloat16; };
  const bool tol_ok = tol.atol >= 0 && tol.rtol >= 0 && std::isfinite(tol.atol) && std::isfinite(tol.rtol);
  return tol_ok && ((narrow(rt) && narrow(tt)) || (rt == at::kDouble && tt == at::kDouble));
}

// A value for messages; a complex value gives its real part (the note carries both parts).
double value_at(const at::Tensor& flat, std::int64_t i) {
  const at::Tensor v = flat[i];
  if (v.is_complex()) return v.item<c10::complex<double>>().real();
  return v.item<double>();
}
std::string complex_at(const at::Tensor& flat, std::int64_t i) {
  const auto c = flat[i].item<c10::complex<double>>();
  return fmt::format("{:.6g}{:+.6g}i", c.real(), c.imag());
}

// Whether the target may return `target` for a reference output of dtype `reference`.
bool dtype_allowed(c10::ScalarType reference, c10::ScalarType target, c10::ScalarType reduced) {
  if (reference == target) return true;
  if (reduced == c10::ScalarType::Undefined) return false;
  if (c10::isFloatingType(reference) && target == reduced) return true;
  // float16 has a complex counterpart (ComplexHalf); bfloat16 has none.
  return reduced == c10::kHalf && c10::isComplexType(reference) && target == c10::kComplexHalf;
}

// Fills the shape/dtype fields; false (with o.ok and o.note set) when the values cannot be compared.
bool prepare(OutputReport& o, const at::Tensor& reference, const at::Tensor& target) {
  if (!reference.defined() || !target.defined()) {
    o.ok = reference.defined() == target.defined();
    if (!o.ok) o.note = reference.defined() ? "missing on the target" : "missing on the reference";
    return false;
  }
  o.shape.assign(reference.sizes().begin(), reference.sizes().end());
  o.reference_dtype = c10::toString(reference.scalar_type());
  o.target_dtype = c10::toString(target.scalar_type());
  o.numel = reference.numel();
  if (reference.sizes() != target.sizes()) {
    o.ok = false;
    o.note = fmt::format("shape differs: reference {} vs target {}", shape_string(reference.sizes()),
                         shape_string(target.sizes()));
    return false;
  }
  return true;
}

}  // namespace

std::string index_string(std::int64_t flat, const std::vector<std::int64_t>& shape) {
  if (shape.empty()) return "[]";
  std::vector<std::int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    const std::int64_t n = std::max<std::int64_t>(shape[d], 1);
    idx[d] = flat % n;
    flat /= n;
  }
  return fmt::format("[{}]", fmt::join(idx, ", "));
}

double unit_roundoff(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::kHalf: return std::ldexp(1.0, -11);
    case c10::kBFloat16: return std::ldexp(1.0, -8);
    case c10::kDouble: return std::ldexp(1.0, -53);
    default: return std::ldexp(1.0, -24);
  }
}

OutputReport compare_tensors(const std::string& name, const at::Tensor& reference, const at::Tensor& target,
                             const Tolerance& tol_in, c10::ScalarType reduced) {
  OutputReport o;
  o.name = name;
  if (!prepare(o, reference, target)) return o;
  const c10::ScalarType rt = reference.scalar_type(), tt = target.scalar_type();
  const bool dtype_ok = dtype_allowed(rt, tt, reduced);
  const bool integral = is_integral(rt) && is_integral(tt);
  const bool complex = c10::isComplexType(rt) || c10::isComplexType(tt);
  // Integer and bool results are exact contracts, whatever the compute dtype's tolerance.
  const Tolerance tol = is_integral(rt) ? Tolerance{0, 0} : tol_in;
  if (integral) o.rule = "exact";
  auto finish = [&] {
    if (!dtype_ok) {
      o.ok = false;
      o.note = fmt::format("dtype differs: reference {} vs target {}{}", o.reference_dtype, o.target_dtype,
                           o.note.empty() ? "" : "; " + o.note);
    }
    return o;
  };
  if (o.numel == 0) return finish();

  at::NoGradGuard no_grad;
  const at::Tensor ref = reference.detach().to(at::kCPU).reshape({-1});
  const at::Tensor tgt = target.detach().to(at::kCPU).reshape({-1});

  // float32/float16/bfloat16 pairs (and float64 pairs) take the fast pass over contiguous memory
  // (a strided input is copied to contiguous memory first, as reshape or contiguous() do).
  const bool fast = !integral && !complex && fast_pair(rt, tt, tol);

  // Bit-identical outputs (the reference against itself, or an identical device) need no element
  // pass: equal() is false wherever a NaN is, so only infinities are left to count. The fast pass
  // needs no such shortcut (a bit-identical block is quiet); it reproduces the figures below.
  if (!fast && rt == tt && at::equal(ref, tgt)) {
    o.inf_reference = o.inf_target = ref.is_floating_point() ? ref.isinf().sum().item<std::int64_t>() : 0;
    o.reference_value = o.target_value = value_at(ref, 0);
    return finish();
  }

  // One pass over the elements. float32/float64 pairs are read in place; integer pairs as int64;
  // complex pairs as complex double; the rest (half, bfloat16, mixed) in double. Conversions go 1M
  // elements at a time so the temporary stays small whatever the output's size (a VGG-16's
  // parameters are 138M elements).
  ElementStats stats(tol);
  const bool same_native = rt == tt && (rt == at::kFloat || rt == at::kDouble);
  if (fast) {
    const at::Tensor r = ref.contiguous(), t = tgt.contiguous();
    if (rt == at::kDouble) stats.scan_fast(DoubleSource::of(r), DoubleSource::of(t), o.numel);
    else stats.scan_fast(FloatSource::of(r), FloatSource::of(t), o.numel);
  } else if (same_native) {
    const at::Tensor r = ref.contiguous(), t = tgt.contiguous();
    if (rt == at::kFloat) stats.scan(r.data_ptr<float>(), t.data_ptr<float>(), 0, o.numel);
    else stats.scan(r.data_ptr<double>(), t.data_ptr<double>(), 0, o.numel);
  } else {
    constexpr std::int64_t kChunk = std::int64_t{1} << 20;
    const c10::ScalarType wide = integral ? at::kLong : complex ? at::kComplexDouble : at::kDouble;
    for (std::int64_t begin = 0; begin < o.numel; begin += kChunk) {
      const std::int64_t len = std::min(kChunk, o.numel - begin);
      const at::Tensor r = ref.narrow(0, begin, len).to(wide).contiguous();
      const at::Tensor t = tgt.narrow(0, begin, len).to(wide).contiguous();
      if (integral) stats.scan(r.data_ptr<std::int64_t>(), t.data_ptr<std::int64_t>(), begin, len);
      else if (complex) stats.scan_complex(r.data_ptr<c10::complex<double>>(), t.data_ptr<c10::complex<double>>(), begin, len);
      else stats.scan(r.data_ptr<double>(), t.data_ptr<double>(), begin, len);
    }
  }
  stats.fill(o);
  const std::int64_t worst = stats.worst;
  o.ok = o.mismatches == 0;
  // What the at::equal shortcut above records for bit-identical outputs (only the fast pass gets
  // here with them): the reference's first value on both sides, so a -0.0 in the target's first
  // element reads as the reference's 0.0, as it always has.
  if (fast && rt == tt && o.ok && o.nan_reference == 0 && o.nan_target == 0 && stats.max_abs == 0) {
    o.reference_value = o.target_value = value_at(ref, 0);
    return finish();
  }
  // Show where it went most wrong: the first bad element when some value is non-finite there.
  auto finite_at = [&](const at::Tensor& x, std::int64_t i) {
    if (x.is_complex()) {
      const auto c = x[i].item<c10::complex<double>>();
      return std::isfinite(c.real()) && std::isfinite(c.imag());
    }
    return std::isfinite(x[i].item<double>());
  };
  const std::int64_t shown =
      (o.first_mismatch >= 0 && !(finite_at(ref, o.first_mismatch) && finite_at(tgt, o.first_mismatch)))
          ? o.first_mismatch : worst;
  o.reference_value = value_at(ref, shown);
  o.target_value = value_at(tgt, shown);
  if (complex) {
    o.rule = "complex";
    o.note = fmt::format("complex values at {}: reference {}, target {}", index_string(shown, o.shape),
                         complex_at(ref, shown), complex_at(tgt, shown));
  } else if (o.mismatches > 0 && o.first_mismatch >= 0 && shown != worst) {
    o.note = fmt::format("first bad element at {}", index_string(shown, o.shape));
  }
  return finish();
}

OutputReport compare_index(const std::string& name, const at::Tensor& reference, const at::Tensor& target,
                           const at::Tensor& source, std::int64_t dim, bool flat) {
  OutputReport o;
  o.name = name;
  o.rule = "index";
  if (!prepare(o, reference, target)) return o;
  if (reference.scalar_type() != target.scalar_type()) {
    o.ok = false;
    o.note = fmt::format("dtype differs: reference {} vs target {}", o.reference_dtype, o.target_dtype);
    return o;
  }
  if (o.numel == 0) return o;
  at::NoGradGuard no_grad;
  const at::Tensor src = source.detach().to(at::kCPU);
  at::Tensor ri = reference.detach().to(at::kCPU).to(at::kLong), ti = target.detach().to(at::kCPU).to(at::kLong);
  // The range along the indexed dimension: an out-of-range index is wrong whatever it gathers.
  const std::int64_t extent = flat ? src.numel() : src.size(dim);
  const at::Tensor tflat = ti.reshape({-1});
  const at::Tensor out_of_range = (tflat < 0) | (tflat >= extent);
  const at::Tensor pos = out_of_range.nonzero();
  if (pos.numel() > 0) {
    const std::int64_t first = pos[0][0].item<std::int64_t>();
    o.ok = false;
    o.mismatches = pos.size(0);
    o.first_mismatch = first;
    o.reference_value = static_cast<double>(ri.reshape({-1})[first].item<std::int64_t>());
    o.target_value = static_cast<double>(tflat[first].item<std::int64_t>());
    o.max_abs = std::abs(o.target_value - o.reference_value);
    o.note = fmt::format("index {} at {} is out of range (size {})", static_cast<std::int64_t>(o.target_value),
                         index_string(first, o.shape), extent);
    return o;
  }
  // What each index selects from the target's own input.
  auto pick = [&](const at::Tensor& idx) {
    if (flat) return src.reshape({-1}).index_select(0, idx.reshape({-1})).reshape(idx.sizes());
    const std::int64_t d = dim < 0 ? dim + src.dim() : dim;
    const bool reduced_dim = idx.dim() == src.dim() - 1;
    const at::Tensor i = reduced_dim ? idx.unsqueeze(d) : idx;
    // gather needs equal sizes outside `d`: a strided source is fine, a broadcast one is expanded.
    at::Tensor g = src.gather(d, i);
    return reduced_dim ? g.squeeze(d) : g;
  };
  const OutputReport by_value = compare_tensors(name, pick(ri), pick(ti), Tolerance{0, 0});
  o.mismatches = by_value.mismatches;
  o.first_mismatch = by_value.first_mismatch;
  o.ok = by_value.ok;
  const at::Tensor rflat = ri.reshape({-1});
  const std::int64_t shown = o.first_mismatch >= 0 ? o.first_mismatch : 0;
  o.reference_value = static_cast<double>(rflat[shown].item<std::int64_t>());
  o.target_value = static_cast<double>(tflat[shown].item<std::int64_t>());
  o.max_abs = (rflat - tflat).abs().max().item<double>();
  if (!o.ok)
    o.note = fmt::format("at {} the target's index {} selects {:.6g}, the reference's index {} selects {:.6g}",
                         index_string(shown, o.shape), static_cast<std::int64_t>(o.target_value),
                         by_value.target_value, static_cast<std::int64_t>(o.reference_value), by_value.reference_value);
  else if (o.max_abs > 0)
    o.note = "indices differ only between tied values";
  return o;
}

OutputReport compare_statistics(const std::string& name, const at::Tensor& reference, const at::Tensor& target,
                                const at::Tensor& se_reference, const at::Tensor& /*se_target*/, double sigmas,
                                double unit) {
  // The statistics' own dtype is no contract: any floating dtype will do.
  const c10::ScalarType any_float = target.defined() && c10::isFloatingType(target.scalar_type())
                                        ? target.scalar_type() : c10::ScalarType::Undefined;
  OutputReport o = compare_tensors(name, reference, target, Tolerance{0, 0}, any_float);
  o.rule = "statistics";
  if (!reference.defined() || !target.defined() || reference.sizes() != target.sizes() || o.numel == 0) return o;
  at::NoGradGuard no_grad;
  const at::Tensor r = reference.detach().to(at::kCPU, at::kDouble).reshape({-1});
  const at::Tensor t = target.detach().to(at::kCPU, at::kDouble).reshape({-1});
  const at::Tensor se_r = se_reference.defined() && se_reference.numel() == o.numel
                              ? se_reference.detach().to(at::kCPU, at::kDouble).reshape({-1})
                              : at::zeros_like(r);
  // The difference of two samples of one distribution has sqrt(2) times one sample's standard
  // error; the reference's sample is the one trusted to measure it.
  const at::Tensor se = std::sqrt(2.0) * se_r;
  // Rounding moves a sampled statistic (a mean, a fraction) by a few units of its own size; a
  // statistic with no sampling error (an extreme, a scale-back error) by a few units of the
  // sample's values, taken as at least 1.
  const at::Tensor allowed = sigmas * se + unit * at::where(se_r > 0, r.abs(), at::clamp_min(r.abs(), 1.0));
  const at::Tensor diff = (t - r).abs();
  // Non-finite statistics must agree exactly (compare_tensors above counted them).
  const at::Tensor bad = at::where(r.isfinite() & t.isfinite(), diff > allowed, ~(r.eq(t) | (r.isnan() & t.isnan())));
  o.mismatches = bad.sum().item<std::int64_t>();
  o.ok = o.mismatches == 0 && o.note.rfind("dtype differs", 0) != 0;
  if (o.ok) o.note.clear();
  o.first_mismatch = -1;
  if (o.mismatches > 0) {
    const std::int64_t i = bad.nonzero()[0][0].item<std::int64_t>();
    o.first_mismatch = i;
    o.reference_value = r[i].item<double>();
    o.target_value = t[i].item<double>();
    o.note = fmt::format("statistic {} differs by {:.3g}, {:.1f} standard errors of the reference's sample "
                         "(allowed {:.3g}: {} sigmas plus rounding)",
                         index_string(i, o.shape), diff[i].item<double>(),
                         se[i].item<double>() > 0 ? diff[i].item<double>() / se[i].item<double>() : 0.0,
                         allowed[i].item<double>(), sigmas);
  }
  return o;
}

double finite_rms(const at::Tensor& x) {
  if (!x.defined() || x.numel() == 0 || !(x.is_floating_point() || is_integral(x.scalar_type()))) return 0;
  at::NoGradGuard no_grad;
  const at::Tensor d = x.detach().to(at::kCPU, at::kDouble).reshape({-1}).contiguous();
  ScaledSquares s;
  const double* p = d.const_data_ptr<double>();
  for (std::int64_t i = 0; i < d.numel(); ++i)
    if (std::isfinite(p[i])) s.add(p[i]);
  return s.rms();
}

SignedBias signed_bias(const at::Tensor& reference, const at::Tensor& target) {
  SignedBias b;
  if (!reference.defined() || !target.defined() || reference.sizes() != target.sizes() ||
      !reference.is_floating_point() || !target.is_floating_point() || reference.numel() == 0)
    return b;
  at::NoGradGuard no_grad;
  const at::Tensor r = reference.detach().to(at::kCPU, at::kDouble).reshape({-1}).contiguous();
  const at::Tensor t = target.detach().to(at::kCPU, at::kDouble).reshape({-1}).contiguous();
  const double *rp = r.const_data_ptr<double>(), *tp = t.const_data_ptr<double>();
  const std::int64_t n = r.numel();
  double signed_sum = 0, magnitude = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(rp[i]) || !std::isfinite(tp[i])) continue;
    signed_sum += (tp[i] - rp[i]) * (rp[i] < 0 ? -1.0 : 1.0);
    magnitude += std::abs(rp[i]);
    ++b.n;
  }
  if (magnitude == 0 || !std::isfinite(magnitude)) return b;
  b.mean = signed_sum / magnitude;
  // The spread of the per-element errors around that mean, over the same weight.
  ScaledSquares residual;
  for (std::int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(rp[i]) || !std::isfinite(tp[i])) continue;
    residual.add((tp[i] - rp[i]) * (rp[i] < 0 ? -1.0 : 1.0) - b.mean * std::abs(rp[i]));
  }
  b.se = residual.root_sum() / magnitude;
  return b;
}

namespace {

// The largest finite value of `dtype` plus half a unit in the last place there: a float64 value
// beyond it rounds to infinity in that dtype.
double overflow_threshold(c10::ScalarType dtype) {
  double max = 0;
  switch (dtype) {
    case c10::kHalf: max = 65504.0; break;
    case c10::kBFloat16: max = static_cast<double>(std::numeric_limits<c10::BFloat16>::max()); break;
    case c10::kFloat: max = static_cast<double>(std::numeric_limits<float>::max()); break;
    default: return std::numeric_limits<double>::infinity();
  }
  return max + std::ldexp(unit_roundoff(dtype), std::ilogb(max));
}

double largest_finite(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::kHalf: return 65504.0;
    case c10::kBFloat16: return static_cast<double>(std::numeric_limits<c10::BFloat16>::max());
    case c10::kFloat: return static_cast<double>(std::numeric_limits<float>::max());
    default: return std::numeric_limits<double>::max();
  }
}

// Magnitude bins of the per-element rule: one per binade of |g| (frexp's exponent), zero in bin 0.
constexpr int kBinOffset = 1100, kBins = 2200;
int magnitude_bin(double g) {
  if (g == 0) return 0;
  int e = 0;
  std::frexp(g, &e);
  return std::clamp(e + kBinOffset, 1, kBins - 1);
}

// A rule's figure over its allowance: 0 for nothing at all, infinite for something where nothing
// is allowed.
double excess_of(double figure, double allowed) {
  if (!(figure > 0)) return std::isnan(figure) ? std::numeric_limits<double>::infinity() : 0.0;
  return allowed > 0 ? figure / allowed : std::numeric_limits<double>::infinity();
}

}  // namespace

Attribution attribute_with_gold(const at::Tensor& gold, const at::Tensor& reference, const at::Tensor& target,
                                c10::ScalarType target_dtype, const Tolerance& tol, const at::Tensor& rounded,
                                const at::Tensor& witness) {
  Attribution a;
  if (!gold.defined() || !reference.defined() || !target.defined() || gold.sizes() != target.sizes() ||
      gold.sizes() != reference.sizes())
    return a;
  if (!c10::isFloatingType(gold.scalar_type()) || !c10::isFloatingType(target.scalar_type()) ||
      !c10::isFloatingType(reference.scalar_type()))
    return a;  // integers are exact contracts and complex values have no gold rule: never forgiven
  at::NoGradGuard no_grad;
  const bool reduced = is_reduced(target_dtype);
  a.dtype = target_dtype == c10::kHalf ? "float16" : target_dtype == c10::kBFloat16 ? "bfloat16" : "float32";
  const std::int64_t n = gold.numel();
  const at::Tensor g_all = gold.detach().to(at::kCPU).reshape({-1});
  const at::Tensor r_all = reference.detach().to(at::kCPU).reshape({-1});
  const at::Tensor t_all = target.detach().to(at::kCPU).reshape({-1});
  const bool usable = rounded.defined() && rounded.sizes() == gold.sizes();
  const at::Tensor b_all = usable ? rounded.detach().to(at::kCPU).reshape({-1}) : g_all;
  // The CPU's own run in the target dtype (accelerator targets only): every intermediate rounded
  // as an honest device rounds it. Without one, the witness is gold itself and adds nothing.
  const bool witnessed = reduced && witness.defined() && witness.sizes() == gold.sizes() &&
                         c10::isFloatingType(witness.scalar_type());
  a.witnessed = witnessed;
  const at::Tensor w_all = witnessed ? witness.detach().to(at::kCPU).reshape({-1}) : g_all;
  const c10::ScalarType rounding_dtype =
      reduced ? target_dtype : target.scalar_type() == at::kDouble ? at::kFloat : target.scalar_type();
  const double u = unit_roundoff(rounding_dtype);
  // Gold beyond what the target dtype can hold (float32's -3.4e38 mask is float64's -1.8e308):
  // a non-finite position, never a finite difference of 1e308.
  const c10::ScalarType range_dtype = target_dtype == at::kDouble ? at::kDouble : rounding_dtype;
  const double beyond = overflow_threshold(range_dtype), extreme = largest_finite(range_dtype);
  auto representable = [&](double g) { return std::isfinite(g) && std::abs(g) < beyond; };
  // The chunks of the four tensors in double (b rounded to the target dtype), 1M elements at a time.
  constexpr std::int64_t kChunk = std::int64_t{1} << 20;
  auto chunk = [&](const at::Tensor& x, std::int64_t begin, std::int64_t len, bool round) {
    at::Tensor c = x.narrow(0, begin, len);
    if (round) c = c.to(target_dtype);
    return c.to(at::kDouble).contiguous();
  };
  // Hands `pass` each chunk: its first element's index, its length, and its gold, reference,
  // target, baseline and witness elements.
  auto for_each_chunk = [&](auto&& pass) {
    for (std::int64_t begin = 0; begin < n; begin += kChunk) {
      const std::int64_t len = std::min(kChunk, n - begin);
      const at::Tensor gc = chunk(g_all, begin, len, false), rc = chunk(r_all, begin, len, false),
                       tc = chunk(t_all, begin, len, false), bc = chunk(b_all, begin, len, reduced),
                       wc = chunk(w_all, begin, len, false);
      pass(begin, len, gc.const_data_ptr<double>(), rc.const_data_ptr<double>(), tc.const_data_ptr<double>(),
           bc.const_data_ptr<double>(), wc.const_data_ptr<double>());
    }
  };
  const double inf = std::numeric_limits<double>::infinity();
  // The honest error at an element: float32's, and for reduced precision the rounded baseline's
  // and the witness's.
  auto local_error = [&](double g, double r, double b, double w) {
    double local = std::isfinite(r) ? std::abs(r - g) : 0.0;
    if (reduced && std::isfinite(b)) local = std::max(local, std::abs(b - g));
    if (reduced && std::isfinite(w)) local = std::max(local, std::abs(w - g));
    return local;
  };

  // Pass 1: the RMSEs (each over the elements where gold is representable and that side finite),
  // the honest error per magnitude bin, and the signed sums of the bias rule.
  ScaledSquares sr, st, sb, sw, sg, honest;
  std::vector<ScaledSquares> bins(reduced ? kBins : 0);
  std::vector<double> bin_max(reduced ? kBins : 0, 0.0);
  // Per magnitude bin, for the band rule: the target's errors and the elements' magnitudes.
  std::vector<ScaledSquares> target_bins(reduced ? kBins : 0), gold_bins(reduced ? kBins : 0);
  double bias_t = 0, bias_r = 0, bias_b = 0, bias_w = 0, magnitude = 0;
  bool r_nonfinite = false, t_nonfinite = false;
  for_each_chunk([&](std::int64_t, std::int64_t len, const double* g, const double* r, const double* t,
                     const double* b, const double* w) {
    for (std::int64_t i = 0; i < len; ++i) {
      if (!representable(g[i])) {
        // No part in the sums; a side that is non-finite there still has an infinite RMSE, as a figure.
        if (std::isfinite(g[i])) r_nonfinite |= !std::isfinite(r[i]), t_nonfinite |= !std::isfinite(t[i]);
        continue;
      }
      const double sign = g[i] < 0 ? -1.0 : 1.0;
      if (std::isfinite(r[i])) sr.add(r[i] - g[i]), bias_r += (r[i] - g[i]) * sign;
      else r_nonfinite = true;
      if (std::isfinite(t[i])) st.add(t[i] - g[i]), bias_t += (t[i] - g[i]) * sign;
      else t_nonfinite = true;
      if (!reduced) continue;
      if (std::isfinite(b[i])) sb.add(b[i] - g[i]), bias_b += (b[i] - g[i]) * sign;
      if (witnessed && std::isfinite(w[i])) sw.add(w[i] - g[i]), bias_w += (w[i] - g[i]) * sign;
      sg.add(g[i]);
      const double local = local_error(g[i], r[i], b[i], w[i]);
      const int bin = magnitude_bin(g[i]);
      bins[bin].add(local);
      bin_max[bin] = std::max(bin_max[bin], local);
      gold_bins[bin].add(g[i]);
      target_bins[bin].add(std::isfinite(t[i]) ? t[i] - g[i] : 0.0);
      honest.add(local);
      magnitude += std::abs(g[i]);
    }
  });
  a.measured = true;
  a.rmse_reference = r_nonfinite ? inf : sr.rms();
  a.rmse_target = t_nonfinite ? inf : st.rms();
  a.baseline = std::max({sr.rms(), reduced ? sb.rms() : 0.0, witnessed ? sw.rms() : 0.0});
  a.multiplier = (reduced || n < 32) ? 3.0 : 2.0;
  // Non-finite target elements are judged one by one below; the RMSE rule takes the finite ones.
  // Reduced precision also allows, in aggregate, what the per-element rule allows each element for
  // the dtype's own rounding (a few units of |g|): an honest kernel may round each element
  // differently from the baseline, by a unit or two.
  // The rounding below the normal range: the smallest subnormal.
  // A float16/bfloat16 computation rounds to that dtype's subnormals even when its output is stored
  // wider (a float32 output of a float16 product): the coarser of the two.
  auto smallest_subnormal = [](c10::ScalarType t) {
    return t == at::kHalf ? std::ldexp(1.0, -24) : t == at::kBFloat16 ? std::ldexp(1.0, -133)
                                               : t == at::kFloat      ? std::ldexp(1.0, -149)
                                                                      : 0.0;
  };
  const double tiny =
      std::max(smallest_subnormal(target.scalar_type()), reduced ? smallest_subnormal(target_dtype) : 0.0);
  const double rounding_rms = reduced ? tol.chains * kRoundingUnits * (u * sg.rms() + tiny) : 0.0;
  const double rmse_allowed = a.multiplier * a.baseline + tol.atol + rounding_rms;
  a.rmse_ok = st.rms() <= rmse_allowed;
  a.excess.rmse = excess_of(t_nonfinite ? inf : st.rms(), rmse_allowed);

  // Reduced precision: the spread allowed at a magnitude is the honest error of the elements of
  // that magnitude and below (pooled upwards until there are kMinMagnitudePool of them): the larger
  // of kSpreadMultiplier times their RMS and kPeakMultiplier times the largest of them. The RMS
  // alone undersells a cancellation: there honest errors are set by the terms, not the result, and
  // one honest run's error at an element does not bound another's, only the largest error the
  // honest runs show at that magnitude does.
  std::vector<double> pooled(reduced ? kBins : 0, 0.0);
  if (reduced) {
    std::vector<ScaledSquares> below(kBins);
    std::vector<double> peak_below(kBins, 0.0);
    for (int k = 0; k < kBins; ++k) {
      if (k > 0) below[k] = below[k - 1], peak_below[k] = peak_below[k - 1];
      below[k].merge(bins[k]);
      peak_below[k] = std::max(peak_below[k], bin_max[k]);
    }
    const std::int64_t need = std::min<std::int64_t>(kMinMagnitudePool, below[kBins - 1].n);
    int up = 0;
    for (int k = 0; k < kBins; ++k) {
      up = std::max(up, k);
      while (up < kBins - 1 && below[up].n < need) ++up;
      pooled[k] = std::max(kSpreadMultiplier * below[up].rms(), kPeakMultiplier * peak_below[up]);
    }
  }


  // The band rule: the target's RMS error over a band of magnitudes (binades grouped from the
  // smallest until kMinMagnitudePool elements) is within kBandMultiplier times the honest RMS
  // error there, plus the dtype's rounding of those elements. A band of elements all wrong by
  // half their value fails it even where the per-element rule's pooled peak, set by an honest
  // cancellation at that magnitude, forgives each one.
  if (reduced && !tol.trajectory) {
    ScaledSquares band_t, band_h, band_g;
    int band_first = -1;
    for (int k = 0; k < kBins; ++k) {
      if (target_bins[k].n == 0) continue;
      if (band_first < 0) band_first = k;
      band_t.merge(target_bins[k]), band_h.merge(bins[k]), band_g.merge(gold_bins[k]);
      if (band_t.n < kMinMagnitudePool && k < kBins - 1) continue;
      const double allowed =
          kBandMultiplier * band_h.rms() + tol.chains * kRoundingUnits * (u * band_g.rms() + tiny) + tol.atol;
      const double excess = excess_of(band_t.rms(), allowed);
      a.excess.band = std::max(a.excess.band, excess);
      if (band_t.rms() > allowed && excess > a.band_excess) {
        a.band_ok = false;
        a.band_excess = excess;
        a.band_low = band_first <= 0 ? 0.0 : std::ldexp(1.0, band_first - kBinOffset - 1);
        a.band_high = std::ldexp(1.0, k - kBinOffset);
        a.band_target_rms = band_t.rms();
        a.band_allowed = allowed;
        a.band_count = band_t.n;
      }
      band_t = band_h = band_g = ScaledSquares{};
      band_first = -1;
    }
  }

  // Pass 2: every element outside the plain tolerance against the float32 reference must be
  // within what float32 (or the rounded baseline) makes there, or the dtype's rounding there.
  const double global_spread = kSpreadMultiplier * a.baseline + tol.atol;
  for_each_chunk([&](std::int64_t begin, std::int64_t len, const double* g, const double* r, const double* t,
                     const double* b, const double* w) {
    for (std::int64_t i = 0; i < len; ++i) {
      bool bad;
      double allowed = 0;
      auto same = [](double x, double y) { return (std::isnan(x) && std::isnan(y)) || x == y; };
      if (std::isnan(g[i]) || std::isinf(g[i])) {
        bad = !same(t[i], g[i]) && !same(t[i], r[i]);
      } else if (!representable(g[i])) {
        // Beyond the dtype's range: an infinity or the dtype's extreme of gold's sign (a clamp to
        // finfo), or whatever float32 holds there.
        const bool saturated = !std::isnan(t[i]) && (t[i] < 0) == (g[i] < 0) && std::abs(t[i]) >= extreme;
        bad = !saturated && !same(t[i], r[i]);
      } else if (!std::isfinite(t[i])) {
        bad = !same(t[i], r[i]);  // no worse than float32's own overflow there
      } else {
        const double err = std::abs(t[i] - g[i]);
        if (std::isfinite(r[i]) && std::abs(t[i] - r[i]) <= tol.atol + tol.rtol * std::abs(r[i])) continue;
        const double local = local_error(g[i], r[i], b[i], w[i]);
        // Reduced precision: the local spread, plus the fast path's atol (scale-relative, and 0 for
        // outputs of one rounding per element).
        const double spread =
            reduced && !tol.trajectory ? pooled[magnitude_bin(g[i])] + tol.atol : global_spread;
        allowed = kElementMultiplier * local + spread + tol.chains * kRoundingUnits * (u * std::abs(g[i]) + tiny);
        bad = err > allowed;
        a.excess.element = std::max(a.excess.element, excess_of(err, allowed));
      }
      if (!bad) continue;
      if (allowed == 0) a.excess.element = inf;  // a non-finite position: no figure to widen
      if (a.first_bad < 0) {
        a.first_bad = begin + i;
        a.gold_value = g[i];
        a.target_value = t[i];
        a.allowed = allowed;
      }
      ++a.bad_elements;
    }
  });

  // The bias rule: a systematic error that honest rounding does not show.
  if (reduced && !tol.trajectory && magnitude > 0 && std::isfinite(magnitude)) {
    a.bias_target = bias_t / magnitude;
    a.bias_honest = std::max({std::abs(bias_r), std::abs(bias_b), std::abs(bias_w)}) / magnitude;
    const double count = static_cast<double>(std::max<std::int64_t>(honest.n, 1));
    a.bias_allowed = kBiasMultiplier * a.bias_honest + kBiasSigmas * honest.root_sum() / magnitude +
                     kBiasUnits * u * (1 + kRoundingUnits / std::sqrt(count));
    a.bias_ok = std::abs(a.bias_target) <= a.bias_allowed;
    a.excess.bias = excess_of(std::abs(a.bias_target), a.bias_allowed);
  }
  a.target_ok = a.rmse_ok && a.bad_elements == 0 && a.bias_ok && a.band_ok;
  return a;
}

void FamilyEnvelope::add(const Attribution& witness) {
  if (!witness.measured) return;
  auto widen = [](double& worst, double figure) {
    if (std::isfinite(figure)) worst = std::max(worst, figure);
  };
  widen(worst.rmse, witness.excess.rmse);
  widen(worst.element, witness.excess.element);
  widen(worst.band, witness.excess.band);
  widen(worst.bias, witness.excess.bias);
}

bool within_family(const Attribution& target, const FamilyEnvelope& envelope) {
  if (!target.measured) return false;
  auto within = [](double figure, double worst) {
    return std::isfinite(figure) && figure <= std::max(kFamilyFloor, kFamilyMultiplier * worst);
  };
  return within(target.excess.rmse, envelope.worst.rmse) && within(target.excess.element, envelope.worst.element) &&
         within(target.excess.band, envelope.worst.band) && within(target.excess.bias, envelope.worst.bias);
}

double pooled_scale(const std::vector<std::pair<at::Tensor, at::Tensor>>& witness_target) {
  ScaledSquares w, t;
  for (const auto& [wv, tv] : witness_target) {
    if (!wv.defined() || !tv.defined() || wv.sizes() != tv.sizes() || wv.numel() == 0) continue;
    const double n = static_cast<double>(wv.numel());
    w.add(finite_rms(wv) * std::sqrt(n));
    t.add(finite_rms(tv) * std::sqrt(n));
  }
  const double ws = w.root_sum();
  return ws > 0 ? t.root_sum() / ws : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace mpscheck

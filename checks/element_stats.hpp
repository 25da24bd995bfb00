// The element-wise pass of compare_tensors, shared by its scalar half (compare.cpp) and its fast
// half over contiguous float32/float16/bfloat16/float64 memory (compare_fast.cpp). Private to checks/.
#pragma once

#include "checks/result.hpp"
#include "checks/tolerance.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

namespace mpscheck::compare_detail {

// The element-wise statistics of one comparison, gathered in a single pass.
struct ElementStats {
  explicit ElementStats(const Tolerance& tol) : atol(tol.atol), rtol(tol.rtol) {}
  double atol, rtol;
  std::int64_t nan_r = 0, nan_t = 0, inf_r = 0, inf_t = 0, bad = 0, first_bad = -1, worst = 0, nonfinite_bad = 0;
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
    nonfinite_bad += !same;
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
  void scan_complex(const c10::complex<double>* r, const c10::complex<double>* t, std::int64_t offset, std::int64_t n) {
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

  // The fast pass over contiguous float32/float16/bfloat16 (or float64) pairs (compare_fast.cpp):
  // r and t flattened, contiguous, of a pairing fast_pair accepts.
  void scan_fast(const at::Tensor& r, const at::Tensor& t);

  void fill(OutputReport& o) const {
    o.nan_reference = nan_r, o.nan_target = nan_t, o.inf_reference = inf_r, o.inf_target = inf_t;
    o.mismatches = bad, o.first_mismatch = first_bad, o.max_abs = std::max(max_abs, 0.0), o.max_rel = max_rel;
    o.nonfinite_mismatches = nonfinite_bad;
  }
};

// Whether compare_tensors may take the fast pass: float32/float16/bfloat16 on both sides (any
// pairing), or float64 on both, with a tolerance the predicates' argument covers.
bool fast_pair(c10::ScalarType rt, c10::ScalarType tt, const Tolerance& tol);

}  // namespace mpscheck::compare_detail

#include "checks/compare.hpp"

#include <mpscheck/dtype_names.hpp>

#include "checks/element_stats.hpp"

#include <ATen/core/grad_mode.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>

namespace mpscheck {

using compare_detail::ElementStats;
using compare_detail::fast_pair;

namespace {

std::string shape_string(at::IntArrayRef s) { return fmt::format("[{}]", fmt::join(s.begin(), s.end(), ", ")); }

bool is_integral(c10::ScalarType t) { return !c10::isFloatingType(t) && !c10::isComplexType(t); }

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
    if (!o.ok) o.differs = reference.defined() ? "missing" : "extra";
    return false;
  }
  o.shape.assign(reference.sizes().begin(), reference.sizes().end());
  o.reference_dtype = dtype_name(reference.scalar_type());
  o.target_dtype = dtype_name(target.scalar_type());
  o.numel = reference.numel();
  if (reference.sizes() != target.sizes()) {
    o.ok = false;
    o.differs = "shape";
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

double largest_difference(const at::Tensor& a, const at::Tensor& b) {
  if (!a.defined() || !b.defined()) return a.defined() == b.defined() ? 0 : std::numeric_limits<double>::infinity();
  const OutputReport d = compare_tensors("", a, b, Tolerance{0, 0});
  const bool comparable = a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type();
  return comparable && std::isfinite(d.max_abs) ? d.max_abs : std::numeric_limits<double>::infinity();
}

double unit_roundoff(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::kHalf: return std::ldexp(1.0, -11);
    case c10::kBFloat16: return std::ldexp(1.0, -8);
    case c10::kDouble: return std::ldexp(1.0, -53);
    default: return std::ldexp(1.0, -24);
  }
}

namespace {

// One pass over the elements. float32/float64 pairs are read in place; integer pairs as int64;
// complex pairs as complex double; the rest (half, bfloat16, mixed) in double. Conversions go 1M
// elements at a time so the temporary stays small whatever the output's size (a VGG-16's
// parameters are 138M elements).
void scan_elements(ElementStats& stats, const at::Tensor& ref, const at::Tensor& tgt, std::int64_t numel, bool fast,
                   bool integral, bool complex) {
  const c10::ScalarType rt = ref.scalar_type(), tt = tgt.scalar_type();
  const bool same_native = rt == tt && (rt == at::kFloat || rt == at::kDouble);
  if (fast) {
    stats.scan_fast(ref.contiguous(), tgt.contiguous());
  } else if (same_native) {
    const at::Tensor r = ref.contiguous(), t = tgt.contiguous();
    if (rt == at::kFloat)
      stats.scan(r.data_ptr<float>(), t.data_ptr<float>(), 0, numel);
    else
      stats.scan(r.data_ptr<double>(), t.data_ptr<double>(), 0, numel);
  } else {
    constexpr std::int64_t kChunk = std::int64_t{1} << 20;
    const c10::ScalarType wide = integral ? at::kLong : complex ? at::kComplexDouble : at::kDouble;
    for (std::int64_t begin = 0; begin < numel; begin += kChunk) {
      const std::int64_t len = std::min(kChunk, numel - begin);
      const at::Tensor r = ref.narrow(0, begin, len).to(wide).contiguous();
      const at::Tensor t = tgt.narrow(0, begin, len).to(wide).contiguous();
      if (integral)
        stats.scan(r.data_ptr<std::int64_t>(), t.data_ptr<std::int64_t>(), begin, len);
      else if (complex)
        stats.scan_complex(r.data_ptr<c10::complex<double>>(), t.data_ptr<c10::complex<double>>(), begin, len);
      else
        stats.scan(r.data_ptr<double>(), t.data_ptr<double>(), begin, len);
    }
  }
}

}  // namespace

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
  if (integral) o.rule = Rule::Exact;
  auto finish = [&] {
    if (!dtype_ok) {
      o.ok = false;
      o.dtype_differs = true;
      o.differs = "dtype";
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

  ElementStats stats(tol);
  scan_elements(stats, ref, tgt, o.numel, fast, integral, complex);
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
          ? o.first_mismatch
          : worst;
  o.reference_value = value_at(ref, shown);
  o.target_value = value_at(tgt, shown);
  if (complex) {
    o.rule = Rule::Complex;
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
  o.rule = Rule::Index;
  if (!prepare(o, reference, target)) return o;
  if (reference.scalar_type() != target.scalar_type()) {
    o.ok = false;
    o.dtype_differs = true;
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
                         index_string(shown, o.shape), static_cast<std::int64_t>(o.target_value), by_value.target_value,
                         static_cast<std::int64_t>(o.reference_value), by_value.reference_value);
  else if (o.max_abs > 0)
    o.note = "indices differ only between tied values";
  return o;
}

OutputReport compare_statistics(const std::string& name, const at::Tensor& reference, const at::Tensor& target,
                                const at::Tensor& se_reference, const at::Tensor& /*se_target*/, double sigmas,
                                double unit) {
  // The statistics' own dtype is no contract: any floating dtype will do.
  const c10::ScalarType any_float =
      target.defined() && c10::isFloatingType(target.scalar_type()) ? target.scalar_type() : c10::ScalarType::Undefined;
  OutputReport o = compare_tensors(name, reference, target, Tolerance{0, 0}, any_float);
  o.rule = Rule::Statistics;
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
  // A statistic of too few draws has an infinite standard error (SampleStats::kMinDraws): not judged.
  const at::Tensor judged = se_r.isfinite();
  // Non-finite statistics must agree exactly (compare_tensors above counted them).
  const at::Tensor bad =
      at::where(r.isfinite() & t.isfinite(), judged & (diff > allowed), ~(r.eq(t) | (r.isnan() & t.isnan())));
  o.mismatches = bad.sum().item<std::int64_t>();
  o.ok = o.mismatches == 0 && !o.dtype_differs;
  if (o.ok) o.note.clear();
  if (o.ok && !judged.any().item<bool>()) {
    o.not_judged = true;
    o.note = fmt::format("not judged: its {} statistics come from samples too small to tell two distributions apart",
                         o.numel);
  }
  o.first_mismatch = -1;
  if (o.mismatches > 0) {
    const std::int64_t i = bad.nonzero()[0][0].item<std::int64_t>();
    o.first_mismatch = i;
    o.reference_value = r[i].item<double>();
    o.target_value = t[i].item<double>();
    o.note = fmt::format(
        "statistic {} differs by {:.3g}, {:.1f} standard errors of the reference's sample "
        "(allowed {:.3g}: {} sigmas plus rounding)",
        index_string(i, o.shape), diff[i].item<double>(),
        se[i].item<double>() > 0 ? diff[i].item<double>() / se[i].item<double>() : 0.0, allowed[i].item<double>(),
        sigmas);
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

}  // namespace mpscheck

#include "checks/compare.hpp"

#include <ATen/core/grad_mode.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

namespace mpscheck {

namespace {

std::string shape_string(at::IntArrayRef s) {
  return fmt::format("[{}]", fmt::join(s.begin(), s.end(), ", "));
}

// Flat index -> "[i, j, k]" for messages.
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

// The element-wise statistics of one comparison, gathered in a single pass.
struct ElementStats {
  explicit ElementStats(const Tolerance& tol) : atol(tol.atol), rtol(tol.rtol) {}
  double atol, rtol;
  std::int64_t nan_r = 0, nan_t = 0, inf_r = 0, inf_t = 0, bad = 0, first_bad = -1, worst = 0;
  double max_abs = -1, max_rel = 0;

  template <class T>
  void scan(const T* r, const T* t, std::int64_t offset, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
      const double rv = static_cast<double>(r[i]), tv = static_cast<double>(t[i]);
      double diff = 0;
      bool is_bad;
      if (std::isfinite(rv) && std::isfinite(tv)) {
        diff = std::abs(tv - rv);
        const double mag = std::abs(rv);
        is_bad = diff > atol + rtol * mag;
        if (mag > atol) max_rel = std::max(max_rel, diff / mag);
      } else {
        const bool rn = std::isnan(rv), tn = std::isnan(tv);
        nan_r += rn, nan_t += tn;
        inf_r += std::isinf(rv), inf_t += std::isinf(tv);
        // Non-finite positions agree only when both sides hold the same non-finite value.
        is_bad = !((rn && tn) || (std::isinf(rv) && rv == tv));
      }
      if (is_bad) {
        if (first_bad < 0) first_bad = offset + i;
        ++bad;
      }
      if (diff > max_abs) max_abs = diff, worst = offset + i;
    }
  }

  void fill(OutputReport& o) const {
    o.nan_reference = nan_r, o.nan_target = nan_t, o.inf_reference = inf_r, o.inf_target = inf_t;
    o.mismatches = bad, o.first_mismatch = first_bad, o.max_abs = max_abs, o.max_rel = max_rel;
  }
};

}  // namespace

OutputReport compare_tensors(const std::string& name, const at::Tensor& reference,
                             const at::Tensor& target, const Tolerance& tol) {
  OutputReport o;
  o.name = name;
  if (!reference.defined() || !target.defined()) {
    o.ok = reference.defined() == target.defined();
    if (!o.ok) o.note = reference.defined() ? "missing on the target" : "missing on the reference";
    return o;
  }
  o.shape.assign(reference.sizes().begin(), reference.sizes().end());
  o.reference_dtype = c10::toString(reference.scalar_type());
  o.target_dtype = c10::toString(target.scalar_type());
  o.numel = reference.numel();
  if (reference.sizes() != target.sizes()) {
    o.ok = false;
    o.note = fmt::format("shape differs: reference {} vs target {}", shape_string(reference.sizes()),
                         shape_string(target.sizes()));
    return o;
  }
  if (o.numel == 0) return o;

  at::NoGradGuard no_grad;
  const at::Tensor ref = reference.detach().to(at::kCPU).reshape({-1});
  const at::Tensor tgt = target.detach().to(at::kCPU).reshape({-1});

  // Bit-identical outputs (the reference against itself, or an identical device) need no element
  // pass: equal() is false wherever a NaN is, so only infinities are left to count.
  if (ref.scalar_type() == tgt.scalar_type() && at::equal(ref, tgt)) {
    o.inf_reference = o.inf_target = ref.is_floating_point() ? ref.isinf().sum().item<std::int64_t>() : 0;
    o.reference_value = o.target_value = ref[0].item<double>();
    return o;
  }

  // One pass over the elements, in double. float32/float64 outputs are read in place; other
  // dtypes (half, bfloat16, integers, bool) are converted 1M elements at a time so the temporary
  // stays small whatever the output's size (a VGG-16's parameters are 138M elements).
  ElementStats stats(tol);
  const bool same_native = ref.scalar_type() == tgt.scalar_type() &&
                           (ref.scalar_type() == at::kFloat || ref.scalar_type() == at::kDouble);
  if (same_native) {
    const at::Tensor r = ref.contiguous(), t = tgt.contiguous();
    if (r.scalar_type() == at::kFloat) stats.scan(r.data_ptr<float>(), t.data_ptr<float>(), 0, o.numel);
    else stats.scan(r.data_ptr<double>(), t.data_ptr<double>(), 0, o.numel);
  } else {
    constexpr std::int64_t kChunk = std::int64_t{1} << 20;
    for (std::int64_t begin = 0; begin < o.numel; begin += kChunk) {
      const std::int64_t len = std::min(kChunk, o.numel - begin);
      const at::Tensor r = ref.narrow(0, begin, len).to(at::kDouble).contiguous();
      const at::Tensor t = tgt.narrow(0, begin, len).to(at::kDouble).contiguous();
      stats.scan(r.data_ptr<double>(), t.data_ptr<double>(), begin, len);
    }
  }
  stats.fill(o);
  const std::int64_t worst = stats.worst;
  o.ok = o.mismatches == 0;
  // Show where it went most wrong: the first bad element when some value is non-finite there.
  auto finite_at = [](const at::Tensor& x, std::int64_t i) { return std::isfinite(x[i].item<double>()); };
  const std::int64_t shown =
      (o.first_mismatch >= 0 && !(finite_at(ref, o.first_mismatch) && finite_at(tgt, o.first_mismatch)))
          ? o.first_mismatch : worst;
  o.reference_value = ref[shown].item<double>();
  o.target_value = tgt[shown].item<double>();
  if (o.mismatches > 0 && o.first_mismatch >= 0 && shown != worst) {
    o.note = fmt::format("first bad element at {}", index_string(shown, o.shape));
  }
  return o;
}

Attribution attribute_with_gold(const at::Tensor& gold, const at::Tensor& reference, const at::Tensor& target,
                                c10::ScalarType target_dtype, double floor, const at::Tensor& rounded) {
  Attribution a;
  if (!gold.defined() || !reference.defined() || !target.defined() || gold.sizes() != target.sizes() ||
      gold.sizes() != reference.sizes())
    return a;
  at::NoGradGuard no_grad;
  const at::Tensor g = gold.detach().to(at::kCPU).to(at::kDouble).reshape({-1});
  const at::Tensor r = reference.detach().to(at::kCPU).to(at::kDouble).reshape({-1});
  const at::Tensor t = target.detach().to(at::kCPU).to(at::kDouble).reshape({-1});
  const at::Tensor g_fin = g.isfinite();
  const double inf = std::numeric_limits<double>::infinity();
  auto rmse = [&](const at::Tensor& x) {
    if ((g_fin & ~x.isfinite()).any().item<bool>()) return inf;
    const at::Tensor d = at::where(g_fin, x - g, at::zeros_like(g));
    const double n = std::max<double>(g_fin.sum().item<double>(), 1.0);
    return std::sqrt((d * d).sum().item<double>() / n);
  };
  a.measured = true;
  a.rmse_reference = rmse(r);
  a.rmse_target = rmse(t);
  const bool reduced = target_dtype == c10::kHalf || target_dtype == c10::kBFloat16;
  a.baseline = a.rmse_reference;
  if (reduced) {
    const bool usable = rounded.defined() && rounded.sizes() == gold.sizes();
    const at::Tensor best = usable ? rounded.detach().to(at::kCPU).to(target_dtype).to(at::kDouble).reshape({-1})
                                   : g.to(target_dtype).to(at::kDouble);
    a.baseline = std::max(a.baseline, rmse(at::where(g_fin, best, g)));
  }
  a.multiplier = (reduced || g.numel() < 32) ? 3.0 : 2.0;
  a.target_ok = std::isfinite(a.rmse_target) && a.rmse_target <= a.multiplier * a.baseline + floor;
  return a;
}

Verdict judge_outputs(const std::vector<OutputReport>& outputs) {
  Verdict v;
  const OutputReport* first_nan = nullptr;
  const OutputReport* first_bad = nullptr;
  for (const auto& o : outputs) {
    const bool target_nonfinite = o.nan_target + o.inf_target > o.nan_reference + o.inf_reference;
    if (!o.ok && target_nonfinite && !first_nan) first_nan = &o;
    if (!o.ok && !first_bad) first_bad = &o;
  }
  if (first_nan) {
    v.status = Status::Nan;
    v.message = fmt::format("{}: target has {} NaN and {} Inf where the reference has {} and {}",
                            first_nan->name, first_nan->nan_target, first_nan->inf_target,
                            first_nan->nan_reference, first_nan->inf_reference);
    // A loss that blows up drifts first: name where it left tolerance (the seeds' VAE went
    // 550 -> 4705 -> 1.8e8 -> NaN), not only where it stopped being finite.
    if (first_bad != first_nan && first_bad->mismatches > 0)
      v.message += fmt::format("; it first left tolerance at {}: reference {:.6g}, target {:.6g}", first_bad->name,
                               first_bad->reference_value, first_bad->target_value);
  } else if (first_bad) {
    v.status = Status::Mismatch;
    if (!first_bad->note.empty() && first_bad->numel == 0) {
      v.message = fmt::format("{}: {}", first_bad->name, first_bad->note);
    } else if (!first_bad->note.empty() && first_bad->mismatches == 0) {
      v.message = fmt::format("{}: {}", first_bad->name, first_bad->note);
    } else {
      v.message = fmt::format(
          "{}: {} of {} elements outside tolerance, max abs error {:.3g} (max rel {:.3g}); "
          "first at {}: reference {:.6g}, target {:.6g}",
          first_bad->name, first_bad->mismatches, first_bad->numel, first_bad->max_abs,
          first_bad->max_rel, index_string(first_bad->first_mismatch, first_bad->shape),
          first_bad->reference_value, first_bad->target_value);
    }
  }
  return v;
}

Status classify_exception(const std::string& message) {
  std::string m = message;
  std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return std::tolower(c); });
  static const char* const kUnsupported[] = {
      "not implemented", "not currently implemented", "not supported", "notimplementederror", "could not run '",
      "does not support", "unsupported", "is not available for", "not linked with support",
      // dtype gaps phrased as type errors by LibTorch's kernels
      "expected scalar type", "to have one of the following scalar types", "expected both inputs to be half, float or double"};
  for (const char* p : kUnsupported)
    if (m.find(p) != std::string::npos) return Status::Unsupported;
  return Status::Error;
}

std::string tidy_exception_message(const std::string& what) {
  std::string m = what;
  const auto backtrace = m.find("Exception raised from");
  if (backtrace != std::string::npos) m.erase(backtrace);
  const auto newline = m.find('\n');
  if (newline != std::string::npos) {
    // Keep a one-line message; LibTorch puts the useful sentence first.
    std::string first = m.substr(0, newline);
    if (first.find_first_not_of(" \t") == std::string::npos) first = m.substr(newline + 1);
    m = first;
    const auto nl = m.find('\n');
    if (nl != std::string::npos) m.erase(nl);
  }
  while (!m.empty() && std::isspace(static_cast<unsigned char>(m.back()))) m.pop_back();
  if (m.size() > 400) m = m.substr(0, 397) + "...";
  return m;
}

}  // namespace mpscheck

// The float64 judge (attribute_with_gold) and the family rule for training outputs: the rules are
// stated in compare.hpp beside Attribution.
#include "checks/chunks.hpp"
#include "checks/compare.hpp"

#include <mpscheck/dtype_names.hpp>

#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace mpscheck {

namespace {

bool is_reduced(c10::ScalarType t) { return t == c10::kHalf || t == c10::kBFloat16; }

// The largest finite value of `dtype`.
double largest_finite(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::kHalf: return 65504.0;
    case c10::kBFloat16: return static_cast<double>(std::numeric_limits<c10::BFloat16>::max());
    case c10::kFloat: return static_cast<double>(std::numeric_limits<float>::max());
    default: return std::numeric_limits<double>::max();
  }
}

// The largest finite value of `dtype` plus half a unit in the last place there: a float64 value
// beyond it rounds to infinity in that dtype.
double overflow_threshold(c10::ScalarType dtype) {
  if (dtype != c10::kHalf && dtype != c10::kBFloat16 && dtype != c10::kFloat)
    return std::numeric_limits<double>::infinity();
  const double max = largest_finite(dtype);
  return max + std::ldexp(unit_roundoff(dtype), std::ilogb(max));
}

// The rounding below the normal range: the smallest subnormal.
double smallest_subnormal(c10::ScalarType t) {
  return t == at::kHalf       ? std::ldexp(1.0, -24)
         : t == at::kBFloat16 ? std::ldexp(1.0, -133)
         : t == at::kFloat    ? std::ldexp(1.0, -149)
                              : 0.0;
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

constexpr double kInf = std::numeric_limits<double>::infinity();

// One attribution: gold g, reference r, target t, baseline b and witness w side by side, flattened
// on the CPU, and what pass 1 sums over them. Each rule is a step; attribute_with_gold runs them
// in order.
class GoldJudge {
 public:
  GoldJudge(Attribution& a, const at::Tensor& gold, const at::Tensor& reference, const at::Tensor& target,
            c10::ScalarType target_dtype, const Tolerance& tol, const at::Tensor& rounded, const at::Tensor& witness,
            const at::Tensor& emulated, const at::Tensor& magnitude);
  void sum_errors();
  void rmse_rule();
  void spread_by_magnitude();
  void band_rule();
  void element_rule();
  void bias_rule();

 private:
  // Hands `pass` each chunk of 1M elements in double: its first element's index, its length, and its
  // gold, reference, target, baseline (rounded to the target dtype), witness, rounded-operation
  // baseline and magnitude (an update's parameter; 0 without one) elements.
  template <class Pass>
  void for_each_chunk(Pass&& pass) const;
  // Gold beyond what the target dtype can hold (float32's -3.4e38 mask is float64's -1.8e308):
  // a non-finite position, never a finite difference of 1e308.
  bool representable(double g) const { return std::isfinite(g) && std::abs(g) < beyond_; }
  // The honest error at an element: float32's, and for reduced precision the rounded baseline's,
  // the witness's and the rounded-operation baseline's.
  double local_error(double g, double r, double b, double w, double e) const {
    double local = std::isfinite(r) ? std::abs(r - g) : 0.0;
    if (reduced_ && std::isfinite(b)) local = std::max(local, std::abs(b - g));
    if (reduced_ && std::isfinite(w)) local = std::max(local, std::abs(w - g));
    if (reduced_ && std::isfinite(e)) local = std::max(local, std::abs(e - g));
    return local;
  }
  // The dtype's own rounding of an element of magnitude `mag`: a few units of it, or of the subnormals.
  double rounding(double mag) const { return tol_.chains * kRoundingUnits * (u_ * mag + tiny_); }
  // The magnitude an element is rounded at: its own, or for training state the largest of its own,
  // its parameter's (an update) and the unit floor (Tolerance::unit_floor).
  double unit_magnitude(double g, double m) const {
    return tol_.training_state ? std::max({std::abs(g), std::isfinite(m) ? std::abs(m) : 0.0, tol_.unit_floor})
                               : std::abs(g);
  }
  void count_bad(std::int64_t at, double g, double t, double allowed);

  Attribution& a_;
  const Tolerance& tol_;
  c10::ScalarType target_dtype_;
  bool reduced_, witnessed_;
  std::int64_t n_;
  at::Tensor g_, r_, t_, b_, w_, e_, m_;
  double u_ = 0, beyond_ = 0, extreme_ = 0, tiny_ = 0;
  // Pass 1's sums: each side's RMSE against gold, gold's RMS, the honest error overall and per
  // magnitude bin (its RMS and its peak), and per bin the target's errors and gold's magnitudes.
  ScaledSquares sr_, st_, sb_, sw_, sg_, honest_;
  std::vector<ScaledSquares> bins_, target_bins_, gold_bins_;
  std::vector<double> bin_max_, pooled_;
  // float16/bfloat16: the honest errors at elements they swamp (an error at least the element's
  // magnitude), and the noise floor they set (spread_by_magnitude).
  ScaledSquares lost_;
  double lost_peak_ = 0, noise_floor_ = 0;
  double bias_t_ = 0, bias_r_ = 0, bias_b_ = 0, bias_w_ = 0, magnitude_ = 0;
  // The paired bias (bias_rule): the target's and the witness's signed errors against b, and the
  // witness's scatter about b (at least a unit of each element), where a witness and b both exist.
  bool paired_ = false;
  double paired_t_ = 0, paired_w_ = 0;
  ScaledSquares paired_scatter_;
  // The witness's signed errors summed over kBiasBatches contiguous batches of elements: the spread
  // of those sums is its bias's standard error as the output's structure makes it (bias_rule).
  std::vector<double> witness_batches_;
  bool r_nonfinite_ = false, t_nonfinite_ = false;
};

GoldJudge::GoldJudge(Attribution& a, const at::Tensor& gold, const at::Tensor& reference, const at::Tensor& target,
                     c10::ScalarType target_dtype, const Tolerance& tol, const at::Tensor& rounded,
                     const at::Tensor& witness, const at::Tensor& emulated, const at::Tensor& magnitude)
    : a_(a), tol_(tol), target_dtype_(target_dtype), reduced_(is_reduced(target_dtype)), n_(gold.numel()) {
  a_.dtype = dtype_name(target_dtype);
  g_ = gold.detach().to(at::kCPU).reshape({-1});
  r_ = reference.detach().to(at::kCPU).reshape({-1});
  t_ = target.detach().to(at::kCPU).reshape({-1});
  const bool usable = rounded.defined() && rounded.sizes() == gold.sizes();
  b_ = usable ? rounded.detach().to(at::kCPU).reshape({-1}) : g_;
  // The CPU's own run in the target dtype (accelerator targets only): every intermediate rounded
  // as an honest device rounds it. Without one, the witness is gold itself and adds nothing.
  witnessed_ =
      reduced_ && witness.defined() && witness.sizes() == gold.sizes() && c10::isFloatingType(witness.scalar_type());
  a_.witnessed = witnessed_;
  paired_ = witnessed_ && usable && !tol.network;
  w_ = witnessed_ ? witness.detach().to(at::kCPU).reshape({-1}) : g_;
  // Without them, gold itself: the rounded-operation baseline adds nothing, nor a magnitude 0.
  auto same_shape = [&](const at::Tensor& x) {
    return x.defined() && x.sizes() == gold.sizes() && c10::isFloatingType(x.scalar_type());
  };
  e_ = reduced_ && same_shape(emulated) ? emulated.detach().to(at::kCPU).reshape({-1}) : g_;
  m_ = same_shape(magnitude) ? magnitude.detach().to(at::kCPU).reshape({-1}) : at::zeros_like(g_);
  const c10::ScalarType rounding_dtype = reduced_                              ? target_dtype
                                         : target.scalar_type() == at::kDouble ? at::kFloat
                                                                               : target.scalar_type();
  u_ = unit_roundoff(rounding_dtype);
  const c10::ScalarType range_dtype = target_dtype == at::kDouble ? at::kDouble : rounding_dtype;
  beyond_ = overflow_threshold(range_dtype);
  extreme_ = largest_finite(range_dtype);
  // A float16/bfloat16 computation rounds to that dtype's subnormals even when its output is stored
  // wider (a float32 output of a float16 product): the coarser of the two.
  tiny_ = std::max(smallest_subnormal(target.scalar_type()), reduced_ ? smallest_subnormal(target_dtype) : 0.0);
  const size_t bins = reduced_ ? kBins : 0;
  bins_.resize(kBins), target_bins_.resize(bins), gold_bins_.resize(bins);
  witness_batches_.assign(witnessed_ ? kBiasBatches : 0, 0.0);
  bin_max_.assign(kBins, 0.0), pooled_.assign(kBins, 0.0);
}

template <class Pass>
void GoldJudge::for_each_chunk(Pass&& pass) const {
  using chunks::kChunk;
  auto chunk = [&](const at::Tensor& x, std::int64_t begin, std::int64_t len, bool round) {
    return chunks::as_double(x, begin, len, round ? target_dtype_ : c10::ScalarType::Undefined);
  };
  for (std::int64_t begin = 0; begin < n_; begin += kChunk) {
    const std::int64_t len = std::min(kChunk, n_ - begin);
    const at::Tensor gc = chunk(g_, begin, len, false), rc = chunk(r_, begin, len, false),
                     tc = chunk(t_, begin, len, false), bc = chunk(b_, begin, len, reduced_),
                     wc = chunk(w_, begin, len, false), ec = chunk(e_, begin, len, false),
                     mc = chunk(m_, begin, len, false);
    pass(begin, len, gc.const_data_ptr<double>(), rc.const_data_ptr<double>(), tc.const_data_ptr<double>(),
         bc.const_data_ptr<double>(), wc.const_data_ptr<double>(), ec.const_data_ptr<double>(),
         mc.const_data_ptr<double>());
  }
}

// Pass 1: the RMSEs (each over the elements where gold is representable and that side finite),
// the honest error per magnitude bin, and the signed sums of the bias rule.
void GoldJudge::sum_errors() {
  for_each_chunk([&](std::int64_t begin, std::int64_t len, const double* g, const double* r, const double* t,
                     const double* b, const double* w, const double* e, const double* m) {
    for (std::int64_t i = 0; i < len; ++i) {
      if (!std::isfinite(t[i]) && std::isfinite(r[i])) {
        ++a_.target_nonfinite;
        if (witnessed_ && !std::isfinite(w[i])) ++a_.witness_nonfinite;
      }
      if (!representable(g[i])) {
        // No part in the sums; a side that is non-finite there still has an infinite RMSE, as a figure.
        if (std::isfinite(g[i])) r_nonfinite_ |= !std::isfinite(r[i]), t_nonfinite_ |= !std::isfinite(t[i]);
        continue;
      }
      const double sign = g[i] < 0 ? -1.0 : 1.0;
      if (std::isfinite(r[i]))
        sr_.add(r[i] - g[i]), bias_r_ += (r[i] - g[i]) * sign;
      else
        r_nonfinite_ = true;
      if (std::isfinite(t[i]))
        st_.add(t[i] - g[i]), bias_t_ += (t[i] - g[i]) * sign;
      else
        t_nonfinite_ = true;
      // The honest error per magnitude: float32's, and for reduced precision the baseline's and witness's.
      const double local = local_error(g[i], r[i], b[i], w[i], e[i]);
      const int bin = magnitude_bin(unit_magnitude(g[i], m[i]));
      bins_[bin].add(local);
      bin_max_[bin] = std::max(bin_max_[bin], local);
      if (!reduced_) continue;
      if (local > 0 && local >= std::abs(g[i])) lost_.add(local), lost_peak_ = std::max(lost_peak_, local);
      if (std::isfinite(b[i])) sb_.add(b[i] - g[i]), bias_b_ += (b[i] - g[i]) * sign;
      if (witnessed_ && std::isfinite(w[i])) {
        sw_.add(w[i] - g[i]), bias_w_ += (w[i] - g[i]) * sign;
        witness_batches_[(begin + i) * kBiasBatches / n_] += (w[i] - g[i]) * sign;
      }
      if (paired_ && std::isfinite(b[i]) && std::isfinite(t[i]) && std::isfinite(w[i])) {
        paired_t_ += (t[i] - b[i]) * sign, paired_w_ += (w[i] - b[i]) * sign;
        paired_scatter_.add(std::max(std::abs(w[i] - b[i]), u_ * std::abs(g[i])));
      }
      sg_.add(g[i]);
      gold_bins_[bin].add(g[i]);
      target_bins_[bin].add(std::isfinite(t[i]) ? t[i] - g[i] : 0.0);
      honest_.add(local);
      magnitude_ += std::abs(g[i]);
    }
  });
  a_.measured = true;
}

// Non-finite target elements are judged one by one (element_rule); the RMSE rule takes the finite
// ones. Reduced precision also allows, in aggregate, what the per-element rule allows each element
// for the dtype's own rounding (a few units of |g|): an honest kernel may round each element
// differently from the baseline, by a unit or two.
void GoldJudge::rmse_rule() {
  a_.rmse_reference = r_nonfinite_ ? kInf : sr_.rms();
  a_.rmse_target = t_nonfinite_ ? kInf : st_.rms();
  a_.baseline = std::max({sr_.rms(), reduced_ ? sb_.rms() : 0.0, witnessed_ ? sw_.rms() : 0.0});
  a_.multiplier = (reduced_ || n_ < 32) ? 3.0 : 2.0;
  const double rounding_rms = reduced_ ? rounding(sg_.rms()) : 0.0;
  const double rmse_allowed = a_.multiplier * a_.baseline + tol_.atol + rounding_rms;
  a_.rmse_ok = st_.rms() <= rmse_allowed;
  a_.excess.rmse = excess_of(t_nonfinite_ ? kInf : st_.rms(), rmse_allowed);
}

// The spread allowed at a magnitude (every dtype) is the honest error of the elements of
// that magnitude and below (pooled upwards until there are kMinMagnitudePool of them): the larger
// of kSpreadMultiplier times their RMS and kPeakMultiplier times the largest of them. The RMS
// alone undersells a cancellation: there honest errors are set by the terms, not the result, and
// one honest run's error at an element does not bound another's, only the largest error the
// honest runs show at that magnitude does.
void GoldJudge::spread_by_magnitude() {
  std::vector<ScaledSquares> below(kBins);
  std::vector<double> peak_below(kBins, 0.0);
  for (int k = 0; k < kBins; ++k) {
    if (k > 0) below[k] = below[k - 1], peak_below[k] = peak_below[k - 1];
    below[k].merge(bins_[k]);
    peak_below[k] = std::max(peak_below[k], bin_max_[k]);
  }
  const std::int64_t need = std::min<std::int64_t>(kMinMagnitudePool, below[kBins - 1].n);
  int up = 0;
  for (int k = 0; k < kBins; ++k) {
    up = std::max(up, k);
    while (up < kBins - 1 && below[up].n < need) ++up;
    pooled_[k] = std::max(kSpreadMultiplier * below[up].rms(), kPeakMultiplier * peak_below[up]);
  }
  // Where honest float16/bfloat16 errors swamp the elements they fall on (kMinMagnitudePool of them
  // at least as large as the element), they are set by the terms the element is computed from, not
  // by its value: the CPU's bfloat16 logcumsumexp backward is off by up to 0.2 at elements below
  // 1e-3 and by 1.4 at elements near 0.01. An error of that size is then honest at any magnitude below it, so elements
  // there take it as their spread, by the same multipliers. Honest rounding that stays below each
  // element's magnitude (exp, matmul, softmax) sets no floor; the band rule still holds the floor's
  // elements to the honest RMS of their magnitudes.
  if (reduced_ && lost_.n >= kMinMagnitudePool)
    noise_floor_ = std::max(kSpreadMultiplier * lost_.rms(), kPeakMultiplier * lost_peak_);
}

// The band rule: the target's RMS error over a band of magnitudes (binades grouped from the
// smallest until kMinMagnitudePool elements) is within kBandMultiplier times the honest RMS
// error there, plus the dtype's rounding of those elements. A band of elements all wrong by
// half their value fails it even where the per-element rule's pooled peak, set by an honest
// cancellation at that magnitude, forgives each one.
void GoldJudge::band_rule() {
  if (!reduced_ || tol_.trajectory || tol_.training_state) return;
  ScaledSquares band_t, band_h, band_g;
  int band_first = -1;
  for (int k = 0; k < kBins; ++k) {
    if (target_bins_[k].n == 0) continue;
    if (band_first < 0) band_first = k;
    band_t.merge(target_bins_[k]), band_h.merge(bins_[k]), band_g.merge(gold_bins_[k]);
    if (band_t.n < kMinMagnitudePool && k < kBins - 1) continue;
    const double allowed = kBandMultiplier * band_h.rms() + rounding(band_g.rms()) + tol_.atol;
    const double excess = excess_of(band_t.rms(), allowed);
    a_.excess.band = std::max(a_.excess.band, excess);
    if (band_t.rms() > allowed && excess > a_.band_excess) {
      a_.band_ok = false;
      a_.band_excess = excess;
      a_.band_low = band_first <= 0 ? 0.0 : std::ldexp(1.0, band_first - kBinOffset - 1);
      a_.band_high = std::ldexp(1.0, k - kBinOffset);
      a_.band_target_rms = band_t.rms();
      a_.band_allowed = allowed;
      a_.band_count = band_t.n;
    }
    band_t = band_h = band_g = ScaledSquares{};
    band_first = -1;
  }
}

void GoldJudge::count_bad(std::int64_t at, double g, double t, double allowed) {
  if (allowed == 0) a_.excess.element = kInf;  // a non-finite position: no figure to widen
  if (a_.first_bad < 0) {
    a_.first_bad = at;
    a_.gold_value = g;
    a_.target_value = t;
    a_.allowed = allowed;
  }
  ++a_.bad_elements;
}

// Pass 2: every element outside the plain tolerance against the float32 reference must be
// within what float32 (or the rounded baseline) makes there, or the dtype's rounding there.
void GoldJudge::element_rule() {
  const double global_spread = kSpreadMultiplier * a_.baseline + tol_.atol;
  auto same = [](double x, double y) { return (std::isnan(x) && std::isnan(y)) || x == y; };
  for_each_chunk([&](std::int64_t begin, std::int64_t len, const double* g, const double* r, const double* t,
                     const double* b, const double* w, const double* e, const double* m) {
    for (std::int64_t i = 0; i < len; ++i) {
      bool bad;
      double allowed = 0;
      if (std::isnan(g[i]) || std::isinf(g[i])) {
        bad = !same(t[i], g[i]) && !same(t[i], r[i]);
      } else if (!representable(g[i])) {
        // Beyond the dtype's range: an infinity or the dtype's extreme of gold's sign (a clamp to
        // finfo), or whatever float32 holds there.
        const bool saturated = !std::isnan(t[i]) && (t[i] < 0) == (g[i] < 0) && std::abs(t[i]) >= extreme_;
        bad = !saturated && !same(t[i], r[i]);
      } else if (!std::isfinite(t[i])) {
        bad = !same(t[i], r[i]);  // no worse than float32's own overflow there
      } else {
        const double err = std::abs(t[i] - g[i]);
        if (std::isfinite(r[i]) && std::abs(t[i] - r[i]) <= tol_.atol + tol_.rtol * std::abs(r[i])) continue;
        const double local = local_error(g[i], r[i], b[i], w[i], e[i]);
        const double mag = unit_magnitude(g[i], m[i]);
        // The magnitude's spread plus the fast path's atol (for float16/bfloat16 scale-relative, and
        // 0 for outputs of one rounding per element); float32 keeps at least the whole output's
        // spread, and training state only that (compare.hpp).
        const double floor = mag <= noise_floor_ ? noise_floor_ : 0.0;
        const double pooled = std::max(pooled_[magnitude_bin(mag)], floor) + tol_.atol;
        const double spread = tol_.trajectory ? global_spread : reduced_ ? pooled : std::max(global_spread, pooled);
        allowed = kElementMultiplier * local + spread + rounding(mag);
        bad = err > allowed;
        a_.excess.element = std::max(a_.excess.element, excess_of(err, allowed));
      }
      if (bad) count_bad(begin + i, g[i], t[i], allowed);
    }
  });
}

// The bias rule: a systematic error that honest rounding does not show.
void GoldJudge::bias_rule() {
  // Training state: a bias is a structure of its whole output, judged in units (attribute_with_gold).
  if (!reduced_ || tol_.trajectory || tol_.training_state || !(magnitude_ > 0) || !std::isfinite(magnitude_)) return;
  a_.bias_target = bias_t_ / magnitude_;
  a_.bias_honest = std::max({std::abs(bias_r_), std::abs(bias_b_), std::abs(bias_w_)}) / magnitude_;
  const double count = static_cast<double>(std::max<std::int64_t>(honest_.n, 1));
  // The standard error of an honest bias: the honest errors' root sum of squares over the output's
  // magnitude, as if every element's error were independent. Where errors cancel by construction
  // (a softmax row sums to 1, so its errors sum to about 0) that overstates it many times: a
  // witnessed bfloat16 softmax 3% too large hid under a 6.6% allowance while the witness's own bias
  // was 0.03%. With a witness and enough elements, the spread of the witness's batch sums measures
  // it as the output's structure makes it, and the smaller of the two is used.
  double standard_error = honest_.root_sum() / magnitude_;
  if (witnessed_ && n_ >= kBiasBatches * kMinMagnitudePool) {
    double mean = 0;
    for (const double x : witness_batches_) mean += x / kBiasBatches;
    ScaledSquares spread;
    for (const double x : witness_batches_) spread.add(x - mean);
    const double batches = std::sqrt(kBiasBatches / (kBiasBatches - 1.0)) * spread.root_sum() / magnitude_;
    if (std::isfinite(batches)) standard_error = std::min(standard_error, batches);
  }
  const double units = kBiasUnits * u_ * (1 + kRoundingUnits / std::sqrt(count));
  a_.bias_allowed = kBiasMultiplier * a_.bias_honest + kBiasSigmas * standard_error + units;
  a_.bias_ok = std::abs(a_.bias_target) <= a_.bias_allowed;
  a_.excess.bias = excess_of(std::abs(a_.bias_target), a_.bias_allowed);
  if (!paired_) return;
  // The paired bias: against b, which shares the target's rounded inputs, the rounding of the inputs
  // drops out; what is left is what the device's intermediates do, which the witness shows.
  a_.paired_target = paired_t_ / magnitude_;
  a_.paired_honest = std::abs(paired_w_) / magnitude_;
  a_.paired_allowed =
      kBiasMultiplier * a_.paired_honest + kBiasSigmas * paired_scatter_.root_sum() / magnitude_ + units;
  const double paired_excess = excess_of(std::abs(a_.paired_target), a_.paired_allowed);
  a_.excess.bias = std::max(a_.excess.bias, paired_excess);
  if (a_.bias_ok && paired_excess > 1) a_.bias_ok = false, a_.paired_failed = true;
}

}  // namespace

Attribution attribute_with_gold(const at::Tensor& gold, const at::Tensor& reference, const at::Tensor& target,
                                c10::ScalarType target_dtype, const Tolerance& tol, const at::Tensor& rounded,
                                const at::Tensor& witness, const at::Tensor& emulated, const at::Tensor& magnitude) {
  Attribution a;
  if (!gold.defined() || !reference.defined() || !target.defined() || gold.sizes() != target.sizes() ||
      gold.sizes() != reference.sizes())
    return a;
  if (!c10::isFloatingType(gold.scalar_type()) || !c10::isFloatingType(target.scalar_type()) ||
      !c10::isFloatingType(reference.scalar_type()))
    return a;  // integers are exact contracts and complex values have no gold rule: never forgiven
  at::NoGradGuard no_grad;
  GoldJudge judge(a, gold, reference, target, target_dtype, tol, rounded, witness, emulated, magnitude);
  judge.sum_errors();
  judge.rmse_rule();
  judge.spread_by_magnitude();
  judge.band_rule();
  judge.element_rule();
  judge.bias_rule();
  const bool usable = rounded.defined() && rounded.sizes() == gold.sizes();
  if (is_reduced(target_dtype) && !tol.trajectory && tol.training_state) {
    // Training state: each element within what the honest sides make there, and no group of it
    // biased or scattered beyond the honest side's own, all in units of the dtype's rounding.
    a.training_state = true;
    const bool emulated_usable = emulated.defined() && emulated.sizes() == gold.sizes();
    a.honest = a.witnessed       ? "the CPU's own " + a.dtype + " run"
               : emulated_usable ? "float32 with every operation's result rounded to " + a.dtype
                                 : "float32 from " + a.dtype + "-rounded inputs";
    StructureOptions options;
    options.floor = tol.unit_floor;
    options.magnitude = magnitude;
    options.training_state = true;
    options.honest = a.honest;
    const at::Tensor honest = a.witnessed ? witness : emulated_usable ? emulated : at::Tensor();
    a.structure = test_structure(gold, target, usable ? rounded : at::Tensor(), honest, target_dtype, options);
    a.structure_ok = a.structure.ok && a.structure.scatter_ok;
    a.target_ok = a.bad_elements == 0 && a.structure_ok;
    return a;
  }
  // An op's output an honest kernel rounds once, or a witnessed network's forward output (Tolerance::structure).
  if (is_reduced(target_dtype) && !tol.trajectory && tol.structure && (a.witnessed || !tol.network)) {
    a.structure = test_structure(gold, target, usable ? rounded : at::Tensor(), a.witnessed ? witness : at::Tensor(),
                                 target_dtype);
    a.structure_ok = a.structure.ok;
  }
  a.target_ok = a.rmse_ok && a.bad_elements == 0 && a.bias_ok && a.band_ok && a.structure_ok;
  return a;
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

double resolved_update_scale(const std::vector<UpdateSides>& updates, c10::ScalarType dtype) {
  at::NoGradGuard no_grad;
  ScaledSquares w, t;
  std::int64_t resolved = 0;
  const double unit = 2 * unit_roundoff(dtype);  // the spacing of the dtype at 1
  for (const UpdateSides& u : updates) {
    if (!u.witness.defined() || !u.target.defined() || !u.param.defined() || u.witness.sizes() != u.target.sizes() ||
        u.witness.sizes() != u.param.sizes() || u.witness.numel() == 0 || !u.witness.is_floating_point())
      continue;
    const at::Tensor wv = u.witness.detach().to(at::kCPU, at::kDouble).flatten();
    const at::Tensor tv = u.target.detach().to(at::kCPU, at::kDouble).flatten();
    const at::Tensor pv = u.param.detach().to(at::kCPU, at::kDouble).flatten();
    const at::Tensor magnitude = at::maximum(pv.abs(), wv.abs());
    // The spacing at each magnitude: 2^floor(log2 m) times the spacing at 1.
    const at::Tensor spacing = at::exp2(at::floor(at::log2(magnitude))) * unit;
    const at::Tensor keep =
        wv.isfinite() & tv.isfinite() & pv.isfinite() & magnitude.gt(0) & wv.abs().ge(kResolvedSpacings * spacing);
    const std::int64_t n = keep.sum().item<std::int64_t>();
    if (n == 0) continue;
    resolved += n;
    w.add(finite_rms(wv.masked_select(keep)) * std::sqrt(static_cast<double>(n)));
    t.add(finite_rms(tv.masked_select(keep)) * std::sqrt(static_cast<double>(n)));
  }
  const double ws = w.root_sum();
  return resolved >= kMinResolved && ws > 0 ? t.root_sum() / ws : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace mpscheck

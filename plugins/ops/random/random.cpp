// Random family: every op draws a large sample with the device's own generator and returns a
// small tensor of statistics of it with their standard errors (OpDef::statistics), never the
// samples themselves. mpscheck allows each statistic kStatisticSigmas (6) standard errors of the
// difference of two independent samples, plus the rounding of the sample's dtype
// (checks/compare.hpp, compare_statistics): a generator biased by more than that fails.
//
// Each comment below gives the statistics' standard errors at the sample size. Statistics are
// taken in float32 (samples of a float16/bfloat16 case are cast first).
#include <mpscheck/op.hpp>

using namespace mpscheck::op;

namespace {

constexpr int64_t kN = int64_t{1} << 18;  // default sample size: about 30 ms per case on one core
constexpr int64_t kLarge = (int64_t{1} << 25) + 4096;

// Parameters on a grid of integers (the op divides them down): values exact in every dtype.
Arg grid(std::string name, std::vector<int64_t> shape, int64_t lo, int64_t hi) {
  Arg a = Arg::integers(std::move(name), std::move(shape), lo, hi);
  a.dtype = c10::ScalarType::Undefined;
  return a;
}

// A one-element input that only carries the device and dtype.
Arg device_arg() { return Arg::randn("x", {1}).no_grad(); }

at::Tensor flat32(const at::Tensor& s) { return s.reshape({-1}).to(at::kFloat); }

// Standard normal sample of n: mean (SE 1/sqrt(n)), variance (sqrt(2/n), tolerance 0.1),
// E|x| = sqrt(2/pi) (0.6/sqrt(n)), P(|x|<1), P(x<0), P(x>2) (<= 0.5/sqrt(n)), lag-1 and
// half-to-half correlations (1/sqrt(n), 1/sqrt(n/2)). No E[x^3] (SE sqrt(15/n) needs n = 2^20), and
// no E[x^4]: LibTorch 1.13's CPU bfloat16 normal has truncated tails (max |x| 3.3 in 2^20 draws,
// kurtosis 2.85), a biased statistic.
Tensors normal_stats(const at::Tensor& f) {
  const int64_t h = f.numel() / 2;
  return SampleStats()
      .mean(f)
      .with_error(f.var(), (f - f.mean()).square())
      .mean(f.abs())
      .mean((f.abs() < 1).to(at::kFloat))
      .mean((f < 0).to(at::kFloat))
      .mean((f > 2).to(at::kFloat))
      .mean(f.slice(0, 0, -1) * f.slice(0, 1))
      .mean(f.slice(0, 0, h) * f.slice(0, h, 2 * h))
      .done();
}
const std::string kNormalPy =
    "(lambda f: torch.stack([f.mean(), f.var(), f.abs().mean(), (f.abs() < 1).float().mean(), "
    "(f < 0).float().mean(), (f > 2).float().mean(), (f[:-1] * f[1:]).mean(), "
    "(f[:f.numel() // 2] * f[f.numel() // 2:2 * (f.numel() // 2)]).mean()]))";

// Uniform [0, 1) sample of n: mean (SE 0.29/sqrt(n)), variance 1/12 (0.075/sqrt(n)), min and max
// (within ~1/n of 0 and 1), lag-1 covariance (0.083/sqrt(n)), 10-bin histogram fractions
// (0.3/sqrt(n)).
Tensors unit_stats(const at::Tensor& f) {
  const double n = static_cast<double>(f.numel());
  return SampleStats()
      .mean(f)
      .with_error(f.var(), (f - f.mean()).square())
      .known(f.min(), 3 / n)  // an extreme: exponential tails, so three times its 1/n spread
      .known(f.max(), 3 / n)
      .mean((f.slice(0, 0, -1) - 0.5) * (f.slice(0, 1) - 0.5))
      .fractions(at::histc(f, 10, 0, 1) / n, f.numel())
      .done();
}
const std::string kUnitPy =
    "(lambda f: torch.cat([torch.stack([f.mean(), f.var(), f.min(), f.max(), ((f[:-1] - 0.5) * (f[1:] - "
    "0.5)).mean()]), "
    "torch.histc(f, 10, 0, 1) / f.numel()]))";

// Exponential(1) sample of n: mean (SE 1/sqrt(n)), variance (sqrt(8/n)), P(x>1) = e^-1 and
// P(x<0.1) (0.5/sqrt(n)), min (~1/n), lag-1 covariance (1/sqrt(n)).
Tensors exp_stats(const at::Tensor& f) {
  return SampleStats()
      .mean(f)
      .with_error(f.var(), (f - f.mean()).square())
      .mean((f > 1).to(at::kFloat))
      .mean((f < 0.1).to(at::kFloat))
      .known(f.min(), 3 / static_cast<double>(f.numel()))  // as for the uniform minimum
      .mean((f.slice(0, 0, -1) - 1) * (f.slice(0, 1) - 1))
      .done();
}
const std::string kExpPy =
    "(lambda f: torch.stack([f.mean(), f.var(), (f > 1).float().mean(), (f < 0.1).float().mean(), f.min(), "
    "((f[:-1] - 1) * (f[1:] - 1)).mean()]))";

// Applied to the sample expression `s` in Python.
std::string py(const std::string& stats, const std::string& s) { return stats + "(" + s + ".reshape(-1).float())"; }

}  // namespace

// clang-format off
MPSCHECK_CATALOG(random_cases) {
  const Variant contiguous = Variant::contiguous();
  const std::vector<Variant> strided = {contiguous, Variant::transposed("x"), Variant::sliced("x")};
  Family random(catalog, "random");
  random.statistics().no_grad().dtypes(dtypes::floats);

  random.op("rand", {device_arg()},
            [](const Tensors& a) { return unit_stats(flat32(at::rand({kN}, a[0].options()))); },
            py(kUnitPy, "torch.rand(" + std::to_string(kN) + ", device=x.device, dtype=x.dtype)"))
      .add();
  random.op("randn", {device_arg()},
            [](const Tensors& a) { return normal_stats(flat32(at::randn({kN}, a[0].options()))); },
            py(kNormalPy, "torch.randn(" + std::to_string(kN) + ", device=x.device, dtype=x.dtype)"))
      .add();
  // randn_like keeps a strided input's layout: the generator fills a non-contiguous tensor.
  random.op("randn_like", {Arg::randn("x", {512, 512}).no_grad()},
            [](const Tensors& a) { return normal_stats(flat32(at::randn_like(a[0]))); },
            py(kNormalPy, "torch.randn_like(x)"))
      .variants({contiguous, Variant::transposed("x")}).add();
  // Counts of each of the 10 values: fractions 0.1, SE 0.3/sqrt(n) = 0.0003; min/max exact.
  random.op("randint", {device_arg()},
            [](const Tensors& a) {
              at::Tensor r = at::randint(-5, 5, {kN}, a[0].options()).reshape({-1}).to(at::kLong);
              return SampleStats()
                  .fractions(at::bincount(r + 5, {}, 10).to(at::kFloat) / static_cast<double>(kN), kN)
                  .known(r.min().to(at::kFloat), 0)
                  .known(r.max().to(at::kFloat), 0)
                  .done();
            },
            "(lambda r: torch.cat([torch.bincount(r + 5, minlength=10).float() / " + std::to_string(kN) +
                ", torch.stack([r.min(), r.max()]).float()]))(torch.randint(-5, 5, (" + std::to_string(kN) +
                ",), device=x.device, dtype=x.dtype).reshape(-1).long())")
      .add(dtypes::f32_ints);

  // In-place fills of the input itself, which may be a strided view.
  random.op("uniform_", {Arg::randn("x", {512, 512}).no_grad()},
            [](const Tensors& a) {
              at::Tensor x = a[0];
              x.uniform_(-2, 3);
              return unit_stats((flat32(x) + 2) / 5);
            },
            py(kUnitPy, "((x.uniform_(-2, 3).reshape(-1).float() + 2) / 5)"))
      .variants(strided).add();
  random.op("normal_", {Arg::randn("x", {512, 512}).no_grad()},
            [](const Tensors& a) {
              at::Tensor x = a[0];
              x.normal_(2, 0.5);
              return normal_stats((flat32(x) - 2) / 0.5);
            },
            py(kNormalPy, "((x.normal_(2, 0.5).reshape(-1).float() - 2) / 0.5)"))
      .variants(strided).add();
  random.op("exponential_", {Arg::randn("x", {512, 512}).no_grad()},
            [](const Tensors& a) {
              at::Tensor x = a[0];
              x.exponential_(2);
              return exp_stats(flat32(x) * 2);
            },
            py(kExpPy, "(x.exponential_(2).reshape(-1).float() * 2)"))
      .variants(strided).add();
  // normal(mean, std) with tensor parameters: the standardised sample must be N(0, 1).
  random.op("normal_tensor", {Arg::randn("mean", {512, 512}).no_grad(), grid("std", {512, 512}, 1, 5)},
            [](const Tensors& a) {
              return normal_stats(flat32((at::normal(a[0], a[1] / 2) - a[0]) / (a[1] / 2)));
            },
            py(kNormalPy, "((torch.normal(mean, std / 2) - mean) / (std / 2))"))
      .variants({contiguous, Variant::transposed("mean"), Variant::sliced("std")}).add();

  // Bernoulli with per-element p in {0.05, 0.10, ..., 0.95}: E[b] = E[p], E[b p] = E[p^2], E[b (1 - p)], each
  // SE <= 0.5/sqrt(n); lag-1 covariance of b - p (0.5/sqrt(n)).
  random.op("bernoulli", {grid("p", {512, 512}, 1, 20)},
            [](const Tensors& a) {
              at::Tensor b = flat32(at::bernoulli(a[0] / 20)), p = flat32(a[0] / 20);
              at::Tensor d = b - p;
              return SampleStats().mean(b).mean(b * p).mean(b * (1 - p)).mean(d.slice(0, 0, -1) * d.slice(0, 1)).done();
            },
            "(lambda b, p: (lambda d: torch.stack([b.mean(), (b * p).mean(), (b * (1 - p)).mean(), "
            "(d[:-1] * d[1:]).mean()]))(b - p))(torch.bernoulli(p / 20).reshape(-1).float(), (p / 20).reshape(-1).float())")
      .variants({contiguous, Variant::transposed("p"), Variant::sliced("p")}).add();
  random.op("bernoulli_scalar", {Arg::randn("x", {512, 512}).no_grad()},
            [](const Tensors& a) {
              at::Tensor b = flat32(at::bernoulli(a[0], 0.3));
              return SampleStats().mean(b).mean((b.slice(0, 0, -1) - 0.3) * (b.slice(0, 1) - 0.3)).done();
            },
            "(lambda b: torch.stack([b.mean(), ((b[:-1] - 0.3) * (b[1:] - 0.3)).mean()]))"
            "(torch.bernoulli(x, 0.3).reshape(-1).float())")
      .variants(strided).add();
  // Dropout p = 0.3 in training mode on x in {1.0, 1.1, ..., 1.9}: zero fraction 0.3 (SE 0.46/sqrt(n)), mean kept
  // unbiased E[y] = E[x] (SE ~0.8/sqrt(n)), max = max(x)/0.7 (judged where some element holding max(x)
  // is surely kept: each is dropped with chance 0.3), and kept elements scaled by exactly 1/0.7 (largest
  // |0.7 y - x| over kept elements ~ rounding only).
  random.op("dropout", {grid("x", {512, 512}, 10, 20)},
            [](const Tensors& a) {
              at::Tensor y = flat32(at::dropout(a[0] / 10, 0.3, true)), x = flat32(a[0] / 10);
              at::Tensor kept = (y != 0).to(at::kFloat);
              return SampleStats()
                  .with_error(1 - kept.mean(), kept)
                  .mean(y)
                  .extreme(y.max(), std::pow(0.3, x.eq(x.max()).sum().item<double>()))
                  .known(((y * 0.7 - x).abs() * kept).max(), 0)
                  .done();
            },
            "(lambda y, x: (lambda kept: torch.stack([1 - kept.mean(), y.mean(), y.max(), "
            "((y * 0.7 - x).abs() * kept).max()]))((y != 0).float()))"
            "(torch.nn.functional.dropout(x / 10, 0.3, True).reshape(-1).float(), (x / 10).reshape(-1).float())")
      .variants(strided).add();

  // Multinomial with replacement, 2^16 draws from each of 4 rows of 10 unnormalised integer weights 1..9:
  // category frequencies (SE <= 0.5/2^8 = 0.002).
  random.op("multinomial_replacement", {grid("w", {4, 10}, 1, 10)},
            [](const Tensors& a) {
              const int64_t n = int64_t{1} << 16;
              at::Tensor d = at::multinomial(a[0], n, true);
              at::Tensor rows = at::arange(4, d.options()).unsqueeze(1) * 10;
              return SampleStats().fractions(at::bincount((d + rows).reshape({-1}), {}, 40).to(at::kFloat) / static_cast<double>(n), n).done();
            },
            "(lambda d: torch.bincount((d + torch.arange(4, device=d.device).unsqueeze(1) * 10).reshape(-1), "
            "minlength=40).float().reshape(4, 10) / 65536)(torch.multinomial(w, 65536, True))")
      .variants({contiguous, Variant::transposed("w")}).add();
  // Without replacement, 3 of 10 categories in each of 2^15 rows sharing one weight vector: how often
  // each category comes first (SE <= 0.5/2^7.5 = 0.0028), how often it is drawn at all (same), and
  // the fraction of rows with a repeated category (must be 0).
  random.op("multinomial_no_replacement", {grid("w", {1, 10}, 1, 10)},
            [](const Tensors& a) {
              const int64_t rows = int64_t{1} << 15;
              at::Tensor d = at::multinomial(a[0].expand({rows, 10}).contiguous(), 3, false);
              at::Tensor s = std::get<0>(at::sort(d, -1));
              at::Tensor dup = (s.slice(1, 1) == s.slice(1, 0, -1)).any(1).to(at::kFloat).mean();
              return SampleStats()
                  .fractions(at::bincount(d.select(1, 0), {}, 10).to(at::kFloat) / static_cast<double>(rows), rows)
                  .fractions(at::bincount(d.reshape({-1}), {}, 10).to(at::kFloat) / static_cast<double>(rows), rows)
                  .known(dup, 0)
                  .done();
            },
            "(lambda d: torch.cat([torch.bincount(d[:, 0], minlength=10).float() / 32768, "
            "torch.bincount(d.reshape(-1), minlength=10).float() / 32768, "
            "(torch.sort(d, -1).values[:, 1:] == torch.sort(d, -1).values[:, :-1]).any(1).float().mean().reshape(1)]))"
            "(torch.multinomial(w.expand(32768, 10).contiguous(), 3, False))")
      .variants({contiguous, Variant::sliced("w")}).add();

  // randperm of n = 2^18: it is a permutation (every value counted once, fraction 1), E|p_i - i|/n = 1/3
  // (SE ~0.24/sqrt(n)), covariance of p_i/n and i/n (~0.08/sqrt(n)), mean of the first half
  // (~0.4/sqrt(n)).
  const auto randperm_stats = [](int64_t n) {
    return [n](const Tensors& a) {
      at::Tensor p = at::randperm(n, a[0].options().dtype(at::kLong));
      at::Tensor i = at::arange(n, p.options());
      at::Tensor pf = p.to(at::kFloat) / static_cast<double>(n), fi = i.to(at::kFloat) / static_cast<double>(n);
      return SampleStats()
          .known((at::bincount(p, {}, n) == 1).to(at::kFloat).mean(), 0)
          .mean((pf - fi).abs())
          .mean((pf - 0.5) * (fi - 0.5))
          .mean(pf.slice(0, 0, n / 2))
          .done();
    };
  };
  const auto randperm_py = [](int64_t n) {
    const std::string N = std::to_string(n);
    return "(lambda p: (lambda i, pf: torch.stack([(torch.bincount(p, minlength=" + N + ") == 1).float().mean(), (pf - i.float() / " + N +
           ").abs().mean(), ((pf - 0.5) * (i.float() / " + N + " - 0.5)).mean(), pf[:" + std::to_string(n / 2) +
           "].mean()]))(torch.arange(" + N + ", device=p.device), p.float() / " + N + "))(torch.randperm(" + N +
           ", device=x.device))";
  };
  random.op("randperm", {device_arg()}, randperm_stats(kN), randperm_py(kN)).add(dtypes::f32);

  // ----- large: more than 2^24 elements, where generator offsets and index math overflow -----
  random.op("randn_large", {device_arg()},
            [](const Tensors& a) { return normal_stats(flat32(at::randn({kLarge}, a[0].options()))); },
            py(kNormalPy, "torch.randn(" + std::to_string(kLarge) + ", device=x.device, dtype=x.dtype)"))
      .large().add(dtypes::f32);
  random.op("rand_large", {device_arg()},
            [](const Tensors& a) { return unit_stats(flat32(at::rand({kLarge}, a[0].options()))); },
            py(kUnitPy, "torch.rand(" + std::to_string(kLarge) + ", device=x.device, dtype=x.dtype)"))
      .large().add(dtypes::f32);
  constexpr int64_t kPermLarge = (int64_t{1} << 24) + 4096;
  random.op("randperm_large", {device_arg()}, randperm_stats(kPermLarge), randperm_py(kPermLarge)).large().add(dtypes::f32);
}
// clang-format on

MPSCHECK_PLUGIN("ops-random", "0.1.0")

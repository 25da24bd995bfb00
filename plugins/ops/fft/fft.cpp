// FFT family: 1-d, 2-d and n-d transforms, real and Hermitian variants, each normalisation, the
// shifts, and stft/istft. Complex results are compared as view_as_real; complex inputs are built
// with at::complex(re, im) so that both parts get gradients and strided layouts.
#include <mpscheck/op.hpp>

using namespace mpscheck::op;

namespace {

// Complex results as a trailing (re, im) dim; real results unchanged.
at::Tensor as_real(const at::Tensor& t) { return t.is_complex() ? at::view_as_real(t) : t; }

const char* const kNorms[] = {"backward", "ortho", "forward"};

// A transform: its Python name, whether its input is complex, the input shape and extra args.
struct Transform {
  std::string name;
  bool complex_input;
  std::vector<int64_t> shape;
  std::string py_extra;  // extra Python arguments before norm, e.g. "n=32, "
  std::function<at::Tensor(const at::Tensor&, c10::string_view)> fn;
  bool complex_output;
};

void add_transform(const Family& fft, const Transform& t) {
  for (const char* norm : kNorms) {
    std::vector<Arg> args;
    std::string input;
    if (t.complex_input) {
      args = {Arg::randn("re", t.shape), Arg::randn("im", t.shape)};
      input = "torch.complex(re, im)";
    } else {
      args = {Arg::randn("x", t.shape)};
      input = "x";
    }
    std::string call = "torch.fft." + t.name + "(" + input + ", " + t.py_extra + "norm=\"" + norm + "\")";
    if (t.complex_output) call = "torch.view_as_real(" + call + ")";
    const bool complex_input = t.complex_input;
    auto fn = t.fn;
    const std::string nrm = norm;
    fft.op(
           t.name + "_norm_" + norm, args,
           [complex_input, fn, nrm](const Tensors& a) {
             return as_real(fn(complex_input ? at::complex(a[0], a[1]) : a[0], nrm));
           },
           call)
        .add(dtypes::f32, {Variant::contiguous(), Variant::transposed(complex_input ? "re" : "x"),
                           Variant::sliced(complex_input ? "im" : "x")});
  }
}

// stft framing shared by the C++ and Python sides: 64-point hann window, hop 16.
constexpr int64_t kNfft = 64, kHop = 16, kSignal = 256;
const std::string kPyWindow = "torch.hann_window(64, dtype=x.dtype, device=x.device)";

}  // namespace

// clang-format off
MPSCHECK_CATALOG(fft_cases) {
  // float32 only; every case lists its layouts, and most take contiguous and transposed x.
  Family fft(catalog, "fft");
  fft.dtypes(dtypes::f32).variants({Variant::contiguous(), Variant::transposed("x")});
  using S = c10::string_view;
  using T = const at::Tensor&;
  const std::vector<Transform> transforms = {
      {"fft", false, {8, 32}, "", [](const at::Tensor& x, S n) { return at::fft_fft(x, c10::nullopt, -1, n); }, true},
      {"ifft", true, {8, 32}, "", [](const at::Tensor& x, S n) { return at::fft_ifft(x, c10::nullopt, -1, n); }, true},
      // Odd length: no Nyquist bin, a different real-to-complex path.
      {"rfft", false, {8, 33}, "", [](const at::Tensor& x, S n) { return at::fft_rfft(x, c10::nullopt, -1, n); }, true},
      // 17 bins back to 32 real samples; the imaginary parts of bins 0 and 16 are dropped.
      {"irfft", true, {8, 17}, "n=32, ", [](const at::Tensor& x, S n) { return at::fft_irfft(x, 32, -1, n); }, false},
      {"hfft", true, {8, 17}, "n=32, ", [](const at::Tensor& x, S n) { return at::fft_hfft(x, 32, -1, n); }, false},
      {"fft2", false, {4, 8, 16}, "",
       [](const at::Tensor& x, S n) { return at::fft_fft2(x, c10::nullopt, {-2, -1}, n); }, true},
      {"ifft2", true, {4, 8, 16}, "",
       [](const at::Tensor& x, S n) { return at::fft_ifft2(x, c10::nullopt, {-2, -1}, n); }, true},
      {"rfft2", false, {4, 8, 16}, "",
       [](const at::Tensor& x, S n) { return at::fft_rfft2(x, c10::nullopt, {-2, -1}, n); }, true},
      {"irfft2", true, {4, 8, 9}, "s=[8, 16], ",
       [](const at::Tensor& x, S n) { return at::fft_irfft2(x, at::IntArrayRef{8, 16}, {-2, -1}, n); }, false},
      {"fftn", false, {4, 6, 10}, "",
       [](const at::Tensor& x, S n) { return at::fft_fftn(x, c10::nullopt, c10::nullopt, n); }, true},
  };
  for (const auto& t : transforms) add_transform(fft, t);

  // Odd sizes, so fftshift and ifftshift differ; pure data movement.
  fft.op("fftshift", {Arg::randn("x", {7, 9})}, [](T x) { return at::fft_fftshift(x); }, "torch.fft.fftshift(x)")
      .variants({Variant::contiguous(), Variant::transposed("x"), Variant::sliced("x")}).add();
  fft.op("ifftshift", {Arg::randn("x", {7, 9})}, [](T x) { return at::fft_ifftshift(x); }, "torch.fft.ifftshift(x)")
      .variants({Variant::contiguous(), Variant::transposed("x"), Variant::sliced("x")}).add();
  fft.op("fftshift_dim", {Arg::randn("x", {4, 7, 9})}, [](T x) { return at::fft_fftshift(x, at::IntArrayRef{1}); },
         "torch.fft.fftshift(x, dim=[1])").add();
  // Shift of a spectrum, as plotted: fftshift(fft(x)).
  fft.op("fftshift_of_fft", {Arg::randn("x", {8, 31})},
         [](T x) { return at::view_as_real(at::fft_fftshift(at::fft_fft(x), at::IntArrayRef{-1})); },
         "torch.view_as_real(torch.fft.fftshift(torch.fft.fft(x), dim=[-1]))").add();

  // stft of a batch of signals, hann window built inside the op, no centre padding.
  fft.op("stft", {Arg::randn("x", {3, kSignal})},
         [](T x) {
           at::Tensor w = at::hann_window(kNfft, x.options().requires_grad(false));
           return at::view_as_real(at::stft(x, kNfft, kHop, kNfft, w, false, true, true));
         },
         "torch.view_as_real(torch.stft(x, 64, 16, 64, " + kPyWindow +
             ", center=False, normalized=False, onesided=True, return_complex=True))")
      .variants({Variant::contiguous(), Variant::sliced("x"), Variant::expanded("x")}).add();
  // Centred (reflect padding) and normalised.
  fft.op("stft_center_normalized", {Arg::randn("x", {3, kSignal})},
         [](T x) {
           at::Tensor w = at::hann_window(kNfft, x.options().requires_grad(false));
           return at::view_as_real(at::stft(x, kNfft, kHop, kNfft, w, true, "reflect", true, true, true));
         },
         "torch.view_as_real(torch.stft(x, 64, 16, 64, " + kPyWindow +
             ", center=True, pad_mode=\"reflect\", normalized=True, onesided=True, return_complex=True))")
      .variants({Variant::contiguous(), Variant::sliced("x")}).add();
  // istft of an arbitrary one-sided spectrogram [B, n_fft/2+1, frames]; hop n_fft/4 keeps the
  // hann overlap-add envelope non-zero.
  fft.op("istft", {Arg::randn("re", {3, kNfft / 2 + 1, 17}), Arg::randn("im", {3, kNfft / 2 + 1, 17})},
         [](const Tensors& a) {
           at::Tensor w = at::hann_window(kNfft, a[0].options().requires_grad(false));
           return at::istft(at::complex(a[0], a[1]), kNfft, kHop, kNfft, w, true, false, true, kSignal, false);
         },
         "torch.istft(torch.complex(re, im), 64, 16, 64, torch.hann_window(64, dtype=re.dtype, device=re.device), "
         "center=True, normalized=False, onesided=True, length=256, return_complex=False)")
      .variants({Variant::contiguous(), Variant::transposed("re"), Variant::sliced("im")}).add();
  // Round trip: istft(stft(x)) reconstructs x.
  fft.op("stft_istft_roundtrip", {Arg::randn("x", {3, kSignal})},
         [](T x) {
           at::Tensor w = at::hann_window(kNfft, x.options().requires_grad(false));
           at::Tensor spec = at::stft(x, kNfft, kHop, kNfft, w, true, "reflect", false, true, true);
           return at::istft(spec, kNfft, kHop, kNfft, w, true, false, true, kSignal, false);
         },
         "(lambda w: torch.istft(torch.stft(x, 64, 16, 64, w, center=True, pad_mode=\"reflect\", "
         "normalized=False, onesided=True, return_complex=True), 64, 16, 64, w, center=True, normalized=False, "
         "onesided=True, length=256, return_complex=False))(" + kPyWindow + ")")
      .variants({Variant::contiguous(), Variant::sliced("x")}).add();
}
// clang-format on

MPSCHECK_PLUGIN("ops-fft", "0.1.0")

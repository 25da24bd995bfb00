// The bug switchboard: MPSCHECK_SIM_BUGS=class[,class...] plants kernel bugs in the sim device,
// each modelled on a class of real MPS bugs. The plants sit under the ops the catalog's cases call
// (mpscheck does not know they exist); tests/integration/test_sim_recall.cpp and scripts/recall.sh
// check that the catalog finds each one, on the right op, and nothing else.
#include "sim.hpp"

#include <ATen/native/CPUFallback.h>
#include <c10/core/WrapDimMinimal.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

namespace sim {

namespace {

// Every class the switchboard knows; an unknown name in MPSCHECK_SIM_BUGS stops the process.
// (A function, not a global: the device's static initialisers read the switchboard.)
const std::set<std::string>& known_classes() {
  static const std::set<std::string> classes = {
      "transposed",         // gelu wrong only for non-contiguous inputs (pytorch#78511, #131736, #175187)
      "size-threshold",     // addmm (Linear with bias) wrong from batch 9 (pytorch#109457)
      "partial-tile",       // bmm: the last partial 16-column tile left zero
      "int64-as-int32",     // sum/cumsum of int64 accumulated in int32
      "bool-sum",           // sum of a bool tensor accumulated in uint8 (pytorch#125318's class)
      "softmax-f16",        // float16 softmax without the max subtraction: NaN on long rows (pytorch#96602)
      "unsupported-dtype",  // erf not implemented for bfloat16
      "fallback",           // erfinv runs on the CPU with PyTorch's MPS fallback warning
      "sync-error",         // hypot's error surfaces only at the next synchronize
      "abort",              // logit aborts inside the kernel
      "hang",               // logaddexp never returns
      "oom-small",          // every allocation fails (the GitHub-hosted macOS runner symptom)
      "backward",           // threshold_backward (ReLU's backward) wrong while the forward is right
      "index-no-raise",     // index_select zero-fills out-of-range indices instead of raising
      "nondeterministic",   // scatter_add loses a random update on every call (a race)
      "slow",               // convolution ten times slower than the CPU
      "sync-hang",          // synchronize never returns (a device that hangs: the probe's deadline)
      // Subtle classes: each is within a few units of rounding per element, or on few elements.
      "scale",           // float16/bfloat16 conv, matmul and softmax outputs 3% too large (a wrong scale)
      "small-elements",  // exp 1.5x too large where its result is below 0.125 (a bad polynomial range)
      "train-step",      // the optimizer's in-place update of a parameter 10% short
      "bn-stats",        // batch norm's running mean and variance updated 10% short in training
      "rng-outliers",    // normal_ puts 0.01% of its samples at +-50 (a broken tail of the sampler)
      "ulp-noise",       // the honest control: arithmetic, exp, softmax and matmul round the other way near a
                         // midpoint; convolutions and float32 matmuls a unit either way
      // Shape classes: no fixed case's shape reaches them; `mpscheck explore` must (docs/explore.md).
      "k-threshold",  // mm: one output element 5% of the output's RMS off from an inner dimension K >= 10000
      "size-2^n",     // softplus: the last element of each row wrong when rows are a power of two >= 2048 long
      // Layout class: no fixed case's layout reaches it; `mpscheck explore`'s layout variants must.
      "offset",  // avg_pool2d: a channels_last input at an odd storage offset read one element early
      // Huge class: only the opt-in huge cases (--huge, past 2^31 elements) reach it.
      "int32-offset",  // index_select: rows starting past element 2^31 read from offset mod 2^31 (pytorch#188756's
                       // class)
      // Speed class: right results, but no fixed case's size reaches the slow path; explore's speed search must.
      "cliff",  // cumsum of a float tensor 8x slower once the scanned dimension is longer than 4096
      // State classes: no fixed case runs in their state; `mpscheck explore`'s state probes must.
      "dirty-state",  // mm: 4 output elements 4% off on its first call after a free of >= 64 MiB on the device
      "thread",       // a sim kernel entered while another thread is inside one aborts the process
      "leak",  // bmm leaks a host block the size of its output (up to 8 MiB) per call; the sim's counters miss it
      // Operand class: no fixed case passes a CPU 0-dim tensor; `mpscheck explore`'s +cpu layout must.
      "cpu-scalar",  // mul uses a CPU 0-dim operand rounded to float16 (pytorch#187117's path)
      // Structure classes (sim_structure.cpp): a matmul off by ~10 rounding units on one part of its output.
      "slice", "block", "magnitude",  // its last row low, one tile high, its small elements too large
      "later-call",  // matmul and convolution 5% high on every call after the first with one weight buffer
      "batch-row", "weight-grad",  // in a network (sim_in_network.cpp): a Linear's last batch row; input^T @ grad
  };
  return classes;
}

std::set<std::string> read_switchboard() {
  std::set<std::string> on;
  const char* env = std::getenv("MPSCHECK_SIM_BUGS");
  if (!env) return on;
  std::stringstream in(env);
  for (std::string name; std::getline(in, name, ',');) {
    if (name.empty()) continue;
    if (!known_classes().count(name)) {
      std::string known;
      for (const auto& c : known_classes()) known += (known.empty() ? "" : ", ") + c;
      std::fprintf(stderr, "sim: unknown bug class '%s' in MPSCHECK_SIM_BUGS; known: %s\n", name.c_str(),
                   known.c_str());
      std::exit(2);
    }
    on.insert(name);
  }
  return on;
}

const std::set<std::string>& switchboard() {
  static const std::set<std::string> on = read_switchboard();
  return on;
}

std::mutex g_pending_mutex;
std::optional<std::string> g_pending_error;

// The dirty-state plant: how many frees of at least kLargeFree bytes the device has seen.
constexpr std::size_t kLargeFree = std::size_t{64} << 20;
std::atomic<std::uint64_t> g_large_frees{0};

// The thread plant: threads inside a sim kernel now, and this thread's nesting depth.
std::atomic<int> g_threads_inside{0};
thread_local int t_kernel_depth = 0;

using Stack = torch::jit::Stack;

const c10::IValue& arg(const c10::OperatorHandle& op, const Stack& s, size_t i) {
  const size_t n = op.schema().arguments().size();
  return s[s.size() - n + i];
}

at::Tensor result(const Stack& s) { return s.back().toTensor(); }

// Runs the CPU kernel, then lets `edit` change the result's values on the host.
template <class Edit>
void run_then_edit(const c10::OperatorHandle& op, Stack* s, Edit edit) {
  at::native::cpu_fallback(op, s);
  const at::Tensor out = result(*s);
  at::Tensor host = to_host(out).contiguous();
  edit(host);
  write_back(out, host);
}

// A kernel that reads its strided input as if it were contiguous (the memory it was handed).
at::Tensor read_as_contiguous(const at::Tensor& x) {
  const at::Tensor host = to_host(x);
  const int64_t available = static_cast<int64_t>(x.storage().nbytes() / x.itemsize()) - x.storage_offset();
  if (available < x.numel()) return host.flip(-1);  // a broadcast input: read past its one row
  Access open({x});
  const at::Tensor raw = at::from_blob(x.data_ptr(), {x.numel()}, x.options().device(at::kCPU));
  return raw.clone().view(x.sizes());
}

bool is(const c10::OperatorHandle& op, const char* name) { return op.schema().operator_name().name == name; }

bool is_reduced(c10::ScalarType t) { return t == at::kHalf || t == at::kBFloat16; }

// Which ops the subtle classes plant in (a composite such as linear or matmul reaches them).
bool is_matmul(const c10::OperatorHandle& op) {
  return is(op, "aten::mm") || is(op, "aten::addmm") || is(op, "aten::bmm") || is(op, "aten::baddbmm");
}
// The ulp-noise control: what an honest device may give that the CPU does not. Every op on the list
// rounds the other way where its exact result is near the midpoint of two neighbours
// (round_other_way), and a float32 matmul, which accumulates in another order, is a unit off either
// way wherever its result is not exact.
bool is_noisy(const c10::OperatorHandle& op) {
  static const std::set<std::string> ops = {"aten::add", "aten::sub",   "aten::mul", "aten::div",     "aten::exp",
                                            "aten::mm",  "aten::addmm", "aten::bmm", "aten::_softmax"};
  const auto& name = op.schema().operator_name();
  // Floor and trunc division give integers: exact, or a whole unit off, never a rounding unit.
  return ops.count(name.name) > 0 && name.overload_name.find("mode") == std::string::npos;
}
// The tensor an optimizer's in-place update (SGD, Adam, AdamW, Adadelta) writes, if `op` is one:
// p.add_(d, -lr), p.addcdiv_(m, v, -step)... reach a device without their kernels as the out=
// variant with the parameter as `out`. Undefined for any other op.
at::Tensor updated_tensor(const c10::OperatorHandle& op, const Stack& s) {
  static const std::set<std::string> ops = {"aten::add",     "aten::sub",     "aten::mul", "aten::div",
                                            "aten::addcdiv", "aten::addcmul", "aten::lerp"};
  const auto& name = op.schema().operator_name();
  if (!ops.count(name.name) && !ops.count(name.name.substr(0, name.name.size() - 1))) return {};
  if (name.overload_name.rfind("out", 0) == 0) return arg(op, s, op.schema().arguments().size() - 1).toTensor();
  if (name.name.back() == '_') return arg(op, s, 0).toTensor();
  return {};
}

// Moves every finite non-zero element of a floating tensor one unit of its dtype's rounding up or
// down, the direction fixed by the element's index (so two runs agree): what a kernel that rounds
// differently from the CPU, but honestly, may give. Zeros stay exact, as a real kernel keeps them.
template <class Bits>
void nudge_units(at::Tensor& host) {
  at::Tensor bits = host.view(c10::CppTypeToScalarType<Bits>::value);
  const at::Tensor finite = at::isfinite(host) & (host != 0);
  const at::Tensor index = at::arange(host.numel(), at::kLong).view(host.sizes());
  const at::Tensor sign = ((index * 2654435761LL).bitwise_right_shift(7).bitwise_and(1) * 2 - 1).to(bits.scalar_type());
  bits.add_(at::where(finite, sign, at::zeros_like(sign)));
}
void add_ulp_noise(at::Tensor& host) {
  if (host.scalar_type() == at::kFloat)
    nudge_units<int32_t>(host);
  else if (host.scalar_type() == at::kDouble)
    nudge_units<int64_t>(host);
  else if (is_reduced(host.scalar_type()))
    nudge_units<int16_t>(host);
}

// The same op on the host with every floating tensor argument widened (float16/bfloat16 to
// float32, float32 to float64): the exact result, or near enough to say which way rounding went.
// Undefined when the op has no floating result to widen.
at::Tensor widened_result(const c10::OperatorHandle& op, const Stack& s) {
  const size_t n = op.schema().arguments().size();
  Stack wide(s.end() - static_cast<std::ptrdiff_t>(n), s.end());
  for (auto& v : wide) {
    if (!v.isTensor() || !v.toTensor().defined()) continue;
    const at::Tensor t = to_host(v.toTensor());
    const c10::ScalarType d = t.scalar_type();
    v = d == at::kFloat ? t.to(at::kDouble) : is_reduced(d) ? t.to(at::kFloat) : t;
  }
  try {
    op.callBoxed(&wide);
  } catch (const std::exception&) {
    return {};  // an op that takes only its own dtype (softmax's half_to_float): no exact result
  }
  return wide.empty() || !wide.back().isTensor() ? at::Tensor() : wide.back().toTensor();
}

// Moves a correctly rounded result to the other neighbour of the exact one where the exact value
// lies within a quarter unit of the midpoint between the two (and the index hash picks the
// element): what a device that computes the op at another intermediate precision, or with a
// transcendental a few float32 units off, gives after rounding. Never more than 3/4 of a unit from
// exact; exact results, and sums whose increment is far below a unit (a bfloat16 weight's update),
// round as on the CPU.
template <class Bits>
void round_other_way(at::Tensor& host, const at::Tensor& exact) {
  const c10::ScalarType bits = c10::CppTypeToScalarType<Bits>::value;
  const at::Tensor up = host.to(exact.scalar_type());
  const at::Tensor index = at::arange(host.numel(), at::kLong).view(host.sizes());
  const at::Tensor picked = (index * 2654435761LL).bitwise_right_shift(7).bitwise_and(1).to(at::kBool);
  // Toward the exact value: up in value is one unit more in the bits of a positive number.
  const at::Tensor step = (at::sign(exact - up) * at::sign(up)).to(bits);
  at::Tensor other = host.clone();
  other.view(bits).add_(step);
  const at::Tensor unit = (other.to(exact.scalar_type()) - up).abs();
  const at::Tensor movable = picked & at::isfinite(up) & at::isfinite(exact) & at::isfinite(other) & (up != 0) &
                             ((exact - up).abs() > 0.25 * unit);
  host.copy_(at::where(movable, other, host));
}
void round_faithfully(at::Tensor& host, const at::Tensor& exact) {
  if (!exact.defined() || exact.sizes() != host.sizes()) return;
  const at::Tensor e = exact.contiguous();
  if (host.scalar_type() == at::kFloat && e.scalar_type() == at::kDouble)
    round_other_way<int32_t>(host, e);
  else if (is_reduced(host.scalar_type()) && e.scalar_type() == at::kFloat)
    round_other_way<int16_t>(host, e);
}

}  // namespace

at::Tensor planted_convolution(at::Tensor out, const std::function<at::Tensor(c10::ScalarType)>& exact) {
  if (planted("scale") && is_reduced(out.scalar_type())) out.mul_(1.03);
  if (planted("ulp-noise") && c10::isFloatingType(out.scalar_type())) {
    at::Tensor host = out.contiguous();
    // float16/bfloat16: an honest kernel accumulates in float32 and rounds once, so it may round the
    // other way only near a midpoint, as the other ops do; a unit off on every element would be
    // more than the dtype's own rounding (docs/verdicts.md, "What this asks of a float16/bfloat16 kernel").
    // float32: another accumulation order moves it a unit either way.
    if (is_reduced(host.scalar_type()))
      round_faithfully(host, exact(at::kFloat));
    else
      add_ulp_noise(host);
    out.copy_(host);
  }
  return out;
}

bool planted(const char* bug_class) { return switchboard().count(bug_class) > 0; }

void defer_error(std::string message) {
  std::lock_guard<std::mutex> lock(g_pending_mutex);
  if (!g_pending_error) g_pending_error = std::move(message);
}

void note_free(std::size_t bytes) {
  if (bytes >= kLargeFree) g_large_frees.fetch_add(1);
}

KernelScope::KernelScope() {
  static const bool on = planted("thread");
  if (t_kernel_depth++ > 0 || !on) return;
  entered_ = true;
  if (g_threads_inside.fetch_add(1) > 0) {
    // A command encoder shared by every thread, which a second thread corrupts (MPS before 2.x).
    std::fprintf(stderr, "sim: two threads inside sim kernels at once; the shared command encoder is corrupt\n");
    std::fflush(stderr);
    std::abort();
  }
}

KernelScope::~KernelScope() {
  --t_kernel_depth;
  if (entered_) g_threads_inside.fetch_sub(1);
}

void at_synchronize() {
  if (planted("sync-hang"))
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  std::optional<std::string> error;
  {
    std::lock_guard<std::mutex> lock(g_pending_mutex);
    error.swap(g_pending_error);
  }
  if (error) TORCH_CHECK(false, *error);
}

namespace {

// The failure classes: wrong layouts, sizes, dtypes, errors, crashes, hangs, races. Nothing when no
// planted class matches the op; else whether the op ran here.
std::optional<bool> run_failure_classes(const c10::OperatorHandle& op, Stack* s) {
  if (planted("transposed") && is(op, "aten::gelu")) {
    const at::Tensor x = arg(op, *s, 0).toTensor();
    if (x.is_contiguous()) return false;
    const std::string approximate(arg(op, *s, 1).toStringRef());
    const at::Tensor wrong = at::gelu(read_as_contiguous(x), approximate);
    run_then_edit(op, s, [&](at::Tensor& host) { host.copy_(wrong); });
    return true;
  }
  if (planted("size-threshold") && is(op, "aten::addmm")) {
    const at::Tensor mat1 = arg(op, *s, 1).toTensor();
    if (mat1.size(0) < 9) return false;
    run_then_edit(op, s, [](at::Tensor& host) { host.narrow(0, 8, host.size(0) - 8).add_(1.0); });
    return true;
  }
  if (planted("partial-tile") && is(op, "aten::bmm")) {
    const int64_t n = arg(op, *s, 1).toTensor().size(-1);
    if (n % 16 == 0) return false;
    const int64_t full = n / 16 * 16;
    run_then_edit(op, s, [&](at::Tensor& host) { host.narrow(-1, full, n - full).zero_(); });
    return true;
  }
  if (planted("int64-as-int32") && (is(op, "aten::sum") || is(op, "aten::cumsum"))) {
    if (arg(op, *s, 0).toTensor().scalar_type() != at::kLong) return false;
    run_then_edit(op, s, [](at::Tensor& host) { host.copy_(host.to(at::kInt).to(at::kLong)); });
    return true;
  }
  if (planted("bool-sum") && is(op, "aten::sum")) {
    if (arg(op, *s, 0).toTensor().scalar_type() != at::kBool) return false;
    run_then_edit(op, s, [](at::Tensor& host) { host.copy_(host.remainder(256)); });
    return true;
  }
  if (planted("softmax-f16") && is(op, "aten::_softmax")) {
    const at::Tensor x = arg(op, *s, 0).toTensor();
    const int64_t dim = c10::maybe_wrap_dim(arg(op, *s, 1).toInt(), x.dim());
    if (x.scalar_type() != at::kHalf || x.size(dim) < 512) return false;
    const at::Tensor e = at::exp(to_host(x));  // float16: overflows past 11.1
    const at::Tensor naive = e / e.sum(dim, true);
    run_then_edit(op, s, [&](at::Tensor& host) { host.copy_(naive); });
    return true;
  }
  if (planted("unsupported-dtype") && is(op, "aten::erf")) {
    if (arg(op, *s, 0).toTensor().scalar_type() != at::kBFloat16) return false;
    TORCH_CHECK_NOT_IMPLEMENTED(false,
                                "The operator 'aten::erf.out' is not currently implemented for the sim device "
                                "for BFloat16 inputs.");
  }
  if (planted("fallback") && is(op, "aten::erfinv")) {
    TORCH_WARN(
        "The operator 'aten::erfinv.out' is not currently supported on the MPS backend and will fall back to "
        "run on the CPU. This may have performance implications.");
    return false;
  }
  if (planted("sync-error") && is(op, "aten::hypot")) {
    defer_error("sim: command buffer exited with error status (Internal Error 0000000e) after aten::hypot");
    return false;
  }
  if (planted("abort") && is(op, "aten::logit")) {
    std::fprintf(stderr, "sim: kernel assertion 'index < numel' failed in aten::logit\n");
    std::fflush(stderr);
    std::abort();
  }
  if (planted("hang") && is(op, "aten::logaddexp")) {
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  if (planted("backward") && is(op, "aten::threshold_backward")) {
    run_then_edit(op, s, [](at::Tensor& host) { host.mul_(0.5); });
    return true;
  }
  if (planted("index-no-raise") && is(op, "aten::index_select")) {
    const at::Tensor x = arg(op, *s, 0).toTensor();
    const int64_t dim = c10::maybe_wrap_dim(arg(op, *s, 1).toInt(), x.dim());
    const at::Tensor index = to_host(arg(op, *s, 2).toTensor()).to(at::kLong).reshape({-1});
    const int64_t size = x.size(dim);
    const at::Tensor bad = (index >= size) | (index < -size);
    if (!bad.any().item<bool>()) return false;
    at::Tensor out = at::index_select(to_host(x), dim, at::where(bad, at::zeros_like(index), index));
    out.index_fill_(dim, bad.nonzero().reshape({-1}), 0);
    torch::jit::drop(*s, op.schema().arguments().size());
    s->emplace_back(out.to(x.device()));
    return true;
  }
  if (planted("nondeterministic") && is(op, "aten::scatter_add")) {
    static std::mt19937_64 race(std::random_device{}());
    run_then_edit(op, s, [](at::Tensor& host) {
      if (host.numel() == 0) return;
      host.view(-1)[static_cast<int64_t>(race() % static_cast<uint64_t>(host.numel()))].add_(1);
    });
    return true;
  }
  return std::nullopt;
}

// The subtle classes: a scale, small elements, a training step, random outliers.
std::optional<bool> run_subtle_classes(const c10::OperatorHandle& op, Stack* s) {
  if (planted("scale") && (is_matmul(op) || is(op, "aten::_softmax"))) {
    // The operand that sets the dtype: addmm's and baddbmm's first is the bias, which may be a scalar-like view.
    const size_t operand = is(op, "aten::addmm") || is(op, "aten::baddbmm") ? 1 : 0;
    if (!is_reduced(arg(op, *s, operand).toTensor().scalar_type())) return false;
    run_then_edit(op, s, [](at::Tensor& host) { host.mul_(1.03); });
    return true;
  }
  if (planted("small-elements") && is(op, "aten::exp")) {
    run_then_edit(op, s, [](at::Tensor& host) {
      if (!c10::isFloatingType(host.scalar_type())) return;
      host.copy_(at::where(host.abs() < 0.125, host * 1.5, host));
    });
    return true;
  }
  if (planted("train-step")) {
    // A parameter is a leaf that requires grad; the optimizer updates it in place under no_grad,
    // itself (Adam, AdamW, Adadelta) or through `.data()` (SGD), which only its storage tells.
    for (size_t i = 0; i < op.schema().arguments().size(); ++i) note_parameter(arg(op, *s, i));
    const at::Tensor self = updated_tensor(op, *s);
    if (!self.defined() || !c10::isFloatingType(self.scalar_type()) || !is_parameter(self)) return false;
    const at::Tensor before = to_host(self).to(at::kFloat);
    run_then_edit(op, s, [&](at::Tensor& host) { host.copy_(before + 0.9 * (host.to(at::kFloat) - before)); });
    return true;
  }
  if (planted("rng-outliers") && (is(op, "aten::normal_") || is(op, "aten::normal"))) {
    run_then_edit(op, s, [](at::Tensor& host) {
      if (!c10::isFloatingType(host.scalar_type())) return;
      // One sample in 10,000, at evenly spread positions, alternately at +50 and -50.
      const int64_t n = host.numel(), every = 10000;
      at::Tensor flat = host.view(-1);
      for (int64_t k = 0, i = every / 2; i < n; i += every, ++k) flat[i].fill_(k % 2 ? -50.0 : 50.0);
    });
    return true;
  }
  return std::nullopt;
}

// The shape and layout classes, which no fixed case reaches: explore finds them.
std::optional<bool> run_shape_classes(const c10::OperatorHandle& op, Stack* s) {
  if (planted("k-threshold") && is(op, "aten::mm")) {
    // A kernel that splits long dot products into chunks and mis-weights the last chunk of one
    // element (a blocked-reduction bug); no fixed case's mm has K anywhere near it.
    constexpr int64_t kPlantedK = 10000;
    const at::Tensor a = arg(op, *s, 0).toTensor();
    if (!c10::isFloatingType(a.scalar_type()) || a.dim() != 2 || a.size(1) < kPlantedK) return false;
    run_then_edit(op, s, [](at::Tensor& host) {
      if (host.numel() == 0) return;
      const at::Tensor wide = host.to(at::kFloat);
      const double rms = std::sqrt(wide.square().mean().item<double>());
      host.view(-1)[host.numel() - 1].add_(0.05 * std::max(rms, 1.0));
    });
    return true;
  }
  if (planted("size-2^n") && is(op, "aten::softplus")) {
    // A vectorised path taken only for power-of-two rows of at least 2048 elements, whose tail
    // writes each row's last element from the one before it.
    constexpr int64_t kPlantedRow = 2048;
    const at::Tensor x = arg(op, *s, 0).toTensor();
    const int64_t n = x.dim() == 0 ? 1 : x.size(-1);
    if (n < kPlantedRow || (n & (n - 1)) != 0) return false;
    run_then_edit(op, s, [n](at::Tensor& host) { host.narrow(-1, n - 1, 1).copy_(host.narrow(-1, n - 2, 1)); });
    return true;
  }
  if (planted("int32-offset") && is(op, "aten::index_select")) {
    // A gather whose row offsets are 32-bit: a row that starts past element 2^31 is read from its
    // offset wrapped to 32 bits. The catalog's largest index_select input has 2^24 + 4096 elements.
    constexpr int64_t kWrap = int64_t{1} << 31;
    const at::Tensor x = arg(op, *s, 0).toTensor();
    if (x.numel() <= kWrap || x.dim() != 2 || !arg(op, *s, 1).isInt() || arg(op, *s, 1).toInt() != 0 ||
        !x.is_contiguous())
      return false;
    const at::Tensor rows = to_host(arg(op, *s, 2).toTensor()).to(at::kLong).contiguous();
    at::Tensor wrapped;
    {
      Access open({x});
      const at::Tensor flat = at::from_blob(x.data_ptr(), {x.numel()}, x.options().device(at::kCPU));
      const int64_t cols = x.size(1);
      std::vector<at::Tensor> picked;
      for (int64_t i = 0; i < rows.numel(); ++i) {
        const int64_t start = rows.data_ptr<int64_t>()[i] * cols;
        picked.push_back(flat.narrow(0, start >= kWrap ? start % kWrap : start, cols).clone());
      }
      wrapped = at::stack(picked);
    }
    run_then_edit(op, s, [&](at::Tensor& out) { out.copy_(wrapped); });
    return true;
  }
  if (planted("cliff") && is(op, "aten::cumsum")) {
    // A scan that fits one threadgroup's memory up to 4096 elements and falls back to a slow
    // multi-pass path beyond it: the same result, eight times the time. The catalog's cumsum cases
    // scan 32, 256 or (int64 only) 2^25 elements.
    constexpr int64_t kPlantedLength = 4096;
    const at::Tensor x = arg(op, *s, 0).toTensor();
    if (!c10::isFloatingType(x.scalar_type()) || x.dim() == 0 || !arg(op, *s, 1).isInt()) return false;
    if (x.size(c10::maybe_wrap_dim(arg(op, *s, 1).toInt(), x.dim())) <= kPlantedLength) return false;
    const auto start = std::chrono::steady_clock::now();
    at::native::cpu_fallback(op, s);
    std::this_thread::sleep_for(7 * (std::chrono::steady_clock::now() - start));
    return true;
  }
  if (planted("offset") && is(op, "aten::avg_pool2d")) {
    // A kernel whose vector loads of NHWC memory are aligned down to two elements: at an odd
    // storage offset it reads the whole input one element early. Catalog cases are channels_last
    // at offset 0, or sliced (offset 1) but not channels_last; none is both.
    const at::Tensor x = arg(op, *s, 0).toTensor();
    if (x.dim() != 4 || x.is_contiguous() || !x.is_contiguous(at::MemoryFormat::ChannelsLast) ||
        x.storage_offset() % 2 == 0)
      return false;
    at::Tensor early;
    {
      Access open({x});
      const auto* start = static_cast<const char*>(x.data_ptr()) - x.itemsize();
      early = at::from_blob(const_cast<char*>(start), x.sizes(), x.strides(), x.options().device(at::kCPU)).clone();
    }
    // The functional op and its out= form (how a structured op reaches a device) share these arguments.
    const c10::IValue& divisor = arg(op, *s, 6);
    const at::Tensor wrong =
        at::avg_pool2d(early, arg(op, *s, 1).toIntVector(), arg(op, *s, 2).toIntVector(), arg(op, *s, 3).toIntVector(),
                       arg(op, *s, 4).toBool(), arg(op, *s, 5).toBool(),
                       divisor.isNone() ? c10::optional<int64_t>() : c10::optional<int64_t>(divisor.toInt()));
    run_then_edit(op, s, [&](at::Tensor& out) { out.copy_(wrong); });
    return true;
  }
  return std::nullopt;
}

// The state classes, which no fixed case's state reaches: explore's state probes find them.
std::optional<bool> run_state_classes(const c10::OperatorHandle& op, Stack* s) {
  if (planted("dirty-state") && is(op, "aten::mm")) {
    // A kernel that keeps a pointer into a pool the allocator has since released and rebuilt: its
    // first call after a large free reads four elements' partial sums from stale memory.
    static std::atomic<std::uint64_t> seen{0};
    const std::uint64_t frees = g_large_frees.load();
    if (seen.exchange(frees) == frees) return false;
    run_then_edit(op, s, [](at::Tensor& host) {
      if (host.numel() == 0 || !c10::isFloatingType(host.scalar_type())) return;
      const double rms = std::sqrt(host.to(at::kFloat).square().mean().item<double>());
      at::Tensor flat = host.view(-1);
      const int64_t n = flat.numel();
      for (int64_t k = 0; k < std::min<int64_t>(4, n); ++k) {
        const int64_t i = (2 * k + 1) * n / 8;
        flat[i].add_(0.04 * std::max(std::abs(flat[i].item<double>()), std::max(rms, 1.0)));
      }
    });
    return true;
  }
  if (planted("leak") && is(op, "aten::bmm")) {
    // A kernel that stages its operands and its output in a host buffer (when they take 32 MiB or
    // less) and never frees it; the buffer is written, so it is resident. At most 1 GiB a process,
    // for the machine's sake.
    constexpr std::size_t kStaged = std::size_t{32} << 20, kCap = std::size_t{1} << 30;
    static std::atomic<std::size_t> leaked{0};
    const std::size_t operands = arg(op, *s, 0).toTensor().nbytes() + arg(op, *s, 1).toTensor().nbytes();
    at::native::cpu_fallback(op, s);
    const std::size_t bytes = operands + result(*s).nbytes();
    // Kept in a list nothing reads, so the compiler cannot drop the allocation as unused.
    static std::mutex kept_mutex;
    static auto* kept = new std::vector<void*>;
    if (bytes > 0 && bytes <= kStaged && leaked.fetch_add(bytes) + bytes <= kCap) {
      void* p = std::malloc(bytes);
      if (!p) return true;
      std::memset(p, 0x5a, bytes);
      std::lock_guard<std::mutex> lock(kept_mutex);
      kept->push_back(p);
    }
    return true;
  }
  return std::nullopt;
}

}  // namespace

bool run_planted(const c10::OperatorHandle& op, Stack* s) {
  if (switchboard().empty()) return false;
  for (auto* classes : {run_failure_classes, run_subtle_classes, run_shape_classes, run_state_classes,
                        run_scalar_classes, run_structure_classes, run_later_call_class, run_in_network_classes})
    if (const std::optional<bool> ran = classes(op, s)) return *ran;
  if (planted("ulp-noise") && is_noisy(op)) {
    const at::Tensor exact = widened_result(op, *s);  // before the op: an in-place one changes self
    run_then_edit(op, s, [&](at::Tensor& host) {
      if (!exact.defined() || exact.sizes() != host.sizes()) return;
      if (is_matmul(op) && host.scalar_type() == at::kFloat) {
        const at::Tensor before = host.clone();
        add_ulp_noise(host);
        host.copy_(at::where(before.to(exact.scalar_type()) == exact, before, host));
      } else {
        round_faithfully(host, exact);
      }
    });
    return true;
  }
  return false;
}

}  // namespace sim

// Declarative operator cases: what a plugin author writes. An OpDef describes an op's inputs
// (shapes, value ranges, memory layout) and the op, once in C++ and once as a Python expression;
// from it mpscheck makes the forward and backward cases for each dtype and layout variant, and a
// Python reproducer that rebuilds the very same input values from the same seed.
//
// A family file sets its defaults once with a Family, then declares each case in a line or two:
//
//   MPSCHECK_CATALOG(activation_cases) {
//     using namespace mpscheck::op;
//     Family activation(catalog, "activation");
//     activation.dtypes(dtypes::floats).variants({Variant::contiguous(), Variant::transposed()});
//     activation.op("gelu", {Arg::randn("x", {64, 128})}, [](const at::Tensor& x) { return at::gelu(x); },
//                   "torch.nn.functional.gelu(x)").add();
//     activation.op("exp2", {Arg::randn("x", {64, 128})}, [](const at::Tensor& x) { return at::exp2(x); },
//                   "torch.exp2(x)").add(dtypes::f32);  // this one in float32 only
//   }
//   MPSCHECK_PLUGIN("ops-activation", "0.1.0")
//
// What runs behind these declarations (input draws, layouts, the Workload, the reproducer) lives in
// <mpscheck/detail/>, included at the end of this file; writing cases does not need it.
#pragma once

#include <mpscheck/plugin.hpp>
#include <mpscheck/tolerance_families.hpp>
#include <mpscheck/workload.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace mpscheck::op {

using Tensors = std::vector<at::Tensor>;
using OpFn = std::function<Tensors(const Tensors&)>;

// How an argument's values are drawn (in declaration order, from one generator seeded with the
// case seed — Python's torch.Generator().manual_seed(seed) draws the same numbers).
enum class Fill {
  Normal,    // randn
  Uniform,   // rand * (hi - lo) + lo
  Integers,  // randint(lo, hi)
  Bool,      // randint(0, 2).bool()
};

// How the tensor the op sees is laid out in memory. The base tensor is made contiguous on the
// device, then viewed, so the op receives a genuinely strided tensor there.
enum class Layout {
  Contiguous,
  Transposed,    // last two dims swapped in memory: base[..., n, m].transpose(-1, -2)
  Sliced,        // every second element of a longer last dim, storage offset 1: base[..., 1::2]
  ChannelsLast,  // 4-d NCHW viewed over NHWC memory: base[n, h, w, c].permute(0, 3, 1, 2)
  Expanded,      // dim 0 broadcast from size 1: base[1, ...].expand(shape)
};

struct Arg {
  std::string name;
  std::vector<int64_t> shape;
  Fill fill = Fill::Normal;
  double lo = -1.0, hi = 1.0;
  // Undefined = the case's dtype (floating: follows reference/target placement; integer: fixed).
  c10::ScalarType dtype = c10::ScalarType::Undefined;
  Layout layout = Layout::Contiguous;
  // Elements of storage before the tensor's own (it is sliced out of a longer buffer, whose head
  // is zeros); the layout then views it there. 0 for every declared case; `mpscheck explore` sets it.
  int64_t storage_offset = 0;
  // A 0-dim tensor (shape {}) kept on the CPU on every side, the target's too: a scalar operand
  // beside the device's tensors. False for every declared case; `mpscheck explore` sets it.
  bool cpu_scalar = false;
  bool grad = true;  // floating args get a gradient in backward cases
  // The op writes it in place (batch norm's running statistics in training): after the call it is
  // an output of its own, "arg/<name>", so a kernel that writes it wrong is a finding.
  bool written = false;
  std::vector<SizeTie> ties = {};  // see sized_as

  static Arg randn(std::string name, std::vector<int64_t> shape) { return Arg{std::move(name), std::move(shape)}; }
  static Arg uniform(std::string name, std::vector<int64_t> shape, double lo, double hi) {
    Arg a{std::move(name), std::move(shape)};
    a.fill = Fill::Uniform;
    a.lo = lo;
    a.hi = hi;
    return a;
  }
  // Integer tensor with values in [lo, hi); fixed dtype (index tensors, labels).
  static Arg integers(std::string name, std::vector<int64_t> shape, int64_t lo, int64_t hi,
                      c10::ScalarType dtype = c10::kLong) {
    Arg a{std::move(name), std::move(shape)};
    a.fill = Fill::Integers;
    a.lo = static_cast<double>(lo);
    a.hi = static_cast<double>(hi);
    a.dtype = dtype;
    a.grad = false;
    return a;
  }
  // Integer values in the case dtype, with a gradient: sums of them are exact in any order and
  // dtype, for accumulating ops (scatter_add, index_put with accumulate, ...).
  static Arg exact_integers(std::string name, std::vector<int64_t> shape, int64_t lo, int64_t hi) {
    Arg a = integers(std::move(name), std::move(shape), lo, hi);
    a.dtype = c10::ScalarType::Undefined;
    a.grad = true;
    return a;
  }
  static Arg mask(std::string name, std::vector<int64_t> shape) {
    Arg a{std::move(name), std::move(shape)};
    a.fill = Fill::Bool;
    a.dtype = c10::kBool;
    a.grad = false;
    return a;
  }
  Arg& with_layout(Layout l) {
    layout = l;
    return *this;
  }
  Arg& no_grad() {
    grad = false;
    return *this;
  }
  Arg& is_written() {
    written = true;
    return *this;
  }
  Arg& of(c10::ScalarType t) {
    dtype = t;
    return *this;
  }
  // Its dimension `dim` is `factor` times arg `other`'s dimension `other_dim`, whatever size
  // `mpscheck explore` gives that one: w_ih.sized_as(0, "h", 1, 4) keeps an LSTM cell's gate rows
  // at 4 x its hidden size.
  Arg& sized_as(size_t dim, std::string other, size_t other_dim, int64_t factor = 1) {
    ties.push_back({dim, std::move(other), other_dim, factor});
    return *this;
  }
  // Its dimension `dim` keeps its declared size in `mpscheck explore`: a count the op's other
  // arguments fix (an LSTM state's layers x directions), which no other size would be valid for.
  Arg& pinned(size_t dim) {
    ties.push_back({dim, {}, 0, 1});
    return *this;
  }
};

// An output of the op that is an index into a tensor (argmax, sort's indices, topk): ambiguous
// under ties, so mpscheck checks what it selects from `source(args)` along `dim` (or from the
// flattened tensor, `flat`), not the index itself.
struct IndexOf {
  int output = 1;
  std::function<at::Tensor(const Tensors&)> source;
  int64_t dim = -1;
  bool flat = false;
};

struct OpDef {
  std::string family;  // "conv", "activation", ...: the plugin's family, second part of the id
  std::string op;      // "conv2d"
  std::vector<Arg> args;
  OpFn fn;                     // the op, in ATen
  std::string python;          // the same op as a Python expression over the arg names
  bool differentiable = true;  // add a backward case for floating dtypes
  std::string tolerance;       // tolerance family (<mpscheck/tolerance_families.hpp>); empty = family
  std::vector<std::string> tags;
  std::vector<IndexOf> indices;  // index outputs, checked by meaning (forward cases)
  // Random ops: fn returns {statistics, their standard errors}; the errors travel with the
  // statistics (Output::standard_error) and are not compared themselves.
  bool statistics = false;
};

// A layout variant: its name (last part of the id) and what it does to the args.
struct Variant {
  std::string name;
  std::function<void(std::vector<Arg>&)> apply;

  static Variant contiguous() {
    return {"contiguous", [](std::vector<Arg>&) {}};
  }
  // Applies `layout` to the first argument, or to the argument named `arg`.
  static Variant of(std::string name, Layout layout, std::string arg = {}) {
    return {std::move(name), [layout, arg](std::vector<Arg>& args) {
              for (auto& a : args) {
                if (arg.empty() ? true : a.name == arg) {
                  a.layout = layout;
                  return;
                }
              }
              throw std::logic_error("variant names an argument the op does not have: " + arg);
            }};
  }
  static Variant transposed(std::string arg = {}) { return of("transposed", Layout::Transposed, arg); }
  static Variant sliced(std::string arg = {}) { return of("sliced", Layout::Sliced, arg); }
  static Variant channels_last(std::string arg = {}) { return of("channels_last", Layout::ChannelsLast, arg); }
  static Variant expanded(std::string arg = {}) { return of("expanded", Layout::Expanded, arg); }
  // A case whose inputs are large as declared (Case::large()): no layout change, named "large".
  static Variant large() {
    return {"large", [](std::vector<Arg>&) {}};
  }
};

using DTypes = std::vector<c10::ScalarType>;
using Variants = std::vector<Variant>;

// The dtype sets cases are declared over.
namespace dtypes {
inline const DTypes f32 = {c10::kFloat};
inline const DTypes reduced = {c10::kHalf, c10::kBFloat16};
inline const DTypes floats = {c10::kFloat, c10::kHalf, c10::kBFloat16};
inline const DTypes f32_bf16 = {c10::kFloat, c10::kBFloat16};
inline const DTypes ints = {c10::kLong, c10::kInt};
inline const DTypes f32_ints = {c10::kFloat, c10::kLong, c10::kInt};
inline const DTypes all = {c10::kFloat, c10::kHalf, c10::kBFloat16, c10::kLong, c10::kInt};
}  // namespace dtypes

// The layout sets cases are declared over.
namespace layouts {
// The first argument contiguous, transposed and sliced: the views an elementwise op or a
// reduction reads most often.
inline const Variants strided = {Variant::contiguous(), Variant::transposed(), Variant::sliced()};
}  // namespace layouts

// Which dtypes a case runs in, and the layout variants each dtype gets: float32 gets `variants`,
// the other dtypes `others` where that is set (usually fewer layouts), else `variants` too.
// Cases are made dtype by dtype, in the order given.
struct Coverage {
  Coverage() = default;
  Coverage(DTypes dtypes, Variants variants, Variants others = {})
      : dtypes(std::move(dtypes)), variants(std::move(variants)), others(std::move(others)) {}

  DTypes dtypes = dtypes::f32;
  Variants variants = {Variant::contiguous()};
  Variants others;

  const Variants& variants_for(c10::ScalarType t) const {
    return t == c10::kFloat || others.empty() ? variants : others;
  }
};

// Adds the forward case, and the backward case where the op is differentiable and the dtype
// floating, for every dtype x variant of the coverage.
inline void add_op(Catalog& catalog, const OpDef& def, const Coverage& coverage);
inline void add_op(Catalog& catalog, const OpDef& def, const DTypes& dtypes = dtypes::f32,
                   const Variants& variants = {Variant::contiguous()});

namespace detail {
// The op as OpDef::fn wants it, from a function of the args giving Tensors or one Tensor, or from a
// function of the first arg alone.
template <class Fn>
OpFn to_op_fn(Fn fn) {
  if constexpr (std::is_invocable_v<Fn&, const Tensors&>) {
    if constexpr (std::is_convertible_v<std::invoke_result_t<Fn&, const Tensors&>, Tensors>)
      return OpFn(std::move(fn));
    else
      return [fn = std::move(fn)](const Tensors& a) { return Tensors{fn(a)}; };
  } else {
    static_assert(std::is_invocable_v<Fn&, const at::Tensor&>,
                  "an op is a function of (const Tensors&) or of the first arg (const at::Tensor&)");
    return [fn = std::move(fn)](const Tensors& a) { return Tensors{fn(a[0])}; };
  }
}
}  // namespace detail

// One case being declared: made by Family::op() with the family's defaults, registered by add().
// A setter returns a changed copy, so one case can be added twice with different settings; a
// case that is never added is a compiler warning.
class [[nodiscard]] Case {
 public:
  Case(Catalog& catalog, OpDef def, Coverage coverage)
      : catalog_(&catalog), def_(std::move(def)), coverage_(std::move(coverage)) {}

  // The tolerance family its outputs are compared under (<mpscheck/tolerance_families.hpp>).
  Case tolerance(std::string family) const {
    return with([&](Case& c) { c.def_.tolerance = std::move(family); });
  }
  // Forward cases only: no gradient is compared.
  Case no_grad() const {
    return with([](Case& c) { c.def_.differentiable = false; });
  }
  // Backward cases too, in a family that is no_grad().
  Case with_grad() const {
    return with([](Case& c) { c.def_.differentiable = true; });
  }
  Case tag(std::string tag) const {
    return with([&](Case& c) { c.def_.tags.push_back(std::move(tag)); });
  }
  // An output that is an index, checked by what it selects (see IndexOf).
  Case index(IndexOf index) const {
    return with([&](Case& c) { c.def_.indices.push_back(std::move(index)); });
  }
  // A case far larger than the rest (past 2^24 elements or 2^16 channels): tagged "large", which
  // only --all selects, with its inputs as declared in one variant named "large".
  Case large() const { return tag("large").variants({Variant::large()}); }
  // A case past 2^31 elements, needing about `device_bytes` on the target at its peak: tagged
  // "huge", which only --huge selects, and "device-bytes:N", which the host weighs against the
  // target's memory and this machine's before it runs (a case that does not fit is a skip).
  Case huge(int64_t device_bytes) const {
    return tag("huge").tag("device-bytes:" + std::to_string(device_bytes)).variants({{"huge", [](std::vector<Arg>&) {
                                                                                      }}});
  }
  Case args(std::vector<Arg> args) const {
    return with([&](Case& c) { c.def_.args = std::move(args); });
  }
  Case dtypes(DTypes dtypes) const {
    return with([&](Case& c) { c.coverage_.dtypes = std::move(dtypes); });
  }
  // Every dtype gets `variants`, or float32 `variants` and the other dtypes `others`.
  Case variants(Variants variants, Variants others = {}) const {
    return with([&](Case& c) {
      c.coverage_.variants = std::move(variants);
      c.coverage_.others = std::move(others);
    });
  }

  void add() const { add_op(*catalog_, def_, coverage_); }
  void add(DTypes d) const { dtypes(std::move(d)).add(); }
  void add(DTypes d, Variants v) const { add_op(*catalog_, def_, Coverage(std::move(d), std::move(v))); }
  void add(const Coverage& c) const { add_op(*catalog_, def_, c); }

  const OpDef& def() const { return def_; }
  const Coverage& coverage() const { return coverage_; }

 private:
  template <class Change>
  Case with(Change&& change) const {
    Case c = *this;
    change(c);
    return c;
  }

  Catalog* catalog_;
  OpDef def_;
  Coverage coverage_;
};

// An op family: the defaults its cases share (family name, tolerance family, gradients, dtypes and
// layout variants), set once, and op(), which declares a case with them. The setters change the
// family for the cases declared after them; copy a Family for a group of cases that differs.
class Family {
 public:
  Family(Catalog& catalog, std::string name) : catalog_(&catalog) { defaults_.family = std::move(name); }

  // Default: the family's own name.
  Family& tolerance(std::string family) {
    defaults_.tolerance = std::move(family);
    return *this;
  }
  Family& no_grad() {
    defaults_.differentiable = false;
    return *this;
  }
  // Random ops: fn returns {statistics, their standard errors} (OpDef::statistics, SampleStats).
  Family& statistics() {
    defaults_.statistics = true;
    return *this;
  }
  Family& dtypes(DTypes dtypes) {
    coverage_.dtypes = std::move(dtypes);
    return *this;
  }
  // Every dtype gets `variants`, or float32 `variants` and the other dtypes `others`.
  Family& variants(Variants variants, Variants others = {}) {
    coverage_.variants = std::move(variants);
    coverage_.others = std::move(others);
    return *this;
  }
  // Applied to every case's args as it is declared (e.g. weights drawn like a module's init).
  Family& prepare(std::function<void(std::vector<Arg>&)> prepare) {
    prepare_ = std::move(prepare);
    return *this;
  }

  // A case: the op `name` over `args`, in C++ (`fn`: of the args, or of the first arg alone, giving
  // one tensor or several) and in Python (`python`, an expression over the arg names).
  template <class Fn>
  Case op(std::string name, std::vector<Arg> args, Fn fn, std::string python) const {
    OpDef d = defaults_;
    d.op = std::move(name);
    d.args = std::move(args);
    if (prepare_) prepare_(d.args);
    d.fn = detail::to_op_fn(std::move(fn));
    d.python = std::move(python);
    return Case(*catalog_, std::move(d), coverage_);
  }

  const std::string& name() const { return defaults_.family; }

 private:
  Catalog* catalog_;
  OpDef defaults_;
  Coverage coverage_;
  std::function<void(std::vector<Arg>&)> prepare_;
};

// Statistics of a random sample with their standard errors, for OpDef::statistics: done() gives
// the {statistics, standard errors} pair such an op returns. Samples are 1-d float tensors.
//
// A sample of fewer than kMinDraws draws cannot tell two distributions apart, and its own spread
// says nothing of its error (four draws of one value have none): its statistics get an infinite
// standard error, which the judge reads as "not judged" (a case with nothing else to compare is a
// skip, never a pass or a mismatch).
struct SampleStats {
  static constexpr int64_t kMinDraws = 30;
  Tensors values, errors;
  // The mean of a per-sample quantity q: standard error std(q) / sqrt(n).
  SampleStats& mean(const at::Tensor& q) { return with_error(q.mean(), q); }
  // A statistic whose error is that of the mean of q (var() with q = (x - mean)^2, ...).
  SampleStats& with_error(const at::Tensor& value, const at::Tensor& q) {
    values.push_back(value.reshape({}));
    errors.push_back(q.numel() < kMinDraws
                         ? too_few(value)
                         : (q.std() / std::sqrt(static_cast<double>(q.numel()))).reshape({}).to(value.scalar_type()));
    return *this;
  }
  // Fractions p of n independent draws (histogram bins): standard errors sqrt(p (1 - p) / n).
  SampleStats& fractions(const at::Tensor& p, int64_t n) {
    for (const at::Tensor& v : p.reshape({-1}).unbind()) {
      values.push_back(v);
      errors.push_back(n < kMinDraws ? too_few(v) : at::sqrt(v * (1 - v) / static_cast<double>(n)));
    }
    return *this;
  }
  // A statistic with a known sampling error (an extreme of n uniform draws: about 1/n; 0: exact).
  SampleStats& known(const at::Tensor& value, double error) {
    values.push_back(value.reshape({}));
    errors.push_back(at::full({}, error, value.options()));
    return *this;
  }
  // An extreme that is exact only when the sample attains it (a dropout's largest output is the
  // largest input over 1 - p, if some element holding it is kept): judged exactly where `miss`, the
  // chance the sample does not attain it, is below kMissedExtreme; not judged otherwise.
  static constexpr double kMissedExtreme = 1e-9;
  SampleStats& extreme(const at::Tensor& value, double miss) {
    values.push_back(value.reshape({}));
    errors.push_back(miss > kMissedExtreme ? too_few(value) : at::zeros({}, value.options()));
    return *this;
  }
  Tensors done() const { return {at::stack(values), at::stack(errors)}; }

 private:
  static at::Tensor too_few(const at::Tensor& value) {
    return at::full({}, std::numeric_limits<double>::infinity(), value.options());
  }
};

}  // namespace mpscheck::op

// The runtime behind the declarations above.
#include <mpscheck/detail/op_inputs.hpp>
#include <mpscheck/detail/op_workload.hpp>
#include <mpscheck/detail/op_reproducer.hpp>

// Declarative operator cases. One OpDef describes the inputs (shapes, value ranges, memory layout)
// and the op, once, in C++ and as a Python expression; from it mpscheck generates the C++ inputs,
// the forward and backward cases for each dtype and layout variant, and a Python reproducer that
// rebuilds the very same input values from the same seed.
//
//   MPSCHECK_CATALOG(activation_cases) {
//     using namespace mpscheck::op;
//     add_op(catalog, OpDef{"activation", "gelu", {Arg::randn("x", {64, 128})},
//                           [](const Tensors& a) { return Tensors{at::gelu(a[0])}; },
//                           "torch.nn.functional.gelu(x)"},
//            {c10::kFloat, c10::kHalf}, {Variant::contiguous(), Variant::transposed()});
//   }
#pragma once

#include <mpscheck/workload.hpp>
#include <mpscheck/plugin.hpp>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>

#include <cmath>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
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
  bool grad = true;  // floating args get a gradient in backward cases

  static Arg randn(std::string name, std::vector<int64_t> shape) {
    return Arg{std::move(name), std::move(shape)};
  }
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
  Arg& with_layout(Layout l) { layout = l; return *this; }
  Arg& no_grad() { grad = false; return *this; }
  Arg& of(c10::ScalarType t) { dtype = t; return *this; }
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
  OpFn fn;             // the op, in ATen
  std::string python;  // the same op as a Python expression over the arg names
  bool differentiable = true;  // add a backward case for floating dtypes
  std::string tolerance;       // tolerance family (checks/tolerance.cpp); empty = family
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

  static Variant contiguous() { return {"contiguous", [](std::vector<Arg>&) {}}; }
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
  static Variant channels_last(std::string arg = {}) {
    return of("channels_last", Layout::ChannelsLast, arg);
  }
  static Variant expanded(std::string arg = {}) { return of("expanded", Layout::Expanded, arg); }
};

// ----- helpers shared by the C++ side and the Python reproducer -----

inline std::string dtype_short(c10::ScalarType t) {
  switch (t) {
    case c10::kFloat: return "f32";
    case c10::kDouble: return "f64";
    case c10::kHalf: return "f16";
    case c10::kBFloat16: return "bf16";
    case c10::kLong: return "i64";
    case c10::kInt: return "i32";
    case c10::kShort: return "i16";
    case c10::kChar: return "i8";
    case c10::kByte: return "u8";
    case c10::kBool: return "bool";
    default: return c10::toString(t);
  }
}

inline std::string dtype_python(c10::ScalarType t) {
  switch (t) {
    case c10::kFloat: return "torch.float32";
    case c10::kDouble: return "torch.float64";
    case c10::kHalf: return "torch.float16";
    case c10::kBFloat16: return "torch.bfloat16";
    case c10::kLong: return "torch.int64";
    case c10::kInt: return "torch.int32";
    case c10::kShort: return "torch.int16";
    case c10::kChar: return "torch.int8";
    case c10::kByte: return "torch.uint8";
    case c10::kBool: return "torch.bool";
    default: return std::string("torch.") + c10::toString(t);
  }
}

inline std::vector<int64_t> storage_shape(const Arg& a) {
  std::vector<int64_t> s = a.shape;
  switch (a.layout) {
    case Layout::Contiguous: break;
    case Layout::Transposed:
      if (s.size() < 2) throw std::logic_error("transposed layout needs 2+ dims: " + a.name);
      std::swap(s[s.size() - 1], s[s.size() - 2]);
      break;
    case Layout::Sliced:
      if (s.empty()) throw std::logic_error("sliced layout needs 1+ dims: " + a.name);
      s.back() = 2 * s.back() + 1;
      break;
    case Layout::ChannelsLast:
      if (s.size() != 4) throw std::logic_error("channels_last layout needs 4 dims: " + a.name);
      s = {s[0], s[2], s[3], s[1]};
      break;
    case Layout::Expanded:
      if (s.empty()) throw std::logic_error("expanded layout needs 1+ dims: " + a.name);
      s[0] = 1;
      break;
  }
  return s;
}

inline at::Tensor apply_layout(const at::Tensor& base, const Arg& a) {
  switch (a.layout) {
    case Layout::Contiguous: return base;
    case Layout::Transposed: return base.transpose(-1, -2);
    case Layout::Sliced: return base.slice(-1, 1, c10::nullopt, 2);
    case Layout::ChannelsLast: return base.permute({0, 3, 1, 2});
    case Layout::Expanded: return base.expand(a.shape);
  }
  return base;
}

inline std::string python_layout(const std::string& base, const Arg& a) {
  std::ostringstream s;
  switch (a.layout) {
    case Layout::Contiguous: return base;
    case Layout::Transposed: return base + ".transpose(-1, -2)";
    case Layout::Sliced: return base + "[..., 1::2]";
    case Layout::ChannelsLast: return base + ".permute(0, 3, 1, 2)";
    case Layout::Expanded:
      s << base << ".expand([";
      for (size_t i = 0; i < a.shape.size(); ++i) s << (i ? ", " : "") << a.shape[i];
      s << "])";
      return s.str();
  }
  return base;
}

inline std::string python_list(const std::vector<int64_t>& v) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
  s << "]";
  return s.str();
}

inline std::string python_number(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  std::string r = s.str();
  if (r.find_first_of(".e") == std::string::npos && r.find("inf") == std::string::npos) r += ".0";
  return r;
}

// The concrete dtype an arg has on a placement, for a case of dtype `case_dtype`.
inline c10::ScalarType arg_dtype(const Arg& a, c10::ScalarType case_dtype, c10::ScalarType placed) {
  c10::ScalarType t = a.dtype == c10::ScalarType::Undefined ? case_dtype : a.dtype;
  return c10::isFloatingType(t) ? placed : t;
}

// Draws the CPU base tensor of `a` (before dtype conversion and layout) from `gen`.
inline at::Tensor draw(const Arg& a, c10::ScalarType case_dtype, at::Generator& gen) {
  const auto shape = storage_shape(a);
  c10::ScalarType t = a.dtype == c10::ScalarType::Undefined ? case_dtype : a.dtype;
  switch (a.fill) {
    case Fill::Normal:
      if (t == c10::kBool) return at::randint(0, 2, shape, gen, at::TensorOptions().dtype(c10::kLong)).to(c10::kBool);
      if (!c10::isFloatingType(t))
        return at::randint(-8, 8, shape, gen, at::TensorOptions().dtype(c10::kLong)).to(t);
      return at::randn(shape, gen, at::kFloat);
    case Fill::Uniform:
      if (!c10::isFloatingType(t) && t != c10::kBool)
        return at::randint(static_cast<int64_t>(a.lo), static_cast<int64_t>(a.hi), shape, gen,
                           at::TensorOptions().dtype(c10::kLong)).to(t);
      return at::rand(shape, gen, at::kFloat) * (a.hi - a.lo) + a.lo;
    case Fill::Integers:
      return at::randint(static_cast<int64_t>(a.lo), static_cast<int64_t>(a.hi), shape, gen,
                         at::TensorOptions().dtype(c10::kLong)).to(t);
    case Fill::Bool:
      return at::randint(0, 2, shape, gen, at::TensorOptions().dtype(c10::kLong)).to(c10::kBool);
  }
  return {};
}

inline std::string python_draw(const Arg& a, c10::ScalarType case_dtype) {
  const std::string shape = python_list(storage_shape(a));
  c10::ScalarType t = a.dtype == c10::ScalarType::Undefined ? case_dtype : a.dtype;
  const bool integral = !c10::isFloatingType(t) && t != c10::kBool;
  switch (a.fill) {
    case Fill::Normal:
      if (t == c10::kBool) return "torch.randint(0, 2, " + shape + ", generator=gen).bool()";
      if (integral) return "torch.randint(-8, 8, " + shape + ", generator=gen).to(" + dtype_python(t) + ")";
      return "torch.randn(" + shape + ", generator=gen)";
    case Fill::Uniform:
      if (integral)
        return "torch.randint(" + std::to_string(static_cast<int64_t>(a.lo)) + ", " +
               std::to_string(static_cast<int64_t>(a.hi)) + ", " + shape + ", generator=gen).to(" +
               dtype_python(t) + ")";
      return "torch.rand(" + shape + ", generator=gen) * " + python_number(a.hi - a.lo) + " + " +
             python_number(a.lo);
    case Fill::Integers:
      return "torch.randint(" + std::to_string(static_cast<int64_t>(a.lo)) + ", " +
             std::to_string(static_cast<int64_t>(a.hi)) + ", " + shape + ", generator=gen).to(" +
             dtype_python(t) + ")";
    case Fill::Bool:
      return "torch.randint(0, 2, " + shape + ", generator=gen).bool()";
  }
  return {};
}

// Statistics of a random sample with their standard errors, for OpDef::statistics: done() gives
// the {statistics, standard errors} pair such an op returns. Samples are 1-d float tensors.
struct SampleStats {
  Tensors values, errors;
  // The mean of a per-sample quantity q: standard error std(q) / sqrt(n).
  SampleStats& mean(const at::Tensor& q) { return with_error(q.mean(), q); }
  // A statistic whose error is that of the mean of q (var() with q = (x - mean)^2, ...).
  SampleStats& with_error(const at::Tensor& value, const at::Tensor& q) {
    values.push_back(value.reshape({}));
    errors.push_back((q.std() / std::sqrt(static_cast<double>(q.numel()))).reshape({}).to(value.scalar_type()));
    return *this;
  }
  // Fractions p of n independent draws (histogram bins): standard errors sqrt(p (1 - p) / n).
  SampleStats& fractions(const at::Tensor& p, int64_t n) {
    for (const at::Tensor& v : p.reshape({-1}).unbind()) {
      values.push_back(v);
      errors.push_back(at::sqrt(v * (1 - v) / static_cast<double>(n)));
    }
    return *this;
  }
  // A statistic with a known sampling error (an extreme of n uniform draws: about 1/n; 0: exact).
  SampleStats& known(const at::Tensor& value, double error) {
    values.push_back(value.reshape({}));
    errors.push_back(at::full({}, error, value.options()));
    return *this;
  }
  Tensors done() const { return {at::stack(values), at::stack(errors)}; }
};

// ----- the workload -----

class OpWorkload final : public Workload {
 public:
  OpWorkload(OpDef def, std::string variant, c10::ScalarType dtype, bool backward)
      : def_(std::move(def)), variant_(std::move(variant)), dtype_(dtype), backward_(backward) {}

  std::string id() const override {
    return "op/" + def_.family + "/" + def_.op + "/" + dtype_short(dtype_) + "/" + variant_ +
           (backward_ ? "/backward" : "/forward");
  }
  Kind kind() const override { return Kind::Op; }
  std::vector<std::string> tags() const override {
    std::vector<std::string> t = def_.tags;
    t.push_back(def_.family);
    t.push_back(backward_ ? "backward" : "forward");
    if (variant_ != "contiguous") t.push_back("noncontiguous");
    return t;
  }
  std::string family() const override { return def_.tolerance.empty() ? def_.family : def_.tolerance; }
  c10::ScalarType dtype() const override {
    return c10::isFloatingType(dtype_) ? dtype_ : c10::kFloat;
  }
  bool has_gold() const override { return c10::isFloatingType(dtype_) && family() != "random"; }
  // Random ops return statistics of a sample: compared with the "random" tolerance, never re-run
  // for determinism.
  bool is_random() const override { return family() == "random"; }

  std::unique_ptr<Instance> instantiate(const Setup& setup, const Placement& where) const override;
  std::string reproducer(const ReproTarget& target) const override;

  const OpDef& def() const { return def_; }
  bool backward() const { return backward_; }
  c10::ScalarType case_dtype() const { return dtype_; }

 private:
  OpDef def_;
  std::string variant_;
  c10::ScalarType dtype_;
  bool backward_;
};

class OpInstance final : public Instance {
 public:
  OpInstance(const OpWorkload& w, const Setup& setup, const Placement& where) : w_(w), seed_(setup.seed) {
    const OpDef& def = w.def();
    at::Generator gen = at::detail::createCPUGenerator(setup.seed);
    for (const Arg& a : def.args) {
      at::Tensor base = draw(a, w.case_dtype(), gen);
      if (where.round_inputs_to != c10::ScalarType::Undefined && c10::isFloatingType(base.scalar_type()))
        base = base.to(where.round_inputs_to).to(base.scalar_type());
      base = base.to(where.device, arg_dtype(a, w.case_dtype(), where.dtype));
      if (w.backward() && a.grad && c10::isFloatingType(base.scalar_type())) base.requires_grad_(true);
      leaves_.push_back(base);
      views_.push_back(apply_layout(base, a));
    }
  }

  Outputs run() override {
    Tensors outs = forward();
    Outputs result;
    if (!w_.backward()) {
      const OpDef& def = w_.def();
      if (def.statistics && outs.size() == 2) {
        Output o{"out", outs[0].detach()};
        o.standard_error = outs[1].detach();
        return {o};
      }
      for (size_t i = 0; i < outs.size(); ++i)
        result.push_back({outs.size() == 1 ? "out" : "out" + std::to_string(i), outs[i].detach()});
      for (const IndexOf& ix : def.indices) {
        if (ix.output < 0 || static_cast<size_t>(ix.output) >= result.size() || !ix.source) continue;
        at::NoGradGuard no_grad;
        result[ix.output].indexes_into = ix.source(views_).detach();
        result[ix.output].index_dim = ix.dim;
        result[ix.output].index_flat = ix.flat;
      }
      return result;
    }
    backward(outs);
    for (size_t i = 0; i < leaves_.size(); ++i) {
      if (!leaves_[i].requires_grad()) continue;
      at::Tensor g = leaves_[i].grad();
      result.push_back({"grad/" + w_.def().args[i].name, g.defined() ? g.detach().clone() : at::Tensor()});
    }
    return result;
  }

  void iterate() override {
    Tensors outs = forward();
    if (w_.backward()) backward(outs);
  }

 private:
  Tensors forward() {
    c10::optional<at::AutoGradMode> no_grad;
    if (!w_.backward()) no_grad.emplace(false);
    return w_.def().fn(views_);
  }

  // Seeded grad_output for every floating output, drawn on CPU in float32 then placed.
  void backward(const Tensors& outs) {
    for (auto& leaf : leaves_)
      if (leaf.requires_grad() && leaf.grad().defined()) leaf.mutable_grad() = at::Tensor();
    at::Generator gen = at::detail::createCPUGenerator(seed_ + 1);
    Tensors roots, grads;
    for (const auto& o : outs) {
      if (!o.requires_grad()) continue;
      at::Tensor g = at::randn(o.sizes(), gen, at::kFloat).to(o.device(), o.scalar_type());
      roots.push_back(o);
      grads.push_back(g);
    }
    if (roots.empty()) throw std::logic_error("backward case whose outputs need no gradient");
    at::Tensor total;
    for (size_t i = 0; i < roots.size(); ++i) {
      at::Tensor term = (roots[i] * grads[i]).sum();
      total = total.defined() ? total + term : term;
    }
    total.backward();
  }

  const OpWorkload& w_;
  std::uint64_t seed_;
  Tensors leaves_, views_;
};

inline std::unique_ptr<Instance> OpWorkload::instantiate(const Setup& setup, const Placement& where) const {
  return std::make_unique<OpInstance>(*this, setup, where);
}

inline std::string OpWorkload::reproducer(const ReproTarget& target) const {
  const bool floating = c10::isFloatingType(dtype_);
  const std::string target_dtype =
      floating ? (dtype_ == c10::kFloat ? "torch." + target.dtype : dtype_python(dtype_)) : dtype_python(dtype_);
  std::ostringstream py;
  py << "# mpscheck reproducer for " << id() << "\n"
     << "# Runs the op on CPU (float32 reference) and on DEVICE, prints both and the difference.\n"
     << "import json, os\n"
     << "import torch\n\n"
     << "DEVICE = \"" << target.device << "\"\n"
     << "DTYPE = " << target_dtype << "\n"
     << "SEED = " << target.seed << "\n"
     << "BACKWARD = " << (backward_ ? "True" : "False") << "\n\n"
     << "def make_inputs(device, dtype):\n"
     << "    gen = torch.Generator().manual_seed(SEED)\n"
     << "    leaves, args = [], {}\n";
  for (const Arg& a : def_.args) {
    c10::ScalarType t = a.dtype == c10::ScalarType::Undefined ? dtype_ : a.dtype;
    const std::string dt = c10::isFloatingType(t) ? "dtype" : dtype_python(t);
    py << "    base = (" << python_draw(a, dtype_) << ").to(device=device, dtype=" << dt << ")\n";
    if (backward_ && a.grad && c10::isFloatingType(t)) py << "    base.requires_grad_(True)\n";
    py << "    leaves.append((\"" << a.name << "\", base))\n"
       << "    args[\"" << a.name << "\"] = " << python_layout("base", a) << "\n";
  }
  py << "    return leaves, args\n\n"
     << "def run(device, dtype):\n"
     << "    leaves, args = make_inputs(device, dtype)\n"
     << "    with torch.set_grad_enabled(BACKWARD):\n"
     << "        out = (lambda " ;
  for (size_t i = 0; i < def_.args.size(); ++i) py << (i ? ", " : "") << def_.args[i].name;
  py << ": " << def_.python << ")(**args)\n"
     << "    outs = list(out) if isinstance(out, (tuple, list)) else [out]\n"
     << "    if not BACKWARD:\n"
     << "        return {(\"out\" if len(outs) == 1 else \"out%d\" % i): o.detach().cpu() for i, o in enumerate(outs)}\n"
     << "    gen = torch.Generator().manual_seed(SEED + 1)\n"
     << "    total = None\n"
     << "    for o in outs:\n"
     << "        if not o.requires_grad:\n"
     << "            continue\n"
     << "        g = torch.randn(list(o.shape), generator=gen).to(device=o.device, dtype=o.dtype)\n"
     << "        term = (o * g).sum()\n"
     << "        total = term if total is None else total + term\n"
     << "    total.backward()\n"
     << "    return {\"grad/\" + name: leaf.grad.detach().cpu() for name, leaf in leaves if leaf.grad is not None}\n\n"
     << "reference = run(\"cpu\", torch.float32)\n"
     << "target = run(DEVICE, DTYPE)\n"
     << "for name, ref in reference.items():\n"
     << "    got = target[name]\n"
     << "    print(name, \"cpu:\", ref.flatten()[:8].tolist())\n"
     << "    print(name, DEVICE + \":\", got.flatten()[:8].tolist())\n"
     << "    if ref.is_floating_point() or got.is_floating_point():\n"
     << "        diff = (got.double() - ref.double()).abs().max().item()\n"
     << "    else:\n"
     << "        diff = (got.long() - ref.long()).abs().max().item()\n"
     << "    print(name, \"max abs difference:\", diff)\n"
     << "# For mpscheck's own tests: the reference values, to check the inputs were rebuilt exactly.\n"
     << "if os.environ.get(\"MPSCHECK_REPRO_JSON\"):\n"
     << "    with open(os.environ[\"MPSCHECK_REPRO_JSON\"], \"w\") as f:\n"
     << "        finite = lambda v: v if v == v and abs(v) != float(\"inf\") else None\n"
     << "        json.dump({n: [finite(v) for v in r.flatten()[:16].double().tolist()] for n, r in reference.items()}, f)\n";
  return py.str();
}

// Adds the forward case, and the backward case where the op is differentiable and the dtype
// floating, for every dtype × variant.
inline void add_op(Catalog& catalog, const OpDef& def,
                   const std::vector<c10::ScalarType>& dtypes = {c10::kFloat},
                   const std::vector<Variant>& variants = {Variant::contiguous()}) {
  for (c10::ScalarType dtype : dtypes) {
    for (const Variant& v : variants) {
      OpDef d = def;
      v.apply(d.args);
      catalog.add(std::make_unique<OpWorkload>(d, v.name, dtype, false));
      if (def.differentiable && c10::isFloatingType(dtype))
        catalog.add(std::make_unique<OpWorkload>(d, v.name, dtype, true));
    }
  }
}

}  // namespace mpscheck::op

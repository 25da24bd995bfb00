// The op SDK's runtime: the Workload and Instance every OpDef case becomes, and add_op, which
// makes them. Part of <mpscheck/op.hpp>, which includes it after its declarations; include that.
#pragma once

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace mpscheck::op {

class OpWorkload final : public Workload {
 public:
  OpWorkload(OpDef def, std::string variant, c10::ScalarType dtype, bool backward)
      : def_(std::move(def)), variant_(std::move(variant)), dtype_(dtype), backward_(backward) {}

  std::string id() const override {
    return "op/" + def_.family + "/" + def_.op + "/" + dtype_id(dtype_) + "/" + variant_ +
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
  c10::ScalarType dtype() const override { return c10::isFloatingType(dtype_) ? dtype_ : c10::kFloat; }
  bool has_gold() const override { return c10::isFloatingType(dtype_) && family() != "random"; }
  // Random ops return statistics of a sample: compared with the "random" tolerance, never re-run
  // for determinism.
  bool is_random() const override { return family() == "random"; }

  std::unique_ptr<Instance> instantiate(const Setup& setup, const Placement& where) const override;
  std::string reproducer(const ReproTarget& target) const override;

  std::vector<InputShape> input_shapes() const override {
    std::vector<InputShape> shapes;
    for (const Arg& a : def_.args)
      shapes.push_back({a.name, a.shape, a.cpu_scalar ? "cpu_scalar" : layout_name(a.layout), a.ties, floating(a)});
    return shapes;
  }
  // The args keep their fill, dtype and layout; only their shapes change (the layout views the
  // new shape as it viewed the declared one).
  std::unique_ptr<Workload> with_input_shapes(const std::vector<std::vector<int64_t>>& shapes) const override {
    if (shapes.size() != def_.args.size()) return nullptr;
    OpDef d = def_;
    for (size_t i = 0; i < shapes.size(); ++i) d.args[i].shape = shapes[i];
    return std::make_unique<OpWorkload>(std::move(d), variant_, dtype_, backward_);
  }
  // Also in other layouts and at storage offsets; nullptr for a layout the input's rank cannot take.
  std::unique_ptr<Workload> with_inputs(const std::vector<InputVariant>& inputs) const override {
    if (inputs.size() != def_.args.size()) return nullptr;
    OpDef d = def_;
    for (size_t i = 0; i < inputs.size(); ++i) {
      Arg& a = d.args[i];
      a.shape = inputs[i].shape;
      if (inputs[i].storage_offset < 0) return nullptr;
      a.storage_offset = inputs[i].storage_offset;
      switch (inputs[i].layout) {
        case InputLayout::Declared: break;
        case InputLayout::Contiguous: a.layout = Layout::Contiguous; break;
        case InputLayout::Transposed: a.layout = Layout::Transposed; break;
        case InputLayout::ChannelsLast: a.layout = Layout::ChannelsLast; break;
        case InputLayout::CpuScalar:
          if (!floating(a)) return nullptr;
          a.shape.clear();
          a.layout = Layout::Contiguous;
          a.cpu_scalar = true;
          break;
      }
      if ((a.layout == Layout::Transposed && a.shape.size() < 2) ||
          (a.layout == Layout::ChannelsLast && a.shape.size() != 4) ||
          ((a.layout == Layout::Sliced || a.layout == Layout::Expanded) && a.shape.empty()))
        return nullptr;
    }
    return std::make_unique<OpWorkload>(std::move(d), variant_, dtype_, backward_);
  }

  const OpDef& def() const { return def_; }
  bool backward() const { return backward_; }
  // Whether arg `a` is a floating tensor in this case's dtype.
  bool floating(const Arg& a) const {
    return c10::isFloatingType(a.dtype == c10::ScalarType::Undefined ? dtype_ : a.dtype);
  }
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
      // A 0-dim CPU operand stays on the CPU, whatever the device.
      base = base.to(a.cpu_scalar ? c10::Device(c10::kCPU) : where.device, arg_dtype(a, w.case_dtype(), where.dtype));
      if (w.backward() && a.grad && c10::isFloatingType(base.scalar_type())) base.requires_grad_(true);
      leaves_.push_back(base);
      views_.push_back(apply_layout(apply_storage_offset(base, a), a));
      written_before_.push_back(a.written ? views_.back().detach().clone() : at::Tensor());
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
      add_written(result);
      return result;
    }
    backward(outs);
    for (size_t i = 0; i < leaves_.size(); ++i) {
      if (!leaves_[i].requires_grad()) continue;
      at::Tensor g = leaves_[i].grad();
      result.push_back({"grad/" + w_.def().args[i].name, g.defined() ? g.detach().clone() : at::Tensor()});
    }
    add_written(result);
    return result;
  }

  // The args the op writes in place (run() is a fresh instance's first call): what the call moved
  // each by ("arg_update/<name>", after minus before, the size of the write itself: a momentum
  // update 10% short is plain there, while beside the whole value in bfloat16 it is a unit or two
  // of rounding), and the value it left ("arg/<name>").
  void add_written(Outputs& result) const {
    for (size_t i = 0; i < views_.size(); ++i) {
      if (!w_.def().args[i].written) continue;
      const at::Tensor after = views_[i].detach();
      result.push_back({"arg_update/" + w_.def().args[i].name, after - written_before_[i]});
      result.push_back({"arg/" + w_.def().args[i].name, after.clone()});
    }
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

  // Seeded grad_output for every floating output: drawn on CPU in float32 (so the reference and
  // the target weigh their outputs with the same numbers), placed on the device once per instance
  // and kept. Drawing and copying it on every iteration cost 30-47 us of a 95-150 us backward
  // iteration here, a host-to-device copy real training does not do, and pulled every backward
  // speed ratio toward 1. The outputs' shapes and dtypes are fixed per instance; should they ever
  // change, the grads are drawn again.
  void backward(const Tensors& outs) {
    for (auto& leaf : leaves_)
      if (leaf.requires_grad() && leaf.grad().defined()) leaf.mutable_grad() = at::Tensor();
    Tensors roots;
    for (const auto& o : outs)
      if (o.requires_grad()) roots.push_back(o);
    if (roots.empty()) throw std::logic_error("backward case whose outputs need no gradient");
    if (!grads_fit(roots)) {
      at::Generator gen = at::detail::createCPUGenerator(seed_ + 1);
      grad_outputs_.clear();
      for (const auto& o : roots)
        grad_outputs_.push_back(at::randn(o.sizes(), gen, at::kFloat).to(o.device(), o.scalar_type()));
    }
    at::Tensor total;
    for (size_t i = 0; i < roots.size(); ++i) {
      at::Tensor term = (roots[i] * grad_outputs_[i]).sum();
      total = total.defined() ? total + term : term;
    }
    total.backward();
  }

  bool grads_fit(const Tensors& roots) const {
    if (grad_outputs_.size() != roots.size()) return false;
    for (size_t i = 0; i < roots.size(); ++i) {
      const at::Tensor& g = grad_outputs_[i];
      if (g.sizes() != roots[i].sizes() || g.scalar_type() != roots[i].scalar_type() || g.device() != roots[i].device())
        return false;
    }
    return true;
  }

  const OpWorkload& w_;
  std::uint64_t seed_;
  Tensors leaves_, views_;
  Tensors written_before_;  // a written arg's value before the first call; undefined for the rest
  Tensors grad_outputs_;    // drawn at the first backward step, see backward()
};

inline std::unique_ptr<Instance> OpWorkload::instantiate(const Setup& setup, const Placement& where) const {
  return std::make_unique<OpInstance>(*this, setup, where);
}

inline void add_op(Catalog& catalog, const OpDef& def, const Coverage& coverage) {
  for (c10::ScalarType dtype : coverage.dtypes) {
    for (const Variant& v : coverage.variants_for(dtype)) {
      OpDef d = def;
      v.apply(d.args);
      catalog.add(std::make_unique<OpWorkload>(d, v.name, dtype, false));
      if (def.differentiable && c10::isFloatingType(dtype))
        catalog.add(std::make_unique<OpWorkload>(d, v.name, dtype, true));
    }
  }
}

inline void add_op(Catalog& catalog, const OpDef& def, const DTypes& dtypes, const Variants& variants) {
  add_op(catalog, def, Coverage(dtypes, variants));
}

}  // namespace mpscheck::op

#include "torchscript_workload.hpp"

#include "checks/compare.hpp"
#include "checks/errors.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <torch/script.h>

#include <filesystem>

namespace mpscheck {

namespace {


// Flattens any output (tensor, tuple, list, dict of tensors, nested) into named tensors.
void flatten(const c10::IValue& v, const std::string& name, Outputs& out) {
  if (v.isTensor()) {
    out.push_back({name, v.toTensor()});
  } else if (v.isTuple()) {
    const auto& elems = v.toTupleRef().elements();
    for (size_t i = 0; i < elems.size(); ++i) flatten(elems[i], name + "." + std::to_string(i), out);
  } else if (v.isList()) {
    const auto list = v.toListRef();
    for (size_t i = 0; i < list.size(); ++i) flatten(list[i], name + "." + std::to_string(i), out);
  } else if (v.isGenericDict()) {
    for (const auto& entry : v.toGenericDict()) {
      const auto& key = entry.key();
      const std::string k = key.isString() ? key.toStringRef() : key.isInt() ? std::to_string(key.toInt()) : "?";
      flatten(entry.value(), name + "." + k, out);
    }
  } else if (v.isDouble() || v.isInt() || v.isBool()) {
    out.push_back({name, at::scalar_tensor(v.isDouble() ? v.toDouble() : v.isInt() ? static_cast<double>(v.toInt()) : v.toBool(),
                                           at::kDouble)});
  }
}

class TorchScriptInstance final : public Instance {
 public:
  TorchScriptInstance(const TorchScriptOptions& o, bool train, const Setup& setup, const Placement& where)
      : train_(train) {
    module_ = torch::jit::load(o.path, c10::Device(c10::kCPU));
    module_.eval();
    at::Generator gen = at::detail::createCPUGenerator(setup.seed);
    for (const auto& spec : o.inputs) {
      at::Tensor t;
      if (c10::isFloatingType(spec.dtype)) {
        t = at::randn(spec.shape, gen, at::kFloat);
        if (where.round_inputs_to != c10::ScalarType::Undefined) t = t.to(where.round_inputs_to).to(at::kFloat);
        t = t.to(where.device, where.dtype);
      } else if (spec.dtype == c10::kBool) {
        t = at::randint(0, 2, spec.shape, gen, at::TensorOptions().dtype(c10::kLong)).to(c10::kBool).to(where.device);
      } else {
        t = at::randint(spec.lo, spec.hi, spec.shape, gen, at::TensorOptions().dtype(c10::kLong)).to(spec.dtype).to(where.device);
      }
      inputs_.emplace_back(t);
    }
    module_.to(where.device, where.dtype);
  }

  Outputs run() override {
    Outputs out;
    if (!train_) {
      torch::NoGradGuard no_grad;
      flatten(module_.forward(inputs_), "out", out);
      for (auto& o : out) o.value = o.value.detach();
      return out;
    }
    for (const auto& p : module_.parameters()) {
      if (p.grad().defined()) p.mutable_grad() = at::Tensor();
    }
    flatten(module_.forward(inputs_), "out", out);
    at::Tensor total;
    for (const auto& o : out)
      if (o.value.requires_grad() && c10::isFloatingType(o.value.scalar_type()))
        total = total.defined() ? total + o.value.sum() : o.value.sum();
    if (!total.defined()) throw std::runtime_error("no output of the model needs a gradient: nothing to train");
    total.backward();
    Outputs grads;
    for (const auto& p : module_.named_parameters())
      if (p.value.grad().defined()) grads.push_back({"grad/" + p.name, p.value.grad().detach().clone()});
    return grads;
  }

  void iterate() override {
    if (!train_) {
      torch::NoGradGuard no_grad;
      module_.forward(inputs_);
      return;
    }
    run();
  }

 private:
  torch::jit::Module module_;
  std::vector<c10::IValue> inputs_;
  bool train_;
};

class TorchScriptWorkload final : public Workload {
 public:
  TorchScriptWorkload(TorchScriptOptions o, bool train) : o_(std::move(o)), train_(train) {}
  std::string id() const override {
    return "model/torchscript/" + std::filesystem::path(o_.path).stem().string() + (train_ ? "/train" : "/infer");
  }
  Kind kind() const override { return Kind::Model; }
  std::vector<std::string> tags() const override { return {"torchscript", train_ ? "train" : "infer"}; }
  std::string family() const override { return train_ ? "train" : "model"; }
  std::unique_ptr<Instance> instantiate(const Setup& setup, const Placement& where) const override {
    return std::make_unique<TorchScriptInstance>(o_, train_, setup, where);
  }

 private:
  TorchScriptOptions o_;
  bool train_;
};

}  // namespace

TorchScriptOptions torchscript_options(const std::string& path, const std::vector<std::string>& specs) {
  TorchScriptOptions o{path, {}};
  for (const auto& spec : specs) o.inputs.push_back(parse_input_spec(spec));
  return o;
}

std::vector<std::unique_ptr<Workload>> make_torchscript_workloads(const TorchScriptOptions& options, bool train) {
  std::vector<std::unique_ptr<Workload>> out;
  out.push_back(std::make_unique<TorchScriptWorkload>(options, false));
  if (train) out.push_back(std::make_unique<TorchScriptWorkload>(options, true));
  return out;
}

void validate_torchscript(const TorchScriptOptions& options) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(options.path, ec))
    throw BadModelInput(fmt::format("--model {}: no such file", options.path));
  if (options.inputs.empty())
    throw BadModelInput(fmt::format("--model {}: give the model's inputs with --input, e.g. --input float32[1,3,224,224]",
                                    options.path));
  try {
    torch::jit::load(options.path, c10::Device(c10::kCPU));
  } catch (const std::exception& e) {
    throw BadModelInput(fmt::format("--model {} is not a readable TorchScript file ({}); save it with "
                                    "torch.jit.script(model).save() or torch.jit.trace(...).save()",
                                    options.path, tidy_exception_message(e.what())));
  }
  try {
    TorchScriptInstance probe(options, false, Setup{}, Placement{});
    probe.run();
  } catch (const std::exception& e) {
    throw BadModelInput(fmt::format("--model {}: the inputs do not fit the model ({})", options.path, tidy_exception_message(e.what())));
  }
}

}  // namespace mpscheck

#include "torchscript_workload.hpp"

#include "checks/compare.hpp"
#include "checks/errors.hpp"
#include "core/reference_cache.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <torch/script.h>

#include <cstring>
#include <filesystem>
#include <set>

namespace mpscheck {

namespace {


// A non-tensor value that is compared by equality, as a uint8 tensor of its text after a one-byte
// tag ('s' a string, 'd' a device, 'N' None), so it rides through the cache, the worker protocol
// and the exact rule of checks/compare.cpp like any integer output: a flipped label is a
// mismatch, and "None" never equals the empty string.
at::Tensor text_tensor(char tag, const std::string& text) {
  std::string bytes(1, tag);
  bytes += text;
  at::Tensor t = at::empty({static_cast<int64_t>(bytes.size())}, at::kByte);
  std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
  return t;
}

// Flattens any output (tensor, tuple, list, dict, nested) into named tensors. Python ints and
// bools become exact int64/bool scalars, floats float64 scalars under the float rule, complex
// numbers complex128. With `strict` (the outputs that are compared), a value that cannot be
// compared, or a dict key that is neither str nor int, is refused with its name rather than
// dropped: a dropped output can hide any error. Without it (a training forward, whose tensors are
// only summed for backward) such values are skipped.
void flatten(const c10::IValue& v, const std::string& name, Outputs& out, bool strict) {
  if (v.isTensor()) {
    out.push_back({name, v.toTensor()});
  } else if (v.isTuple()) {
    const auto& elems = v.toTupleRef().elements();
    for (size_t i = 0; i < elems.size(); ++i) flatten(elems[i], name + "." + std::to_string(i), out, strict);
  } else if (v.isList()) {
    const auto list = v.toListRef();
    for (size_t i = 0; i < list.size(); ++i) flatten(list[i], name + "." + std::to_string(i), out, strict);
  } else if (v.isGenericDict()) {
    for (const auto& entry : v.toGenericDict()) {
      const auto& key = entry.key();
      if (!key.isString() && !key.isInt()) {
        if (!strict) continue;
        throw UncomparableOutput(fmt::format("output {} is a dict with a {} key; mpscheck names dict outputs by their "
                                             "keys and compares only str or int keys",
                                             name, key.tagKind()));
      }
      flatten(entry.value(), name + "." + (key.isString() ? key.toStringRef() : std::to_string(key.toInt())), out,
              strict);
    }
  } else if (v.isDouble()) {
    out.push_back({name, at::scalar_tensor(v.toDouble(), at::kDouble)});
  } else if (v.isInt()) {
    out.push_back({name, at::scalar_tensor(v.toInt(), at::kLong)});
  } else if (v.isBool()) {
    out.push_back({name, at::scalar_tensor(v.toBool(), at::kBool)});
  } else if (v.isComplexDouble()) {
    out.push_back({name, at::scalar_tensor(c10::Scalar(v.toComplexDouble()), at::kComplexDouble)});
  } else if (v.isString()) {
    out.push_back({name, text_tensor('s', v.toStringRef())});
  } else if (v.isNone()) {
    out.push_back({name, text_tensor('N', "")});
  } else if (v.isDevice()) {
    out.push_back({name, text_tensor('d', v.toDevice().str())});
  } else if (strict) {
    throw UncomparableOutput(fmt::format("output {} is a {} ({}), which mpscheck cannot compare; return tensors, "
                                         "numbers, strings or containers of them",
                                         name, v.tagKind(), v.type()->repr_str()));
  }
}

// The compared outputs of one forward: every value flattened, and no two with the same name (a
// dict key with a dot can spell another output's name, and one would hide the other).
Outputs flatten_outputs(const c10::IValue& v) {
  Outputs out;
  flatten(v, "out", out, true);
  std::set<std::string> seen;
  for (const auto& o : out)
    if (!seen.insert(o.name).second)
      throw UncomparableOutput(fmt::format("two outputs are both named {} (a dict key with a dot, or a key that "
                                           "spells a list index); rename the keys so that each output has its own name",
                                           o.name));
  return out;
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
    // Floating parameters and buffers only change dtype, as Python's nn.Module.to(dtype) does:
    // jit::Module::to(device, dtype) would convert integer buffers too (BERT's int64
    // position_ids become float, and the gather that reads them fails). The reduced-precision
    // baseline rounds the weights as well as the inputs, like the C++ model SDK.
    module_.to(where.device);
    auto convert = [&](at::Tensor t) {
      if (!t.is_floating_point()) return;
      at::Tensor v = t.detach();
      if (where.round_inputs_to != c10::ScalarType::Undefined) v = v.to(where.round_inputs_to).to(at::kFloat);
      t.set_data(v.to(where.dtype));
    };
    for (const auto& p : module_.parameters()) convert(p);
    for (const auto& b : module_.buffers()) convert(b);
  }

  Outputs run() override {
    Outputs out;
    if (!train_) {
      torch::NoGradGuard no_grad;
      out = flatten_outputs(module_.forward(inputs_));
      for (auto& o : out) o.value = o.value.detach();
      return out;
    }
    for (const auto& p : module_.parameters()) {
      if (p.grad().defined()) p.mutable_grad() = at::Tensor();
    }
    flatten(module_.forward(inputs_), "out", out, false);
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
  std::string identity() const {
    std::string specs;
    for (const auto& i : o_.inputs) specs += (specs.empty() ? "" : " ") + i.text;
    return fmt::format("torchscript {} inputs {} train {}", file_digest(o_.path), specs, train_ ? 1 : 0);
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

std::string torchscript_identity(const Workload& w) {
  const auto* ts = dynamic_cast<const TorchScriptWorkload*>(&w);
  return ts ? ts->identity() : std::string();
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
  } catch (const UncomparableOutput&) {
    // The model runs; its outputs are the case's own `error`, named in the report.
  } catch (const std::exception& e) {
    throw BadModelInput(fmt::format("--model {}: the inputs do not fit the model ({})", options.path, tidy_exception_message(e.what())));
  }
}

}  // namespace mpscheck

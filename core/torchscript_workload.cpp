#include "torchscript_workload.hpp"

#include "checks/compare.hpp"
#include "checks/errors.hpp"
#include "core/reference_cache.hpp"
#include "util/atomic_file.hpp"

#include <mpscheck/dtype_names.hpp>

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/script.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>

namespace mpscheck {

namespace {

// The extra file in which scripts/export-hf.py records the --input specs a file was traced with.
constexpr const char* kInputsRecord = "mpscheck/inputs";

// A --model-for file's parameters and buffers are replaced by the --model file's, by name, so that
// every side computes with the same weights whatever the other file holds; a name or shape that
// is not there means the two files are not one model.
void take_state(torch::jit::Module& into, const torch::jit::Module& from, const std::string& into_path,
                const std::string& from_path) {
  std::map<std::string, at::Tensor> state;
  for (const auto& p : from.named_parameters()) state[p.name] = p.value;
  for (const auto& b : from.named_buffers()) state[b.name] = b.value;
  size_t taken = 0;
  const auto take = [&](const std::string& name, const at::Tensor& t) {
    const auto it = state.find(name);
    if (it == state.end() || it->second.sizes() != t.sizes() || it->second.is_floating_point() != t.is_floating_point())
      throw BadModelInput(
          fmt::format("--model-for {}: its {} {} is not in --model {}; export both files from one "
                      "model (scripts/export-hf.py writes them together)",
                      into_path, name, fmt::join(t.sizes(), "x"), from_path));
    t.set_data(it->second.detach().clone());
    ++taken;
  };
  for (const auto& p : into.named_parameters()) take(p.name, p.value);
  for (const auto& b : into.named_buffers()) take(b.name, b.value);
  if (taken != state.size())
    throw BadModelInput(
        fmt::format("--model-for {} has {} parameters and buffers, --model {} has {}; export both "
                    "files from one model (scripts/export-hf.py writes them together)",
                    into_path, taken, from_path, state.size()));
}

// torch.jit.trace records the device Python passed (torch.arange(n, device=x.device) in
// transformers' masks and position ids) as a constant: a graph traced on the CPU would make those
// tensors on the CPU beside the target's. They are placed on the target's device instead, as a
// trace made there would have recorded; what is computed does not change.
void place_device_constants(torch::jit::Block* block, const c10::Device& device) {
  for (torch::jit::Node* node : block->nodes()) {
    for (torch::jit::Block* inner : node->blocks()) place_device_constants(inner, device);
    if (node->kind() == c10::prim::Constant && node->output()->type()->kind() == c10::TypeKind::DeviceObjType &&
        node->hasAttribute(c10::attr::value) && c10::Device(node->s(c10::attr::value)).is_cpu())
      node->s_(c10::attr::value, device.str());
  }
}

void place_device_constants(const torch::jit::Module& module, const c10::Device& device) {
  for (const auto& m : module.modules())
    for (const auto& method : m.get_methods()) place_device_constants(method.graph()->block(), device);
}

// The ops whose `dtype` argument a trace recorded as a float32 constant (x.to(torch.float32),
// torch.full(..., dtype=torch.float32)): run with float16/bfloat16 weights, those parts of the graph
// still compute in float32.
void count_float32_dtypes(torch::jit::Block* block, std::map<std::string, int>& ops) {
  for (torch::jit::Node* node : block->nodes()) {
    for (torch::jit::Block* inner : node->blocks()) count_float32_dtypes(inner, ops);
    const c10::FunctionSchema* schema = node->maybeSchema();
    if (!schema) continue;
    for (size_t i = 0; i < node->inputs().size() && i < schema->arguments().size(); ++i) {
      const torch::jit::Node* c = node->inputs()[i]->node();
      if (schema->arguments()[i].name() == "dtype" && c->kind() == c10::prim::Constant &&
          c->hasAttribute(c10::attr::value) && c->kindOf(c10::attr::value) == torch::jit::AttributeKind::i &&
          c->i(c10::attr::value) == static_cast<int64_t>(c10::kFloat))
        ++ops[node->kind().toQualString()];
    }
  }
}

std::string float32_dtypes_in(const torch::jit::Module& module) {
  std::map<std::string, int> ops;
  for (const auto& m : module.modules())
    for (const auto& method : m.get_methods()) count_float32_dtypes(method.graph()->block(), ops);
  std::string text;
  for (const auto& [op, n] : ops) text += fmt::format("{}{} {}", text.empty() ? "" : ", ", n, op);
  return text;
}

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
        throw UncomparableOutput(
            fmt::format("output {} is a dict with a {} key; mpscheck names dict outputs by their "
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
    throw UncomparableOutput(
        fmt::format("output {} is a {} ({}), which mpscheck cannot compare; return tensors, "
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
      throw UncomparableOutput(
          fmt::format("two outputs are both named {} (a dict key with a dot, or a key that "
                      "spells a list index); rename the keys so that each output has its own name",
                      o.name));
  return out;
}

}  // namespace

std::vector<at::Tensor> model_inputs(const std::vector<InputSpec>& specs, const Setup& setup, const Placement& where) {
  std::vector<at::Tensor> inputs;
  at::Generator gen = at::detail::createCPUGenerator(setup.seed);
  for (const auto& spec : specs) {
    at::Tensor t;
    if (c10::isFloatingType(spec.dtype)) {
      t = at::randn(spec.shape, gen, at::kFloat);
      if (where.round_inputs_to != c10::ScalarType::Undefined) t = t.to(where.round_inputs_to).to(at::kFloat);
      t = t.to(where.device, where.dtype);
    } else if (spec.dtype == c10::kBool) {
      t = at::randint(0, 2, spec.shape, gen, at::TensorOptions().dtype(c10::kLong)).to(c10::kBool).to(where.device);
    } else {
      t = at::randint(spec.lo, spec.hi, spec.shape, gen, at::TensorOptions().dtype(c10::kLong))
              .to(spec.dtype)
              .to(where.device);
    }
    inputs.push_back(t);
  }
  return inputs;
}

namespace {

class TorchScriptInstance final : public Instance {
 public:
  TorchScriptInstance(const TorchScriptOptions& o, bool train, const Setup& setup, const Placement& where)
      : train_(train) {
    // A side computing in a dtype the user traced the model in runs that graph (never the
    // rounded-input baseline, which computes in float32).
    const auto own = o.traced_in.find(where.dtype);
    if (own != o.traced_in.end() && where.round_inputs_to == c10::ScalarType::Undefined) {
      module_ = torch::jit::load(own->second, c10::Device(c10::kCPU));
      take_state(module_, torch::jit::load(o.path, c10::Device(c10::kCPU)), own->second, o.path);
    } else {
      module_ = torch::jit::load(o.path, c10::Device(c10::kCPU));
    }
    module_.eval();
    if (own == o.traced_in.end() && (where.dtype == c10::kHalf || where.dtype == c10::kBFloat16)) {
      // Kept in the case's warnings: a pass then says what it did not judge in the reduced dtype.
      if (const std::string ops = float32_dtypes_in(module_); !ops.empty()) {
        const std::string name = dtype_name(where.dtype);
        TORCH_WARN("the graph fixes dtype float32 in ", ops, ": that part computed in float32, not in ", name,
                   "; trace the model in ", name, " and pass it as --model-for ", name,
                   "=FILE to judge it as it runs in ", name);
      }
    }
    for (const auto& t : model_inputs(o.inputs, setup, where)) inputs_.emplace_back(t);
    // Floating parameters and buffers only change dtype, as Python's nn.Module.to(dtype) does:
    // jit::Module::to(device, dtype) would convert integer buffers too (BERT's int64
    // position_ids become float, and the gather that reads them fails). The reduced-precision
    // baseline rounds the weights as well as the inputs, like the C++ model SDK.
    module_.to(where.device);
    if (!where.device.is_cpu()) place_device_constants(module_, where.device);
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

class TorchScriptWorkload final : public UserModelWorkload {
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
  std::string identity() const override {
    std::string specs;
    for (const auto& i : o_.inputs) specs += (specs.empty() ? "" : " ") + i.text;
    std::string traced_in;
    for (const auto& [dtype, path] : o_.traced_in)
      traced_in += fmt::format(" {} {}", dtype_name(dtype), file_digest(path));
    return fmt::format("torchscript {} inputs {} train {}{}", file_digest(o_.path), specs, train_ ? 1 : 0, traced_in);
  }

 private:
  TorchScriptOptions o_;
  bool train_;
};

}  // namespace

TorchScriptOptions torchscript_options(const std::string& path, const std::vector<std::string>& specs,
                                       const std::vector<std::string>& model_for) {
  TorchScriptOptions o{path, {}, {}};
  for (const auto& spec : specs) o.inputs.push_back(parse_input_spec(spec));
  for (const auto& m : model_for) {
    const auto eq = m.find('=');
    const std::string name = m.substr(0, eq);
    const std::optional<c10::ScalarType> word = dtype_from_word(name);
    const c10::ScalarType dtype = word.value_or(c10::ScalarType::Undefined);
    if (eq == std::string::npos || (dtype != c10::kDouble && dtype != c10::kBFloat16 && dtype != c10::kHalf))
      throw BadModelInput(
          fmt::format("--model-for {}: give DTYPE=FILE with DTYPE float64, bfloat16 or float16 "
                      "(--model is the float32 file)",
                      m.substr(0, 200)));
    if (!o.traced_in.emplace(dtype, m.substr(eq + 1)).second)
      throw BadModelInput(fmt::format("--model-for names two files for {}; give one", dtype_name(dtype)));
  }
  return o;
}

bool is_torchscript(const Workload& w) { return dynamic_cast<const UserModelWorkload*>(&w) != nullptr; }

std::vector<std::unique_ptr<Workload>> make_torchscript_workloads(const TorchScriptOptions& options, bool train) {
  std::vector<std::unique_ptr<Workload>> out;
  out.push_back(std::make_unique<TorchScriptWorkload>(options, false));
  if (train) out.push_back(std::make_unique<TorchScriptWorkload>(options, true));
  return out;
}

std::string torchscript_identity(const Workload& w) {
  const auto* user = dynamic_cast<const UserModelWorkload*>(&w);
  return user ? user->identity() : std::string();
}

std::string case_source(const RegisteredWorkload& rw) {
  std::string source = torchscript_identity(*rw.workload);
  std::error_code ec;
  if (source.empty() && rw.plugin && std::filesystem::is_regular_file(rw.plugin->path, ec))
    source = file_digest(rw.plugin->path);
  return source;
}

namespace {

torch::jit::Module load_or_refuse(const std::string& flag, const std::string& path,
                                  torch::jit::ExtraFilesMap* extra = nullptr) {
  if (const std::string why = not_a_file_reason(path); !why.empty())
    throw BadModelInput(fmt::format("{} {}: {}", flag, path, why));
  try {
    const c10::Device cpu(c10::kCPU);
    return extra ? torch::jit::load(path, cpu, *extra) : torch::jit::load(path, cpu);
  } catch (const std::exception& e) {
    throw BadModelInput(
        fmt::format("{} {} is not a readable TorchScript file ({}); save it with "
                    "torch.jit.script(model).save() or torch.jit.trace(...).save()",
                    flag, path, tidy_exception_message(e.what())));
  }
}

std::string spec_list(const std::vector<InputSpec>& specs) {
  std::string s;
  for (const auto& i : specs) s += (s.empty() ? "" : " ") + i.text;
  return s;
}

// Count and argument types from forward's schema; dtype and rank from the record an export left.
void check_inputs(const torch::jit::Module& module, const TorchScriptOptions& o, const std::string& recorded) {
  const c10::FunctionSchema& schema = module.get_method("forward").function().getSchema();
  const auto& args = schema.arguments();  // args[0] is self
  std::vector<std::string> names;
  size_t required = 0;
  for (size_t i = 1; i < args.size(); ++i) {
    names.push_back(args[i].name());
    if (!args[i].default_value()) required = i;
  }
  const size_t given = o.inputs.size();
  if (given < required || given > names.size())
    throw BadModelInput(
        fmt::format("--model {}: its forward({}) takes {}{} input{}, and --input gives {}; give one "
                    "--input per argument, in order",
                    o.path, fmt::join(names, ", "), required == names.size() ? "" : "at least ", required,
                    required == 1 ? "" : "s", given));
  for (size_t i = 0; i < given; ++i) {
    c10::TypePtr type = args[i + 1].type();
    if (auto opt = type->cast<c10::OptionalType>()) type = opt->getElementType();
    if (!type->cast<c10::TensorType>())
      throw BadModelInput(
          fmt::format("--model {}: argument {} of forward is {}: {}, and --input {} makes a tensor; "
                      "wrap the model so that forward takes tensors",
                      o.path, names[i], names[i], args[i + 1].type()->repr_str(), o.inputs[i].text));
  }
  if (recorded.empty()) return;
  std::vector<InputSpec> traced;
  try {
    std::istringstream words(recorded);
    for (std::string w; words >> w;) traced.push_back(parse_input_spec(w));
  } catch (const BadModelInput&) {
    return;  // a record this version cannot read checks nothing
  }
  const auto mismatch = [&](const std::string& what) {
    return BadModelInput(
        fmt::format("--model {}: {}; it was exported with --input {}", o.path, what, spec_list(traced)));
  };
  if (traced.size() != given)
    throw mismatch(fmt::format("--input gives {} inputs, the model takes {}", given, traced.size()));
  for (size_t i = 0; i < given; ++i) {
    const InputSpec& a = o.inputs[i];
    const InputSpec& b = traced[i];
    if (a.dtype != b.dtype || a.shape.size() != b.shape.size())
      throw mismatch(fmt::format("--input {} ({}) does not match its argument {} ({}, rank {})", a.text,
                                 a.dtype != b.dtype ? "dtype" : "rank", names[i], dtype_name(b.dtype), b.shape.size()));
  }
}

bool is_dtype_disagreement(const std::string& message) {
  std::string m = message;
  std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return std::tolower(c); });
  // LibTorch 2.13's CPU phrasings of two floating dtypes meeting in one op: "expected m1 and m2 to
  // have the same dtype", "mixed dtype (CPU): expect parameter to have scalar type of Float",
  // "expected scalar type BFloat16 but found Float", "Input type (float) and bias type
  // (c10::BFloat16) should be the same", "expected query, key, and value to have the same dtype".
  for (const char* p :
       {"same dtype", "mixed dtype", "expected scalar type", "should be the same", "to have the same type"})
    if (m.find(p) != std::string::npos) return true;
  return false;
}

std::string what_of(const std::exception& e) {
  if (const auto* c = dynamic_cast<const c10::Error*>(&e)) return tidy_exception_message(c->what_without_backtrace());
  return tidy_exception_message(e.what());
}

}  // namespace

void validate_torchscript(const TorchScriptOptions& options) {
  if (options.inputs.empty()) {
    if (const std::string why = not_a_file_reason(options.path); !why.empty())
      throw BadModelInput(fmt::format("--model {}: {}", options.path, why));
    throw BadModelInput(fmt::format(
        "--model {}: give the model's inputs with --input, e.g. --input float32[1,3,224,224]", options.path));
  }
  torch::jit::ExtraFilesMap extra{{kInputsRecord, ""}};
  const torch::jit::Module module = load_or_refuse("--model", options.path, &extra);
  check_inputs(module, options, extra[kInputsRecord]);
  for (const auto& [dtype, path] : options.traced_in) {
    torch::jit::Module other = load_or_refuse("--model-for", path);
    take_state(other, module, path, options.path);
    check_inputs(other, options, "");
  }
}

namespace {
// The probe's warnings are the case's to report, not the host's to print.
struct SilentWarnings final : c10::WarningHandler {
  void process(const c10::Warning&) override {}
};
}  // namespace

void check_torchscript_computes_in(const TorchScriptOptions& options, c10::ScalarType dtype) {
  if (options.traced_in.count(dtype)) return;
  SilentWarnings silent;
  c10::WarningUtils::WarningHandlerGuard guard(&silent);
  try {
    TorchScriptInstance(options, false, Setup{}, Placement{}).run();
  } catch (const std::exception&) {
    return;  // the model's own error: its case reports it
  }
  try {
    TorchScriptInstance(options, false, Setup{}, Placement{c10::Device(c10::kCPU), dtype, Side::Target}).run();
  } catch (const std::exception& e) {
    const std::string why = what_of(e);
    if (!is_dtype_disagreement(why)) return;
    const std::string name = dtype_name(dtype);
    throw GraphTracedInFloat32(fmt::format(
        "--model {} cannot compute in {}: its graph keeps the float32 it was traced in ({}); trace the model again "
        "after model.to(torch.{}) and pass that file as --model-for {}=FILE (scripts/export-hf.py writes both)",
        options.path, name, why, name, name));
  }
}

}  // namespace mpscheck

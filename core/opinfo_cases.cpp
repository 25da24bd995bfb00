#include "core/opinfo_cases.hpp"

#include "core/op_call_workload.hpp"
#include "core/plugin_host.hpp"

#include <mpscheck/dtype_names.hpp>

#include <ATen/core/dispatch/Dispatcher.h>
#include <fmt/format.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>

namespace mpscheck {

namespace {

namespace fs = std::filesystem;

// The export's layout (scripts/export-opinfo.py writes it); a reader of another number refuses.
constexpr std::int64_t kFormat = 1;

[[noreturn]] void bad(const fs::path& file, const std::string& what) {
  throw PluginLoadError(
      fmt::format("OpInfo calls file {}: {}; regenerate it with `python3 scripts/export-opinfo.py {}` (cmake --build "
                  "does), or delete it to run without the OpInfo cases",
                  file.string(), what, file.string()));
}

const c10::IValue& field(const c10::Dict<c10::IValue, c10::IValue>& d, const char* name, const fs::path& file,
                         const std::string& where) {
  const auto it = d.find(c10::IValue(std::string(name)));
  if (it == d.end()) bad(file, fmt::format("{} has no '{}'", where, name));
  return it->value();
}

// The values the exporter spells as tagged strings ("dtype:Half"): what the dispatcher takes for
// them (a ScalarType, MemoryFormat or Layout as its integer, a Device as itself).
std::optional<c10::IValue> untag(const std::string& s) {
  const auto colon = s.find(':');
  if (colon == std::string::npos) return std::nullopt;
  const std::string kind = s.substr(0, colon), name = s.substr(colon + 1);
  if (kind == "dtype") {
    for (c10::ScalarType t : {c10::kFloat, c10::kDouble, c10::kHalf, c10::kBFloat16, c10::kLong, c10::kInt, c10::kShort,
                              c10::kChar, c10::kByte, c10::kBool})
      if (name == c10::toString(t)) return c10::IValue(static_cast<std::int64_t>(t));
  } else if (kind == "memory_format") {
    const std::map<std::string, c10::MemoryFormat> formats = {{"Contiguous", c10::MemoryFormat::Contiguous},
                                                              {"ChannelsLast", c10::MemoryFormat::ChannelsLast},
                                                              {"ChannelsLast3d", c10::MemoryFormat::ChannelsLast3d},
                                                              {"Preserve", c10::MemoryFormat::Preserve}};
    if (const auto it = formats.find(name); it != formats.end())
      return c10::IValue(static_cast<std::int64_t>(it->second));
  } else if (kind == "layout" && name == "Strided") {
    return c10::IValue(static_cast<std::int64_t>(c10::kStrided));
  } else if (kind == "device" && name == "cpu") {
    return c10::IValue(c10::Device(c10::kCPU));
  }
  return std::nullopt;
}

struct Unconvertible : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// An unpickled value as the argument of type `type` takes it: the unpickler gives plain ints,
// floats and generic lists, the boxed kernels want typed lists and floats where the schema says so.
c10::IValue convert(const c10::IValue& v, const c10::TypePtr& type, size_t n) {
  if (v.isString())
    if (auto u = untag(v.toStringRef())) return *u;
  if (v.isNone()) return v;
  if (auto opt = type->cast<c10::OptionalType>()) return convert(v, opt->getElementType(), n);
  if (auto list = type->cast<c10::ListType>()) {
    const c10::TypePtr& elem = list->getElementType();
    std::vector<c10::IValue> items;
    if (v.isList()) {
      for (const c10::IValue& e : v.toListRef()) items.push_back(e);
    } else if (v.isTuple()) {
      for (const c10::IValue& e : v.toTupleRef().elements()) items.push_back(e);
    } else if (v.isInt() || v.isDouble()) {
      items.assign(n > 0 ? n : 1, v);  // `int[2] stride=1`
    } else {
      throw Unconvertible("a list argument given as " + v.tagKind());
    }
    const c10::TypeKind k = elem->kind();
    if (k == c10::TypeKind::IntType || k == c10::TypeKind::SymIntType) {
      c10::List<std::int64_t> out;
      for (const auto& e : items) out.push_back(e.toInt());
      return out;
    }
    if (k == c10::TypeKind::FloatType) {
      c10::List<double> out;
      for (const auto& e : items) out.push_back(e.isInt() ? static_cast<double>(e.toInt()) : e.toDouble());
      return out;
    }
    if (k == c10::TypeKind::BoolType) {
      c10::List<bool> out;
      for (const auto& e : items) out.push_back(e.toBool());
      return out;
    }
    if (k == c10::TypeKind::TensorType) {
      c10::List<at::Tensor> out;
      for (const auto& e : items) out.push_back(e.toTensor());
      return out;
    }
    if (auto eopt = elem->cast<c10::OptionalType>();
        eopt && eopt->getElementType()->kind() == c10::TypeKind::TensorType) {
      c10::List<std::optional<at::Tensor>> out;
      for (const auto& e : items) out.push_back(e.isNone() ? std::nullopt : std::optional<at::Tensor>(e.toTensor()));
      return out;
    }
    throw Unconvertible("a list of " + elem->str());
  }
  const c10::TypeKind k = type->kind();
  // A Python number where the schema takes a tensor (`x * 0.5` reaches the dispatcher as mul.Tensor
  // with a number): what the dispatcher itself passes, a 0-dim "wrapped number" tensor, which type
  // promotion treats as a scalar and any device takes from the CPU.
  if (k == c10::TypeKind::TensorType && (v.isDouble() || v.isInt() || v.isBool())) {
    at::Tensor t = v.isDouble() ? at::scalar_tensor(v.toDouble(), at::kDouble)
                   : v.isInt()  ? at::scalar_tensor(v.toInt(), at::kLong)
                                : at::scalar_tensor(v.toBool(), at::kBool);
    t.unsafeGetTensorImpl()->set_wrapped_number(true);
    return t;
  }
  if (k == c10::TypeKind::FloatType && v.isInt()) return static_cast<double>(v.toInt());
  if (k == c10::TypeKind::SymFloatType && v.isInt()) return static_cast<double>(v.toInt());
  return v;
}

// The call's arguments in the schema's order: positional ones as passed, keyword-only ones by name,
// the rest their defaults.
std::vector<c10::IValue> arguments_for(const c10::FunctionSchema& schema, const c10::IValue& args,
                                       const c10::IValue& kwargs) {
  const auto positional = args.toListRef();
  const auto named = kwargs.toGenericDict();
  std::vector<c10::IValue> out;
  const auto& params = schema.arguments();
  size_t next = 0;
  for (const c10::Argument& p : params) {
    const auto it = named.find(c10::IValue(p.name()));
    if (!p.kwarg_only() && next < positional.size()) {
      out.push_back(convert(positional[next++], p.real_type(), p.N().value_or(0)));
    } else if (it != named.end()) {
      out.push_back(convert(it->value(), p.real_type(), p.N().value_or(0)));
    } else if (p.default_value()) {
      out.push_back(*p.default_value());
    } else if (p.type()->cast<c10::OptionalType>()) {
      out.emplace_back();
    } else {
      throw Unconvertible("no value for argument '" + p.name() + "'");
    }
  }
  if (next < positional.size()) throw Unconvertible("more arguments than the schema takes");
  return out;
}

class OpInfoWorkload final : public Workload {
 public:
  OpInfoWorkload(const std::string& id, const OpInfoCall& c, c10::ScalarType dtype)
      : inner_(id, c.call), dtype_(dtype), call_(c) {}
  std::string id() const override { return inner_.id(); }
  Kind kind() const override { return Kind::Op; }
  std::vector<std::string> tags() const override {
    std::vector<std::string> t = {"opinfo", call_.backward ? "backward" : "forward"};
    if (!contiguous_arguments(call_.call)) t.push_back("noncontiguous");
    if (!call_.quick) t.push_back("full-only");
    return t;
  }
  std::string family() const override { return inner_.family(); }
  c10::ScalarType dtype() const override { return dtype_; }
  std::unique_ptr<Instance> instantiate(const Setup& setup, const Placement& where) const override {
    return inner_.instantiate(setup, where);
  }
  std::string reproducer(const ReproTarget& target) const override { return inner_.reproducer(target); }

 private:
  OpCallWorkload inner_;
  c10::ScalarType dtype_;
  const OpInfoCall& call_;
};

}  // namespace

OpInfoCalls read_opinfo_calls(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) bad(file, "cannot be read");
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  c10::IValue root;
  try {
    root = torch::jit::pickle_load(bytes);
  } catch (const std::exception& e) {
    // The unpickler's first sentence ("PytorchStreamReader failed reading zip archive: not a ZIP
    // archive"); its advice about checkpoints after it is not this file's.
    const std::string why = e.what();
    bad(file,
        fmt::format("is not a file torch.save wrote ({})", why.substr(0, std::min(why.find(". "), why.find('\n')))));
  }
  if (!root.isGenericDict()) bad(file, "does not hold the export's dictionary");
  const auto top = root.toGenericDict();
  const c10::IValue& format = field(top, "format", file, "the file");
  if (!format.isInt() || format.toInt() != kFormat)
    bad(file,
        fmt::format("is of format {}, this mpscheck reads format {}", format.isInt() ? format.toInt() : -1, kFormat));
  OpInfoCalls out;
  out.file = file.string();
  out.torch_version = field(top, "torch", file, "the file").toStringRef();
  out.entries = static_cast<int>(field(top, "entries", file, "the file").toListRef().size());
  std::map<std::string, int> skipped;
  const auto calls = field(top, "calls", file, "the file").toListRef();
  out.calls.reserve(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string where = fmt::format("call {}", i + 1);
    if (!calls[i].isGenericDict()) bad(file, where + " is not a dictionary");
    const auto d = calls[i].toGenericDict();
    const std::string op = field(d, "op", file, where).toStringRef();
    const std::string overload = field(d, "overload", file, where).toStringRef();
    const auto handle = c10::Dispatcher::singleton().findSchema({op, overload});
    if (!handle) {
      ++skipped["not an op of this LibTorch"];
      continue;
    }
    OpInfoCall c;
    c.opinfo = field(d, "opinfo", file, where).toStringRef();
    c.sample = static_cast<int>(field(d, "sample", file, where).toInt());
    c.backward = field(d, "direction", file, where).toStringRef() == "backward";
    c.index = static_cast<int>(field(d, "index", file, where).toInt());
    c.quick = field(d, "quick", file, where).toBool();
    for (const c10::IValue& a : field(d, "also", file, where).toListRef()) c.also.push_back(a.toStringRef());
    const c10::FunctionSchema& schema = handle->schema();
    try {
      c.call.args = arguments_for(schema, field(d, "args", file, where), field(d, "kwargs", file, where));
    } catch (const Unconvertible&) {
      ++skipped["arguments this reader cannot give the op"];
      continue;
    }
    if (std::string why =
            not_replayable_because(schema, c10::ArrayRef<const c10::IValue>(c.call.args.data(), c.call.args.size()));
        !why.empty()) {
      ++skipped[why];
      continue;
    }
    c.call.op = op;
    c.call.overload = overload;
    c.call.schema = std::make_shared<c10::FunctionSchema>(schema);
    c.call.key = distinct_call_key(schema, c10::ArrayRef<const c10::IValue>(c.call.args.data(), c.call.args.size()));
    c.call.module = fmt::format("OpInfo {}, sample {}{}", c.opinfo, c.sample, c.backward ? ", backward" : "");
    c.call.first_call = c.index + 1;
    c.call.calls = 1 + static_cast<int>(c.also.size());
    c.call.backward = c.backward;
    out.calls.push_back(std::move(c));
  }
  out.not_replayed.assign(skipped.begin(), skipped.end());
  return out;
}

std::string opinfo_call_name(const OpInfoCall& c, bool repeated) {
  std::string name = c.call.op.rfind("aten::", 0) == 0 ? c.call.op.substr(6) : c.call.op;
  if (!c.call.overload.empty()) name += "." + c.call.overload;
  if (repeated) name += "-" + std::to_string(c.index);
  return name;
}

std::vector<std::unique_ptr<Workload>> make_opinfo_workloads(const OpInfoCalls& calls) {
  // How many calls of each op one sample makes in one direction: a repeated one carries its order.
  std::map<std::string, int> seen;
  const auto group = [](const OpInfoCall& c) {
    return fmt::format("{}/s{}/{}/{}", c.opinfo, c.sample, c.backward ? "backward" : "forward",
                       opinfo_call_name(c, false));
  };
  for (const OpInfoCall& c : calls.calls) ++seen[group(c)];
  std::vector<std::unique_ptr<Workload>> out;
  for (const OpInfoCall& c : calls.calls) {
    const std::string name = opinfo_call_name(c, seen[group(c)] > 1);
    for (c10::ScalarType dtype : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
      // The catalog's op id shape (core/run_plan.hpp): the sample and the call are the variant.
      const std::string id = fmt::format("op/opinfo/{}/{}/s{}-{}/{}", c.opinfo, dtype_id(dtype), c.sample, name,
                                         c.backward ? "backward" : "forward");
      out.push_back(std::make_unique<OpInfoWorkload>(id, c, dtype));
    }
  }
  return out;
}

}  // namespace mpscheck

#include "core/op_record.hpp"

#include <mpscheck/dtype_names.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/jit/runtime/interpreter.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <stdexcept>

namespace mpscheck {

namespace {

// The user scopes include/mpscheck/model.hpp sends (model::layer and model::tap).
constexpr std::string_view kLayerScope = "mpscheck.layer:";
constexpr std::string_view kTapScope = "mpscheck.tap:";

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

std::string tensor_key(const at::Tensor& t) {
  if (!t.defined()) return "undefined";
  return fmt::format("{}{}/{}+{}", dtype_id(t.scalar_type()), fmt::to_string(fmt::join(t.sizes(), "x")),
                     fmt::to_string(fmt::join(t.strides(), ",")), t.storage_offset());
}

std::string value_key(const c10::IValue& v) {
  if (v.isTensor()) return tensor_key(v.toTensor());
  if (v.isTensorList()) {
    std::string s = "[";
    for (const at::Tensor& t : v.toTensorVector()) s += tensor_key(t) + ";";
    return s + "]";
  }
  if (v.isList()) {
    std::string s = "[";
    for (const c10::IValue& e : v.toListRef()) s += value_key(e) + ";";
    return s + "]";
  }
  if (v.isDouble()) return fmt::format("{:.17g}", v.toDouble());
  std::ostringstream out;
  out << v;
  return out.str();
}

// Every tensor an argument holds (a tensor, a list of tensors, a list of optional tensors).
void tensors_in(const c10::IValue& v, std::vector<at::Tensor>& out) {
  if (v.isTensor()) {
    if (v.toTensor().defined()) out.push_back(v.toTensor());
  } else if (v.isList()) {
    for (const c10::IValue& e : v.toListRef()) tensors_in(e, out);
  }
}

bool has_type(const c10::Argument& a, c10::TypeKind kind) {
  const c10::TypePtr& t = a.type();
  if (t->kind() == kind) return true;
  if (auto opt = t->cast<c10::OptionalType>()) return opt->getElementType()->kind() == kind;
  return false;
}

bool returns_tensors(const c10::Argument& r) {
  const c10::TypePtr& t = r.type();
  if (t->kind() == c10::TypeKind::TensorType) return true;
  if (auto list = t->cast<c10::ListType>()) return list->getElementType()->kind() == c10::TypeKind::TensorType;
  return false;
}

// Ops that convert, copy, create or fill rather than compute: what the replay itself does to its
// inputs (casting them to the target's dtype, moving them to its device) would change what they do.
const std::set<std::string>& conversion_ops() {
  static const std::set<std::string> ops = {
      "aten::to",        "aten::_to_copy",   "aten::copy_",          "aten::_copy_from",
      "aten::detach",    "aten::detach_",    "aten::lift_fresh",     "aten::lift_fresh_copy",
      "aten::resize_",   "aten::set_",       "aten::requires_grad_", "aten::_local_scalar_dense",
      "aten::item",      "aten::empty_like", "aten::zeros_like",     "aten::ones_like",
      "aten::full_like", "aten::zero_",      "aten::fill_",          "aten::new_zeros",
      "aten::new_ones",  "aten::new_full",   "aten::new_empty",      "aten::new_empty_strided",
      "aten::type_as"};
  return ops;
}

// Ops whose values are draws (the catalog compares those by statistics, over many draws; one call
// of a model gives one): listed by name where the schema has no generator argument.
const std::set<std::string>& random_ops() {
  static const std::set<std::string> ops = {"aten::dropout",
                                            "aten::dropout_",
                                            "aten::feature_dropout",
                                            "aten::alpha_dropout",
                                            "aten::feature_alpha_dropout",
                                            "aten::native_dropout",
                                            "aten::rrelu",
                                            "aten::rrelu_with_noise",
                                            "aten::bernoulli",
                                            "aten::bernoulli_",
                                            "aten::rand_like",
                                            "aten::randn_like",
                                            "aten::randint_like",
                                            "aten::multinomial"};
  return ops;
}

}  // namespace

std::string distinct_call_key(const c10::FunctionSchema& schema, c10::ArrayRef<const c10::IValue> args) {
  std::string key = schema.name() + "." + schema.overload_name() + "(";
  for (const c10::IValue& a : args) key += value_key(a) + ",";
  return key + ")";
}

std::string not_replayable_because(const c10::FunctionSchema& schema, c10::ArrayRef<const c10::IValue> args) {
  const std::string& name = schema.name();
  if (!starts_with(name, "aten::")) return "not an ATen op";
  if (schema.returns().empty() || !std::all_of(schema.returns().begin(), schema.returns().end(), returns_tensors))
    return "returns no tensor";
  for (const c10::Argument& r : schema.returns())
    if (r.alias_info() && !r.alias_info()->isWrite()) return "a view of its input";
  if (random_ops().count(name)) return "random";
  for (size_t i = 0; i < schema.arguments().size() && i < args.size(); ++i) {
    const c10::Argument& a = schema.arguments()[i];
    if (has_type(a, c10::TypeKind::GeneratorType)) return "random";
    if (has_type(a, c10::TypeKind::DeviceObjType) && !args[i].isNone()) return "names a device";
  }
  if (conversion_ops().count(name)) return "a conversion, copy or fill";
  std::vector<at::Tensor> tensors;
  for (const c10::IValue& a : args) tensors_in(a, tensors);
  if (tensors.empty()) return "creates a tensor";
  if (std::none_of(tensors.begin(), tensors.end(), [](const at::Tensor& t) { return t.is_floating_point(); }))
    return "no floating-point input";
  return {};
}

at::Tensor copy_layout(const at::Tensor& t, const at::TensorOptions& options) {
  if (!t.defined()) return t;
  if (t.numel() == 0) return at::empty_strided(t.sizes(), t.strides(), options);
  int64_t span = 1;
  for (int64_t d = 0; d < t.dim(); ++d) span += (t.size(d) - 1) * t.stride(d);
  // The whole stretch of storage the view reads, so an expanded (stride 0) or overlapping view keeps
  // its layout: copying into such a view element by element would be refused.
  const at::Tensor from = t.as_strided({span}, {1}, t.storage_offset());
  at::Tensor base = at::empty({t.storage_offset() + span}, options);
  base.narrow(0, t.storage_offset(), span).copy_(from);
  return base.as_strided(t.sizes(), t.strides(), t.storage_offset());
}

namespace {

struct RecordState {
  OpRecording recording;
  std::map<std::string, size_t> index;  // key -> position in recording.calls
  std::set<std::string> beyond;         // keys of the distinct calls the bound left out
  int depth = 0;                        // recorded ops open on this thread
  std::vector<std::string> layers;      // model::layer scopes open
  std::vector<std::string> backward_nodes;
  // The depth each open backward node interrupted: its calls are top-level calls of their own
  // (aten::_backward, an op, is still open while autograd's engine runs them on this thread).
  std::vector<int> depth_before_node;
  std::vector<size_t> untapped;  // calls whose module the next model::tap names
  std::string last_tap;
  std::int64_t bytes = 0;
};

thread_local RecordState* t_state = nullptr;

void name_untapped(RecordState& s, const std::string& module) {
  for (size_t i : s.untapped) s.recording.calls[i].module = module;
  s.untapped.clear();
}

std::string after_last_tap(const RecordState& s) {
  return s.last_tap.empty() ? "before the first layer" : "after " + s.last_tap;
}

std::string module_of(const RecordState& s) {
  if (!s.backward_nodes.empty()) return "backward of " + s.backward_nodes.back();
  if (!s.layers.empty()) return s.layers.back();
  std::string path;
  for (const std::string& m : torch::jit::currentModuleHierarchy()) path += (path.empty() ? "" : ".") + m;
  return path;
}

std::int64_t bytes_of(const c10::IValue& v) {
  std::vector<at::Tensor> tensors;
  tensors_in(v, tensors);
  std::int64_t n = 0;
  for (const at::Tensor& t : tensors) n += static_cast<std::int64_t>(t.storage().nbytes());
  return n;
}

c10::IValue snapshot(const c10::IValue& v) {
  if (v.isTensor()) return copy_layout(v.toTensor(), v.toTensor().options());
  if (v.isTensorList()) {
    c10::List<at::Tensor> out;
    for (const at::Tensor& t : v.toTensorVector()) out.push_back(copy_layout(t, t.options()));
    return out;
  }
  if (v.isList() && v.toListRef().size() > 0 && v.toListRef()[0].isTensor()) {
    c10::List<std::optional<at::Tensor>> out;
    for (const c10::IValue& e : v.toListRef())
      out.push_back(e.isTensor() ? std::optional<at::Tensor>(copy_layout(e.toTensor(), e.toTensor().options()))
                                 : std::nullopt);
    return out;
  }
  return v;
}

void record_call(RecordState& s, const at::RecordFunction& fn) {
  const std::optional<c10::FunctionSchema> schema = fn.operator_schema();
  if (!schema) return;
  ++s.recording.top_level_calls;
  const c10::ArrayRef<const c10::IValue> inputs = fn.inputs();
  const size_t n = schema->arguments().size();
  if (inputs.size() < n) {
    ++s.recording.not_replayable["its inputs were not seen"][schema->name()];
    return;
  }
  // A boxed call hands the callback its whole stack: the op's arguments are its last n values.
  const c10::ArrayRef<const c10::IValue> args = inputs.slice(inputs.size() - n);
  if (std::string why = not_replayable_because(*schema, args); !why.empty()) {
    ++s.recording.not_replayable[why][schema->name()];
    return;
  }
  const std::string key = distinct_call_key(*schema, args);
  if (auto it = s.index.find(key); it != s.index.end()) {
    ++s.recording.calls[it->second].calls;
    return;
  }
  std::int64_t bytes = 0;
  for (const c10::IValue& a : args) bytes += bytes_of(a);
  if (static_cast<int>(s.recording.calls.size()) >= kMaxRecordedCalls || s.bytes + bytes > kMaxRecordedBytes) {
    if (s.beyond.insert(key).second) ++s.recording.beyond_bound;
    return;
  }
  RecordedCall call;
  call.op = schema->name();
  call.overload = schema->overload_name();
  call.schema = std::make_shared<c10::FunctionSchema>(*schema);
  call.key = key;
  call.module = module_of(s);
  call.first_call = s.recording.top_level_calls;
  call.calls = 1;
  call.backward = !s.backward_nodes.empty();
  {
    // The copies are ops too: neither recorded nor seen by autograd.
    at::RecordFunctionGuard off(false);
    c10::AutoGradMode no_grad(false);
    for (const c10::IValue& a : args) call.args.push_back(snapshot(a));
  }
  s.bytes += bytes;
  if (call.module.empty()) s.untapped.push_back(s.recording.calls.size());
  s.index[key] = s.recording.calls.size();
  s.recording.calls.push_back(std::move(call));
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  RecordState* s = t_state;
  if (!s) return nullptr;
  if (fn.scope() == at::RecordScope::USER_SCOPE) {
    const std::string_view name = fn.name();
    if (starts_with(name, kLayerScope)) {
      if (s->layers.empty()) name_untapped(*s, after_last_tap(*s));
      s->layers.emplace_back(name.substr(kLayerScope.size()));
    } else if (starts_with(name, kTapScope)) {
      s->last_tap = std::string(name.substr(kTapScope.size()));
      if (s->layers.empty()) name_untapped(*s, s->last_tap);
    }
  } else if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    s->backward_nodes.emplace_back(fn.name());
    s->depth_before_node.push_back(s->depth);
    s->depth = 0;
  } else if (fn.scope() == at::RecordScope::FUNCTION && s->depth++ == 0) {
    record_call(*s, fn);
  }
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  RecordState* s = t_state;
  if (!s) return;
  if (fn.scope() == at::RecordScope::USER_SCOPE) {
    if (starts_with(fn.name(), kLayerScope) && !s->layers.empty()) s->layers.pop_back();
  } else if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    if (!s->backward_nodes.empty()) s->backward_nodes.pop_back();
    if (!s->depth_before_node.empty()) s->depth = s->depth_before_node.back(), s->depth_before_node.pop_back();
  } else if (fn.scope() == at::RecordScope::FUNCTION && s->depth > 0) {
    --s->depth;
  }
}

}  // namespace

OpRecorder::OpRecorder() {
  if (t_state) throw std::logic_error("an op recorder is already recording on this thread");
  t_state = new RecordState();
  handle_ = at::addThreadLocalCallback(
      at::RecordFunctionCallback(on_start, on_end)
          .needsInputs(true)
          .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION, at::RecordScope::USER_SCOPE}));
}

OpRecorder::~OpRecorder() {
  if (handle_) at::removeCallback(handle_);
  delete t_state;
  t_state = nullptr;
}

OpRecording OpRecorder::finish() {
  if (handle_) at::removeCallback(handle_), handle_ = 0;
  if (!t_state) return {};
  name_untapped(*t_state, after_last_tap(*t_state));
  OpRecording out = std::move(t_state->recording);
  delete t_state;
  t_state = nullptr;
  return out;
}

}  // namespace mpscheck

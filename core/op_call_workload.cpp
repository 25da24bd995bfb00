#include "core/op_call_workload.hpp"

#include "core/layer_repro.hpp"

#include <mpscheck/dtype_names.hpp>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

namespace mpscheck {

namespace {

bool is_written(const c10::Argument& a) { return a.alias_info() && a.alias_info()->isWrite(); }

// An argument of type ScalarType or ScalarType? (a dtype the op computes or returns in).
bool is_dtype_argument(const c10::Argument& a) {
  c10::TypePtr t = a.real_type();
  if (auto opt = t->cast<c10::OptionalType>()) t = opt->getElementType();
  return t->kind() == c10::TypeKind::ScalarTypeType;
}

// The tensor `t` as `where` computes it: a float32 one in where.dtype (float64 for the gold run,
// rounded first to where.round_inputs_to for the baseline), any other floating one in its own dtype
// but on float64's run, integer and bool ones as they are; each on where.device, with its layout.
at::Tensor place(const at::Tensor& t, const Placement& where) {
  // A wrapped number (a Python scalar the dispatcher boxed) stays what it is: the op reads it as a
  // scalar of the computation's dtype, from the CPU, on every side.
  if (!t.defined() || t.unsafeGetTensorImpl()->is_wrapped_number()) return t;
  c10::ScalarType dtype = t.scalar_type();
  at::Tensor from = t;
  if (t.is_floating_point()) {
    if (where.dtype == c10::kDouble)
      dtype = c10::kDouble;
    else if (t.scalar_type() == c10::kFloat)
      dtype = where.dtype;
    if (where.round_inputs_to != c10::ScalarType::Undefined && t.scalar_type() == c10::kFloat)
      from = copy_layout(t, t.options().dtype(where.round_inputs_to));
  }
  return copy_layout(from, at::TensorOptions().dtype(dtype).device(where.device));
}

c10::IValue place_value(const c10::IValue& v, const Placement& where) {
  if (v.isTensor()) return place(v.toTensor(), where);
  if (v.isTensorList()) {
    c10::List<at::Tensor> out;
    for (const at::Tensor& t : v.toTensorVector()) out.push_back(place(t, where));
    return out;
  }
  if (v.isList() && v.toListRef().size() > 0 && (v.toListRef()[0].isTensor() || v.toListRef()[0].isNone())) {
    bool tensors = false;
    for (const c10::IValue& e : v.toListRef()) tensors = tensors || e.isTensor();
    if (tensors) {
      c10::List<std::optional<at::Tensor>> out;
      for (const c10::IValue& e : v.toListRef())
        out.push_back(e.isTensor() ? std::optional<at::Tensor>(place(e.toTensor(), where)) : std::nullopt);
      return out;
    }
  }
  return v;
}

// A floating scalar argument as a side computing in `dtype` can take it. A model written for any
// dtype fills a mask with its dtype's extreme (torch.finfo(dtype).min); recorded in float32, that is
// -3.4e38, which LibTorch refuses to convert to float16 or bfloat16 ("cannot be converted ...
// without overflow"). A finite value past the dtype's largest finite one becomes that extreme, of
// its sign: the judge reads such a position as beyond the dtype, where the extreme is what the
// target may hold (checks/compare.hpp).
c10::IValue scalar_for(const c10::IValue& v, c10::ScalarType dtype) {
  if (!v.isDouble() || (dtype != c10::kHalf && dtype != c10::kBFloat16)) return v;
  const double x = v.toDouble();
  const double largest = dtype == c10::kHalf ? 65504.0 : static_cast<double>(std::numeric_limits<c10::BFloat16>::max());
  if (!std::isfinite(x) || std::abs(x) <= largest) return v;
  return std::copysign(largest, x);
}

// A fresh copy of an argument the op writes, for each call: every call starts from the recorded values.
c10::IValue fresh(const c10::IValue& v) {
  if (v.isTensor()) return copy_layout(v.toTensor(), v.toTensor().options());
  return v;
}

// How many of an op's returns are results: the rest are workspaces its backward reads, which the
// kernel fills only where it needs to (aten::_ctc_loss's log_alpha holds whatever its memory held
// beyond each sequence's length, so two runs differ there by anything).
size_t judged_returns(const std::string& op) {
  static const std::map<std::string, size_t> results = {{"aten::_ctc_loss", 1}};
  const auto it = results.find(op);
  return it == results.end() ? std::numeric_limits<size_t>::max() : it->second;
}

class OpCallInstance final : public Instance {
 public:
  OpCallInstance(const RecordedCall& call, const Placement& where)
      : call_(call), op_(c10::Dispatcher::singleton().findSchemaOrThrow(call.op.c_str(), call.overload.c_str())) {
    const auto& params = call.schema->arguments();
    for (size_t i = 0; i < call.args.size(); ++i) {
      c10::IValue a = scalar_for(place_value(call.args[i], where), where.dtype);
      // `dtype=torch.float32` (a norm or a sum asked to accumulate in float32) is float64 on the gold
      // run, which otherwise cannot run the op: "the dtype of the input (Double) should be convertible
      // without narrowing to the specified dtype (Float)". A reduced-precision side keeps float32.
      if (where.dtype == c10::kDouble && i < params.size() && is_dtype_argument(params[i]) && a.isInt() &&
          a.toInt() == static_cast<std::int64_t>(c10::kFloat))
        a = c10::IValue(static_cast<std::int64_t>(c10::kDouble));
      args_.push_back(std::move(a));
    }
  }
  Outputs run() override {
    const auto& params = call_.schema->arguments();
    torch::jit::Stack stack;
    for (size_t i = 0; i < args_.size(); ++i)
      stack.push_back(i < params.size() && is_written(params[i]) ? fresh(args_[i]) : args_[i]);
    const torch::jit::Stack written = stack;
    op_.callBoxed(&stack);
    Outputs out;
    for (size_t i = 0; i < stack.size() && i < judged_returns(call_.op); ++i) {
      const std::string name = i == 0 ? "out" : "out" + std::to_string(i);
      if (stack[i].isTensor()) {
        out.push_back({name, stack[i].toTensor()});
      } else if (stack[i].isTensorList()) {
        const auto list = stack[i].toTensorVector();
        for (size_t k = 0; k < list.size(); ++k) out.push_back({name + "." + std::to_string(k), list[k]});
      }
    }
    // An argument written in place that no output returns (batch norm's running statistics).
    for (size_t i = 0; i < params.size() && i < written.size(); ++i)
      if (is_written(params[i]) && written[i].isTensor() && !returned(params[i]))
        out.push_back({"arg/" + params[i].name(), written[i].toTensor()});
    // Indices beside values (max pooling's, max's): judged by the values they select, which the
    // floating outputs are; compared exactly they would differ wherever a tie rounds differently.
    const bool floating = std::any_of(out.begin(), out.end(),
                                      [](const Output& o) { return o.value.defined() && o.value.is_floating_point(); });
    if (floating)
      out.erase(std::remove_if(out.begin(), out.end(),
                               [](const Output& o) { return !o.value.defined() || !o.value.is_floating_point(); }),
                out.end());
    return out;
  }

 private:
  bool returned(const c10::Argument& param) const {
    for (const c10::Argument& r : call_.schema->returns())
      if (r.alias_info() && param.alias_info() && r.alias_info()->beforeSets() == param.alias_info()->beforeSets())
        return true;
    return false;
  }

  const RecordedCall& call_;
  c10::OperatorHandle op_;
  std::vector<c10::IValue> args_;
};

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

std::string op_family(const std::string& full) {
  std::string op = starts_with(full, "aten::") ? full.substr(6) : full;
  if (op.size() > 1 && op.back() == '_' && op[op.size() - 2] != '_') op.pop_back();  // in place: relu_
  static const std::map<std::string, std::string> exact = {{"mm", "matmul"},
                                                           {"addmm", "matmul"},
                                                           {"bmm", "matmul"},
                                                           {"baddbmm", "matmul"},
                                                           {"matmul", "matmul"},
                                                           {"linear", "matmul"},
                                                           {"addmv", "matmul"},
                                                           {"mv", "matmul"},
                                                           {"dot", "matmul"},
                                                           {"einsum", "matmul"},
                                                           {"_addmm_activation", "matmul"},
                                                           {"sum", "reduction"},
                                                           {"mean", "reduction"},
                                                           {"var", "reduction"},
                                                           {"std", "reduction"},
                                                           {"var_mean", "reduction"},
                                                           {"norm", "reduction"},
                                                           {"linalg_vector_norm", "reduction"},
                                                           {"prod", "reduction"},
                                                           {"cumsum", "reduction"},
                                                           {"logsumexp", "reduction"},
                                                           {"softmax", "softmax"},
                                                           {"_softmax", "softmax"},
                                                           {"log_softmax", "softmax"},
                                                           {"_log_softmax", "softmax"},
                                                           {"cross_entropy_loss", "loss"},
                                                           {"nll_loss", "loss"},
                                                           {"nll_loss_nd", "loss"},
                                                           {"mse_loss", "loss"},
                                                           {"binary_cross_entropy", "loss"},
                                                           {"binary_cross_entropy_with_logits", "loss"},
                                                           {"l1_loss", "loss"},
                                                           {"smooth_l1_loss", "loss"},
                                                           {"scaled_dot_product_attention", "attention"},
                                                           {"embedding", "indexing"},
                                                           {"index_select", "indexing"},
                                                           {"gather", "indexing"},
                                                           {"exp", "activation"},
                                                           {"log", "activation"},
                                                           {"tanh", "activation"},
                                                           {"sigmoid", "activation"},
                                                           {"gelu", "activation"},
                                                           {"silu", "activation"},
                                                           {"erf", "activation"},
                                                           {"softplus", "activation"},
                                                           {"mish", "activation"},
                                                           {"elu", "activation"},
                                                           {"log_sigmoid", "activation"},
                                                           {"pow", "activation"},
                                                           {"sqrt", "activation"},
                                                           {"rsqrt", "activation"}};
  std::string base = op;
  if (const auto at = base.find("_backward"); at != std::string::npos) base = base.substr(0, at);
  if (const auto it = exact.find(base); it != exact.end()) return it->second;
  for (const char* conv : {"conv", "convolution", "_convolution", "mkldnn_convolution"})
    if (starts_with(base, conv)) return "conv";
  for (const char* norm : {"batch_norm", "native_batch_norm", "layer_norm", "native_layer_norm", "group_norm",
                           "native_group_norm", "instance_norm", "_native_batch_norm_legit"})
    if (starts_with(base, norm)) return "norm";
  for (const char* pool : {"max_pool", "avg_pool", "adaptive_avg_pool", "adaptive_max_pool", "_adaptive_avg_pool"})
    if (starts_with(base, pool)) return "pool";
  for (const char* rnn : {"lstm", "gru", "rnn_tanh", "rnn_relu", "_thnn_fused"})
    if (starts_with(base, rnn)) return "recurrent";
  return "elementwise";
}

std::string OpCallWorkload::family() const { return op_family(call_.op); }

std::unique_ptr<Instance> OpCallWorkload::instantiate(const Setup&, const Placement& where) const {
  return std::make_unique<OpCallInstance>(call_, where);
}

namespace {

bool contiguous_at_start(const at::Tensor& t) { return !t.defined() || (t.is_contiguous() && t.storage_offset() == 0); }

void tensors_of(const c10::IValue& v, std::vector<at::Tensor>& out) {
  if (v.isTensor()) {
    out.push_back(v.toTensor());
  } else if (v.isList()) {
    for (const c10::IValue& e : v.toListRef()) tensors_of(e, out);
  }
}

std::string describe(const at::Tensor& t) {
  if (!t.defined()) return "None";
  std::string s = fmt::format("{}[{}]", dtype_name(t.scalar_type()), fmt::join(t.sizes(), ", "));
  if (!t.is_contiguous()) s += fmt::format(" strides ({})", fmt::join(t.strides(), ", "));
  if (t.storage_offset() != 0) s += fmt::format(" offset {}", t.storage_offset());
  return s;
}

}  // namespace

std::string describe_arguments(const RecordedCall& call) {
  std::vector<at::Tensor> tensors;
  for (const c10::IValue& a : call.args) tensors_of(a, tensors);
  std::string s;
  for (const at::Tensor& t : tensors) s += (s.empty() ? "" : ", ") + describe(t);
  return s;
}

bool contiguous_arguments(const RecordedCall& call) {
  std::vector<at::Tensor> tensors;
  for (const c10::IValue& a : call.args) tensors_of(a, tensors);
  return std::all_of(tensors.begin(), tensors.end(), contiguous_at_start);
}

}  // namespace mpscheck

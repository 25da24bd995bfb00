// One C++ frontend module as the Python op it computes, for a model finding's op-level reproducer
// (Instance::layer_call). Part of <mpscheck/model.hpp>. A module kind not listed here gets no
// reproducer, with a sentence naming it: a wrong spelling would reproduce the wrong op.
#pragma once

#include <mpscheck/workload.hpp>

#include <torch/torch.h>

#include <algorithm>
#include <charconv>
#include <string>
#include <variant>
#include <vector>

namespace mpscheck::model::detail {

// Python's spelling of a number that reads back as the same double (1e-05, 0.2, 0.1).
inline std::string py_number(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

inline std::string py_tuple(c10::ArrayRef<int64_t> values) {
  std::string s = "(";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s + (values.size() == 1 ? ",)" : ")");
}

inline const char* py_bool(bool b) { return b ? "True" : "False"; }

// Builds a LayerCall: the input first, then each named parameter or buffer the spelling uses.
class LayerSpelling {
 public:
  LayerSpelling(torch::nn::Module& module, const at::Tensor& x) : module_(module) {
    call_.tensors.push_back({"x", x.detach().clone()});
  }
  // The module's own tensor `name` (a parameter or a buffer) as a Python name, or "None" when the
  // module has none of that name (a conv without bias).
  std::string tensor(const std::string& name) {
    for (const auto& p : module_.named_parameters(/*recurse=*/false))
      if (p.key() == name && p.value().defined()) return keep(name, p.value());
    for (const auto& b : module_.named_buffers(/*recurse=*/false))
      if (b.key() == name && b.value().defined()) return keep(name, b.value());
    return "None";
  }
  LayerCall done(std::string python) {
    call_.python = std::move(python);
    return std::move(call_);
  }
  LayerCall missing(std::string why) {
    call_.tensors.clear();
    call_.missing = std::move(why);
    return std::move(call_);
  }

 private:
  std::string keep(const std::string& name, const at::Tensor& t) {
    call_.tensors.push_back({name, t.detach().clone()});
    return name;
  }
  torch::nn::Module& module_;
  LayerCall call_;
};

template <size_t D, class Impl>
LayerCall spell_conv(LayerSpelling& s, Impl& conv, const std::string& layer) {
  const auto& o = conv.options;
  if (!std::holds_alternative<torch::enumtype::kZeros>(o.padding_mode()))
    return s.missing("layer " + layer + " pads other than with zeros, which the reproducer does not spell");
  const std::string weight = s.tensor("weight"), bias = s.tensor("bias");
  const std::string dims = std::to_string(D) + "d";
  if (o.transposed())
    return s.done("torch.nn.functional.conv_transpose" + dims + "(x, " + weight + ", " + bias + ", stride=" +
                  py_tuple(*o.stride()) + ", padding=" + py_tuple(*std::get<torch::ExpandingArray<D>>(o.padding())) +
                  ", output_padding=" + py_tuple(*o.output_padding()) + ", groups=" + std::to_string(o.groups()) +
                  ", dilation=" + py_tuple(*o.dilation()) + ")");
  std::string padding;
  if (const auto* p = std::get_if<torch::ExpandingArray<D>>(&o.padding()))
    padding = py_tuple(**p);
  else if (std::holds_alternative<torch::enumtype::kSame>(o.padding()))
    padding = "'same'";
  else
    padding = "'valid'";
  return s.done("torch.nn.functional.conv" + dims + "(x, " + weight + ", " + bias +
                ", stride=" + py_tuple(*o.stride()) + ", padding=" + padding + ", dilation=" + py_tuple(*o.dilation()) +
                ", groups=" + std::to_string(o.groups()) + ")");
}

template <class Impl>
LayerCall spell_batch_norm(LayerSpelling& s, Impl& bn) {
  const auto& o = bn.options;
  // Training, or no running statistics to use: the batch's own statistics.
  const bool batch_stats = bn.is_training() || !o.track_running_stats();
  const std::string mean = s.tensor("running_mean"), var = s.tensor("running_var");
  const std::string weight = s.tensor("weight"), bias = s.tensor("bias");
  return s.done("torch.nn.functional.batch_norm(x, " + mean + ", " + var + ", " + weight + ", " + bias +
                ", training=" + py_bool(batch_stats) + ", momentum=" + py_number(o.momentum().value_or(0.0)) +
                ", eps=" + py_number(o.eps()) + ")");
}

template <size_t D, class Impl>
LayerCall spell_max_pool(LayerSpelling& s, Impl& pool) {
  const auto& o = pool.options;
  return s.done("torch.nn.functional.max_pool" + std::to_string(D) + "d(x, " + py_tuple(*o.kernel_size()) +
                ", stride=" + py_tuple(*o.stride()) + ", padding=" + py_tuple(*o.padding()) +
                ", dilation=" + py_tuple(*o.dilation()) + ", ceil_mode=" + py_bool(o.ceil_mode()) + ")");
}

template <size_t D, class Impl>
LayerCall spell_avg_pool(LayerSpelling& s, Impl& pool) {
  const auto& o = pool.options;
  const std::string divisor = o.divisor_override() ? std::to_string(*o.divisor_override()) : "None";
  const std::string extra = D == 1 ? "" : ", divisor_override=" + divisor;  // avg_pool1d has none
  return s.done("torch.nn.functional.avg_pool" + std::to_string(D) + "d(x, " + py_tuple(*o.kernel_size()) +
                ", stride=" + py_tuple(*o.stride()) + ", padding=" + py_tuple(*o.padding()) + ", ceil_mode=" +
                py_bool(o.ceil_mode()) + ", count_include_pad=" + py_bool(o.count_include_pad()) + extra + ")");
}

// The op `module` computes on `x`, named `layer` in the trace.
inline LayerCall spell_layer(torch::nn::Module& module, const at::Tensor& x, const std::string& layer) {
  namespace nn = torch::nn;
  LayerSpelling s(module, x);
  if (auto* m = module.as<nn::Conv1d>()) return spell_conv<1>(s, *m, layer);
  if (auto* m = module.as<nn::Conv2d>()) return spell_conv<2>(s, *m, layer);
  if (auto* m = module.as<nn::Conv3d>()) return spell_conv<3>(s, *m, layer);
  if (auto* m = module.as<nn::ConvTranspose1d>()) return spell_conv<1>(s, *m, layer);
  if (auto* m = module.as<nn::ConvTranspose2d>()) return spell_conv<2>(s, *m, layer);
  if (auto* m = module.as<nn::ConvTranspose3d>()) return spell_conv<3>(s, *m, layer);
  if (module.as<nn::Linear>()) {
    const std::string weight = s.tensor("weight"), bias = s.tensor("bias");
    return s.done("torch.nn.functional.linear(x, " + weight + ", " + bias + ")");
  }
  if (auto* m = module.as<nn::BatchNorm1d>()) return spell_batch_norm(s, *m);
  if (auto* m = module.as<nn::BatchNorm2d>()) return spell_batch_norm(s, *m);
  if (auto* m = module.as<nn::BatchNorm3d>()) return spell_batch_norm(s, *m);
  if (auto* m = module.as<nn::LayerNorm>()) {
    const std::string weight = s.tensor("weight"), bias = s.tensor("bias");
    return s.done("torch.nn.functional.layer_norm(x, " + py_tuple(m->options.normalized_shape()) + ", " + weight +
                  ", " + bias + ", eps=" + py_number(m->options.eps()) + ")");
  }
  if (auto* m = module.as<nn::GroupNorm>()) {
    const std::string weight = s.tensor("weight"), bias = s.tensor("bias");
    return s.done("torch.nn.functional.group_norm(x, " + std::to_string(m->options.num_groups()) + ", " + weight +
                  ", " + bias + ", eps=" + py_number(m->options.eps()) + ")");
  }
  if (auto* m = module.as<nn::Embedding>()) {
    if (m->options.max_norm())
      return s.missing("layer " + layer + " is an embedding with max_norm, which the reproducer does not spell");
    const std::string weight = s.tensor("weight");
    const auto pad = m->options.padding_idx();
    return s.done("torch.nn.functional.embedding(x, " + weight +
                  ", padding_idx=" + (pad ? std::to_string(*pad) : std::string("None")) + ")");
  }
  if (module.as<nn::ReLU>()) return s.done("torch.nn.functional.relu(x)");
  if (auto* m = module.as<nn::LeakyReLU>())
    return s.done("torch.nn.functional.leaky_relu(x, " + py_number(m->options.negative_slope()) + ")");
  if (auto* m = module.as<nn::ELU>())
    return s.done("torch.nn.functional.elu(x, " + py_number(m->options.alpha()) + ")");
  if (auto* m = module.as<nn::GELU>())
    return s.done("torch.nn.functional.gelu(x, approximate='" + m->options.approximate() + "')");
  if (module.as<nn::SiLU>()) return s.done("torch.nn.functional.silu(x)");
  if (module.as<nn::Tanh>()) return s.done("torch.tanh(x)");
  if (module.as<nn::Sigmoid>()) return s.done("torch.sigmoid(x)");
  if (auto* m = module.as<nn::Softmax>()) return s.done("torch.softmax(x, " + std::to_string(m->options.dim()) + ")");
  if (auto* m = module.as<nn::MaxPool1d>()) return spell_max_pool<1>(s, *m);
  if (auto* m = module.as<nn::MaxPool2d>()) return spell_max_pool<2>(s, *m);
  if (auto* m = module.as<nn::AvgPool1d>()) return spell_avg_pool<1>(s, *m);
  if (auto* m = module.as<nn::AvgPool2d>()) return spell_avg_pool<2>(s, *m);
  if (auto* m = module.as<nn::AdaptiveAvgPool2d>()) {
    const auto& size = m->options.output_size();
    std::vector<int64_t> out;
    for (const auto& v : *size) out.push_back(v ? *v : -1);
    if (std::find(out.begin(), out.end(), -1) != out.end())
      return s.missing("layer " + layer +
                       " keeps an input size (None in its output size), which the reproducer does not spell");
    return s.done("torch.nn.functional.adaptive_avg_pool2d(x, " + py_tuple(out) + ")");
  }
  if (auto* m = module.as<nn::Flatten>())
    return s.done("torch.flatten(x, " + std::to_string(m->options.start_dim()) + ", " +
                  std::to_string(m->options.end_dim()) + ")");
  if (auto* m = module.as<nn::Dropout>())
    return s.done("torch.nn.functional.dropout(x, " + py_number(m->options.p()) +
                  ", training=" + py_bool(m->is_training()) + ")");
  if (module.as<nn::Identity>()) return s.done("x");
  return s.missing("layer " + layer + " is a " + module.name() + ", which the reproducer does not spell yet");
}

}  // namespace mpscheck::model::detail

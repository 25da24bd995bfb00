// The one-op Python reproducer of a recorded call (core/op_call_workload.hpp): torch only. Each
// tensor argument is its storage stretch, viewed with the recorded shape, strides and offset:
// spelt out exactly when it is small, else drawn from a seed with the reference's mean and spread
// there. Then layer_repro's judge: the op on the CPU in float64, float32 and honest rounding in the
// target dtype, and on the target, each against float64, and which side is wrong.
#include "core/op_call_workload.hpp"

#include "core/layer_repro.hpp"

#include <mpscheck/dtype_names.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <sstream>

namespace mpscheck {

namespace {

// Stretches of at most this many elements are spelt out in the script, value for value.
constexpr int64_t kExactElements = 512;
// ... and integer ones (indices, labels: drawn, they would index other elements) up to this many.
constexpr int64_t kExactIndices = 16384;

std::string py_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\')
      out += '\\', out += static_cast<char>(ch);
    else if (ch >= 0x20 && ch < 0x7f)
      out += static_cast<char>(ch);
    else
      out += fmt::format("\\x{:02x}", ch);
  }
  return out + "\"";
}

std::string one_line(std::string s) {
  for (auto& ch : s)
    if (ch == '\n' || ch == '\r') ch = ' ';
  return s;
}

std::string py_float(double v) {
  if (std::isnan(v)) return "math.nan";
  if (std::isinf(v)) return v > 0 ? "math.inf" : "-math.inf";
  return fmt::format("{:.9g}", v);
}

std::string py_tuple(c10::IntArrayRef v) {
  return v.size() == 1 ? fmt::format("({},)", v[0]) : fmt::format("({})", fmt::join(v, ", "));
}

// A tensor argument: its saved stretch (a 1-D tensor the judge's run() moves and casts) and the
// expression that views it as the op saw it.
struct ScriptTensor {
  std::string name, stretch, view;
};

ScriptTensor script_tensor(const std::string& name, const at::Tensor& t) {
  int64_t span = t.numel() == 0 ? 0 : 1;
  for (int64_t d = 0; d < t.dim() && t.numel() > 0; ++d) span += (t.size(d) - 1) * t.stride(d);
  const at::Tensor stretch = t.numel() == 0 ? t.flatten() : t.as_strided({span}, {1}, t.storage_offset());
  ScriptTensor s{name, {}, {}};
  const std::string dtype = dtype_python(t.scalar_type());
  const bool exact = stretch.numel() <= kExactElements || (!t.is_floating_point() && stretch.numel() <= kExactIndices);
  if (exact) {
    std::string values;
    const at::Tensor wide = stretch.to(t.is_floating_point() ? at::kDouble : at::kLong).contiguous();
    const int64_t n = wide.numel();
    for (int64_t i = 0; i < n; ++i)
      values += (i ? ", " : "") + (t.is_floating_point() ? py_float(wide.data_ptr<double>()[i])
                                                         : std::to_string(wide.data_ptr<int64_t>()[i]));
    s.stretch = fmt::format("torch.tensor([{}], dtype={})", values, dtype);
  } else if (!t.is_floating_point()) {
    const at::Tensor wide = t.to(at::kLong);
    s.stretch = fmt::format("torch.randint({}, {}, ({},), generator=_generator).to({})", wide.min().item<int64_t>(),
                            wide.max().item<int64_t>() + 1, span + t.storage_offset(), dtype);
  } else {
    const at::Tensor values = t.to(at::kDouble);
    const at::Tensor finite = values.isfinite();
    const at::Tensor kept = values.masked_select(finite);
    const double mean = kept.numel() ? kept.mean().item<double>() : 0.0;
    const double spread = kept.numel() > 1 ? kept.std().item<double>() : 1.0;
    s.stretch =
        fmt::format("_drawn({}, {}, {}).to({})", span + t.storage_offset(), py_float(mean), py_float(spread), dtype);
  }
  s.view = fmt::format("torch.as_strided({}, {}, {}, {})", name, py_tuple(t.sizes()), py_tuple(t.strides()),
                       exact ? 0 : t.storage_offset());
  return s;
}

std::string py_value(const c10::IValue& v, const c10::Argument& a) {
  if (v.isNone()) return "None";
  if (v.isBool()) return v.toBool() ? "True" : "False";
  const c10::TypePtr type =
      a.type()->cast<c10::OptionalType>() ? a.type()->cast<c10::OptionalType>()->getElementType() : a.type();
  if (v.isInt()) {
    if (type->kind() == c10::TypeKind::ScalarTypeType) return dtype_python(static_cast<c10::ScalarType>(v.toInt()));
    if (type->kind() == c10::TypeKind::LayoutType) return "torch.strided";
    if (type->kind() == c10::TypeKind::MemoryFormatType) {
      static const char* formats[] = {"torch.contiguous_format", "torch.preserve_format", "torch.channels_last",
                                      "torch.channels_last_3d"};
      const int64_t f = v.toInt();
      return f >= 0 && f < 4 ? formats[f] : "torch.contiguous_format";
    }
    return std::to_string(v.toInt());
  }
  if (v.isDouble()) return py_float(v.toDouble());
  if (v.isString()) return py_string(v.toStringRef());
  if (v.isIntList()) return fmt::format("[{}]", fmt::join(v.toIntVector(), ", "));
  if (v.isDoubleList()) {
    std::string s;
    for (double d : v.toDoubleVector()) s += (s.empty() ? "" : ", ") + py_float(d);
    return "[" + s + "]";
  }
  if (v.isBoolList()) {
    std::string s;
    for (bool b : v.toBoolList()) s += std::string(s.empty() ? "" : ", ") + (b ? "True" : "False");
    return "[" + s + "]";
  }
  std::ostringstream out;
  out << v;
  return out.str();
}

}  // namespace

std::string op_call_script(const RecordedCall& call, const ReproTarget& target, size_t output,
                           const std::string& case_id, const std::string& finding) {
  std::vector<ScriptTensor> tensors;
  std::vector<std::string> positional, keywords;
  const auto& params = call.schema->arguments();
  for (size_t i = 0; i < call.args.size() && i < params.size(); ++i) {
    const c10::IValue& v = call.args[i];
    std::string expr;
    if (v.isTensor() && v.toTensor().defined()) {
      tensors.push_back(script_tensor(fmt::format("a{}", i), v.toTensor()));
      expr = tensors.back().view;
    } else if (v.isTensor()) {
      expr = "None";
    } else if (v.isList() && v.toListRef().size() > 0 && (v.toListRef()[0].isTensor() || v.toListRef()[0].isNone())) {
      std::string items;
      for (size_t k = 0; k < v.toListRef().size(); ++k) {
        const c10::IValue& e = v.toListRef()[k];
        if (e.isTensor() && e.toTensor().defined()) {
          tensors.push_back(script_tensor(fmt::format("a{}_{}", i, k), e.toTensor()));
          items += (items.empty() ? "" : ", ") + tensors.back().view;
        } else {
          items += std::string(items.empty() ? "" : ", ") + "None";
        }
      }
      expr = "[" + items + "]";
    } else {
      expr = py_value(v, params[i]);
    }
    if (params[i].kwarg_only())
      keywords.push_back(params[i].name() + "=" + expr);
    else
      positional.push_back(expr);
  }
  for (const std::string& k : keywords) positional.push_back(k);
  const std::string op_name = call.op.substr(call.op.find("::") + 2);
  std::string python = fmt::format("torch.ops.aten.{}.{}({})", op_name,
                                   call.overload.empty() ? "default" : call.overload, fmt::join(positional, ", "));
  if (call.schema->returns().size() > 1 || output > 0) python += fmt::format("[{}]", output);
  std::string names;
  for (const auto& t : tensors) names += (names.empty() ? "" : ", ") + t.name;

  std::string py;
  py += fmt::format("# mpscheck one-op reproducer: {} in {} ({}) on {} ({})\n#\n", one_line(call.op),
                    one_line(call.module), one_line(case_id), one_line(target.device), target.dtype);
  py += fmt::format("# mpscheck recorded this call in the model's CPU float32 reference run ({} such call{}, the\n",
                    call.calls, call.calls == 1 ? "" : "s");
  py +=
      "# first shown here) and replayed it alone. This script runs the op on the CPU in float64, float32 and\n"
      "# as honest rounding in DTYPE, and on DEVICE in DTYPE, and says whether DEVICE is the wrong side\n"
      "# (exit code 1 when it is). Small inputs are the reference's own values; larger ones are drawn\n"
      "# from SEED with the reference's mean and spread there, in the recorded shapes and strides.\n#\n";
  py += fmt::format("# The op:   {}\n", one_line(python));
  py += fmt::format("# Its data: {}\n", one_line(describe_arguments(call)));
  py += "import json, math, os, sys\n\nimport torch\n\n";
  py += fmt::format("DEVICE = {}\n", py_string(target.device));
  py += fmt::format("DTYPE = torch.{}\n", target.dtype);
  py += fmt::format("SEED = {}\n", target.seed);
  py += fmt::format("LAYER = {}\n", py_string(call.module));
  py += fmt::format("CALL = {}\n", py_string(fmt::format(" (call {} of the run)", call.first_call)));
  py += fmt::format("OP = {}\n", py_string(python));
  py += fmt::format("IN_MODEL = {}\n\n", py_string("mpscheck's replay on the target found: " + one_line(finding)));
  py += "_generator = torch.Generator().manual_seed(SEED)\n\n\n";
  py += "def _drawn(n, mean, spread):\n";
  py += "    return torch.randn(n, generator=_generator, dtype=torch.float64) * spread + mean\n\n\n";
  py += "saved = {\n";
  for (const auto& t : tensors) py += fmt::format("    {}: {},\n", py_string(t.name), t.stretch);
  py += "}\n\n\n";
  py += fmt::format("def op({}):\n    return {}\n", names, python);
  py += layer_script_judge();
  return py;
}

std::string OpCallWorkload::reproducer(const ReproTarget& target) const {
  return op_call_script(call_, target, 0, id_, "");
}

}  // namespace mpscheck

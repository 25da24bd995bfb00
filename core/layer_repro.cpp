#include "core/layer_repro.hpp"

#include <mpscheck/dtype_names.hpp>

#include "checks/errors.hpp"
#include "reports/writers.hpp"

#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <torch/csrc/jit/serialization/pickle.h>

namespace mpscheck {

namespace {

// A Python string literal holding `s` (any bytes): printable ASCII kept, the rest escaped.
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

// Text for a comment line: no line breaks.
std::string one_line(std::string s) {
  for (auto& ch : s)
    if (ch == '\n' || ch == '\r') ch = ' ';
  return s;
}

std::string python_dtype(const std::string& dtype) { return "torch." + dtype; }

std::string shape_of(const at::Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

std::string call_text(const CaseResult& r) {
  return r.first_diverging_layer_call > 1 ? fmt::format(" (call {})", r.first_diverging_layer_call) : std::string();
}

// The script's body after its constants: loading, running each side, the figures and the verdict.
// The verdict is mpscheck's reduced-precision rule in short (docs/verdicts.md, "Reduced precision"): the
// target is wrong when its error against float64 is not what honest rounding in its dtype explains.
constexpr const char* kScriptLoad = R"PY(
saved = dict(torch.load(DATA))  # (name, tensor) pairs; a plain tensor file, so the safe weights_only load reads it
)PY";

constexpr const char* kScriptBody = R"PY(

def run(device, dtype, round_to=None):
    """The op on copies of the saved tensors: floating ones rounded to round_to first, then cast to dtype."""
    args = {}
    for name, t in saved.items():
        t = t.clone()
        if t.is_floating_point():
            if round_to is not None:
                t = t.to(round_to)
            t = t.to(device=device, dtype=dtype)
        else:
            t = t.to(device)
        args[name] = t
    with torch.no_grad():
        out = op(**args)
    return out.detach().to("cpu").double()


def errors(y, gold):
    """Figures of y against float64, over the elements where float64 is finite."""
    finite = torch.isfinite(gold)
    diff = (y - gold)[finite]
    g = gold[finite]
    n = max(diff.numel(), 1)
    return {
        "max_abs": diff.abs().max().item() if diff.numel() else 0.0,
        "rmse": math.sqrt(diff.pow(2).sum().item() / n),
        # The signed mean relative error: every element 3% too large reads 0.03.
        "bias": (diff * g.sign()).sum().item() / max(g.abs().sum().item(), 1e-300),
        "nonfinite": int((~torch.isfinite(y[finite])).sum().item()),
    }


name = str(DTYPE).replace("torch.", "")
gold = run("cpu", torch.float64)
sides = [("cpu float32", run("cpu", torch.float32))]
if DTYPE != torch.float32:
    # What an honest kernel in DTYPE can deliver: inputs rounded to it, float32 arithmetic, one rounding of the result.
    sides.append(("honest " + name + " rounding", run("cpu", torch.float32, round_to=DTYPE).to(DTYPE).double()))
sides.append((DEVICE + " " + name, run(DEVICE, DTYPE)))
figures = {label: errors(y, gold) for label, y in sides}

print("layer %s%s: %s" % (LAYER, CALL, OP))
print("%-30s %14s %12s %15s   (against CPU float64)" % ("", "max abs error", "RMSE", "mean rel error"))
for label, f in figures.items():
    print("%-30s %14.4g %12.4g %15.4g%s" % (label, f["max_abs"], f["rmse"], f["bias"],
                                             "   %d non-finite" % f["nonfinite"] if f["nonfinite"] else ""))

target = figures[sides[-1][0]]
honest = figures[sides[-2][0]]  # float32 itself when DTYPE is float32
unit = {torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8}.get(DTYPE, 2.0 ** -24)
base_rmse = max(honest["rmse"], figures["cpu float32"]["rmse"])
base_abs = max(honest["max_abs"], figures["cpu float32"]["max_abs"])
bias_allowed = max(3 * abs(honest["bias"]), unit * (1 + 4 / math.sqrt(max(gold.numel(), 1))))
wrong = []
if target["nonfinite"] > honest["nonfinite"]:
    wrong.append("%d non-finite elements where float64 is finite" % target["nonfinite"])
if not target["rmse"] <= 3 * base_rmse:
    wrong.append("its RMSE against float64 is %.3g, %.3gx what honest %s rounding gives (%.3g)"
                 % (target["rmse"], target["rmse"] / max(base_rmse, 1e-300), name, base_rmse))
if not target["max_abs"] <= 4 * base_abs:
    wrong.append("its largest error is %.3g where honest %s rounding's is %.3g" % (target["max_abs"], name, base_abs))
if not abs(target["bias"]) <= bias_allowed:
    wrong.append("it is %.3g%% too %s on average against float64, where honest %s rounding explains %.3g%%"
                 % (abs(target["bias"]) * 100, "large" if target["bias"] > 0 else "small", name, bias_allowed * 100))
if wrong:
    print("verdict: %s in %s is the wrong side of this op: %s." % (DEVICE, name, "; ".join(wrong)))
else:
    print("verdict: %s in %s computes this op within what honest %s rounding explains (RMSE %.3g against %.3g). "
          "The op alone does not reproduce the finding: what mpscheck saw at this layer (%s) is this dtype's honest "
          "rounding, or error the layer's input carried in from earlier layers or training steps."
          % (DEVICE, name, name, target["rmse"], base_rmse, IN_MODEL))
if os.environ.get("MPSCHECK_REPRO_JSON"):
    with open(os.environ["MPSCHECK_REPRO_JSON"], "w") as f:
        # For mpscheck's own tests: the float32 side's first values, to check the layer was rebuilt exactly.
        head = [v if v == v and abs(v) != float("inf") else None for v in sides[0][1].flatten()[:16].tolist()]
        json.dump({"layer": LAYER, "figures": figures, "wrong": wrong, "float32": head}, f)
sys.exit(1 if wrong else 0)
)PY";

std::string render_layer_script(const CaseResult& r, const LayerCall& call, const ReproTarget& target,
                                const std::string& data_file) {
  const std::string layer = r.first_diverging_layer;
  std::string in_model = "in the model mpscheck measured this layer's output";
  if (r.layer)
    in_model = fmt::format("{} off by up to {:.3g}, {} of {} elements outside tolerance", in_model, r.layer->max_abs,
                           r.layer->mismatches, r.layer->numel);
  std::string data;
  std::string params;
  for (const auto& t : call.tensors) {
    data += fmt::format("{}{} {} {}", data.empty() ? "" : ", ", t.name, dtype_name(t.value.scalar_type()),
                        shape_of(t.value));
    params += (params.empty() ? "" : ", ") + t.name;
  }
  std::string py;
  py += fmt::format("# mpscheck op-level reproducer: {} on {} ({}), layer {}{}\n", one_line(r.id),
                    one_line(target.device), target.dtype, one_line(layer), call_text(r));
  py += "#\n";
  py += fmt::format("# mpscheck localised this model finding to layer {}{}: {}.\n", one_line(layer), call_text(r),
                    one_line(in_model));
  py +=
      "# This script runs that layer's op alone, on the input and parameters the CPU float32 reference gave it\n"
      "# (saved by mpscheck; torch.load reads them): in float64, the exact answer; in float32; as honest\n"
      "# rounding in DTYPE (inputs rounded, float32 arithmetic, the result rounded once); and on DEVICE in\n"
      "# DTYPE. It prints each one's error against float64 and says whether DEVICE is the wrong side\n"
      "# (exit code 1 when it is, 0 when the op alone computes within honest rounding).\n#\n";
  py += fmt::format("#     python3 {} [{}]\n#\n", one_line(data_file.substr(0, data_file.rfind('.')) + ".py"),
                    one_line(data_file));
  py += fmt::format("# The op:   {}\n", one_line(call.python));
  py += fmt::format("# Its data: {}\n", one_line(data));
  py += "import json, math, os, sys\n\nimport torch\n\n";
  py += fmt::format("DEVICE = {}\n", py_string(target.device));
  py += fmt::format("DTYPE = {}\n", python_dtype(target.dtype));
  py += fmt::format(
      "DATA = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), {})\n",
      py_string(data_file));
  py += fmt::format("LAYER = {}\n", py_string(layer));
  py += fmt::format("CALL = {}\n", py_string(call_text(r)));
  py += fmt::format("OP = {}\n", py_string(call.python));
  py += fmt::format("IN_MODEL = {}\n\n\n", py_string(in_model));
  py += fmt::format("def op({}):\n    return {}\n\n", params, call.python);
  py += kScriptLoad;
  py += kScriptBody;
  return py;
}

}  // namespace

const char* layer_script_judge() { return kScriptBody; }

LayerScript write_layer_files(const CaseResult& r, const LayerCall& call, const ReproTarget& target,
                              const std::string& dir) {
  // Pairs of (name, tensor) in a tuple: plain pickle that torch.load reads with weights_only=True,
  // its default (a c10::Dict would carry a type tag that only a trusting load accepts).
  std::vector<c10::IValue> pairs;
  for (const auto& t : call.tensors)
    pairs.emplace_back(c10::ivalue::Tuple::create({c10::IValue(t.name), c10::IValue(t.value.contiguous())}));
  const std::vector<char> bytes = torch::jit::pickle_save(c10::IValue(c10::ivalue::Tuple::create(std::move(pairs))));
  const std::string base = case_file_name(r.id) + ".layer";
  LayerScript out;
  out.data_path = dir + "/" + base + ".pt";
  out.script_path = dir + "/" + base + ".py";
  out.script = render_layer_script(r, call, target, base + ".pt");
  write_text_report(out.data_path, std::string(bytes.begin(), bytes.end()));
  write_text_report(out.script_path, out.script);
  return out;
}

LayerScript write_layer_reproducer(const Workload& w, const CaseResult& r, const ReproTarget& target,
                                   const std::string& dir) {
  LayerScript out;
  const std::string& layer = r.first_diverging_layer;
  if (layer.empty()) {
    out.missing = "localisation named no layer";
    return out;
  }
  if (layer.rfind("backward/", 0) == 0) {
    out.missing = "the first diverging layer is a parameter's gradient (" + layer +
                  "); the op-level reproducer covers forward ops";
    return out;
  }
  LayerCall call;
  try {
    Setup setup;
    setup.seed = target.seed;
    setup.quick = target.quick;
    call = w.instantiate(setup, Placement{})->layer_call(layer, r.first_diverging_layer_call - 1);
  } catch (const c10::Error& e) {
    out.missing = "capturing layer " + layer + " failed: " + tidy_exception_message(e.what_without_backtrace());
    return out;
  } catch (const std::exception& e) {
    out.missing = "capturing layer " + layer + " failed: " + tidy_exception_message(e.what());
    return out;
  }
  if (call.python.empty()) {
    out.missing = call.missing;
    return out;
  }
  try {
    return write_layer_files(r, call, target, dir);
  } catch (const ReportError&) {
    throw;  // a file that cannot be written: the caller names it
  } catch (const std::exception& e) {
    out.missing = "saving layer " + layer + "'s tensors failed: " + tidy_exception_message(e.what());
    return out;
  }
}

}  // namespace mpscheck

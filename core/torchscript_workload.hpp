// The user's own model: a TorchScript file run on reference and target (`mpscheck --model FILE.pt
// --input SPEC ...`). Built into the host rather than loaded as a module, because its cases come
// from the command line, not from a catalog.
#pragma once

#include "core/input_spec.hpp"
#include "core/registry.hpp"

#include <mpscheck/workload.hpp>

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace mpscheck {

struct TorchScriptOptions {
  std::string path;
  std::vector<InputSpec> inputs;
  // --model-for DTYPE=FILE: the same model traced in DTYPE (float64, bfloat16 or float16). A side
  // that computes in DTYPE runs FILE's graph with `path`'s weights converted to DTYPE; the
  // others (the float32 reference, the rounded-input baseline) run `path`.
  std::map<c10::ScalarType, std::string> traced_in;
};

// Options from a path, --input spec strings and --model-for DTYPE=FILE strings; throws
// BadModelInput for a bad spec.
TorchScriptOptions torchscript_options(const std::string& path, const std::vector<std::string>& specs,
                                       const std::vector<std::string>& model_for = {});

// The user's own model (a TorchScript file or a .pt2 package): its errors are the model's, not a
// case's, and its reference is keyed in the cache by what it is computed from.
class UserModelWorkload : public Workload {
 public:
  // The files' content digests, the input specs and the mode.
  virtual std::string identity() const = 0;
};

// Whether `w` is the user's own model, TorchScript or .pt2 (its errors are the model's, not a case's).
bool is_torchscript(const Workload& w);

// The inputs of a user's model on one side, from the seed: floating inputs drawn in float32
// (rounded to `where.round_inputs_to` when set) and converted to the side's dtype, integers in
// their range. Every side of every format draws them here, so all sides see the same numbers.
std::vector<at::Tensor> model_inputs(const std::vector<InputSpec>& specs, const Setup& setup, const Placement& where);

// The infer case, and the train case (backward of the sum of the outputs, parameter gradients
// compared) when `train` is set.
std::vector<std::unique_ptr<Workload>> make_torchscript_workloads(const TorchScriptOptions& options, bool train);

// A model output mpscheck cannot compare (an object, a dict with a float key) or two outputs with
// one name: the case is an `error` that names it, never a pass on the outputs that are left.
struct UncomparableOutput : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What a user's model case's reference is computed from, for the reference cache key: the files'
// content digests, the input specs and the mode. Empty for any other workload.
std::string torchscript_identity(const Workload& w);

// What any case is computed from beyond its id: torchscript_identity for a user's model, else the
// digest of the plugin file it came from; empty for a case with neither (built in). The reference
// cache keys on it, and the journal records it so --resume knows a changed file.
std::string case_source(const RegisteredWorkload& rw);

// Loads the files and checks the inputs against the model before anything runs; throws
// BadModelInput with one line when a file is missing or is not TorchScript, a --model-for file
// holds another model's parameters, or the inputs do not match the model's forward: their count,
// an argument that is not a tensor, and (for a file that records the inputs it was exported with,
// as scripts/export-hf.py's do) each input's dtype and rank. An error the model raises while it
// runs is the model's own, reported in its case.
void validate_torchscript(const TorchScriptOptions& options);

// The model cannot compute in the target's dtype because its graph keeps the float32 it was
// traced in (a constant, a cast, a tensor made with dtype=float32 where Python ran): exit code 5
// with one line saying so and how to get a file that can.
struct GraphTracedInFloat32 : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// For a target computing in `dtype` (float16/bfloat16) without a --model-for file for it: runs
// the model once on CPU in float32 and once in `dtype`, and throws GraphTracedInFloat32 when the
// first runs and the second fails on a dtype disagreement inside the graph. Any other failure is
// left to the case, which reports it.
void check_torchscript_computes_in(const TorchScriptOptions& options, c10::ScalarType dtype);

}  // namespace mpscheck

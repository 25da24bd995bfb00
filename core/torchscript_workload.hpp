// The user's own model: a TorchScript file run on reference and target (`mpscheck --model FILE.pt
// --input SPEC ...`). Built into the host rather than loaded as a module, because its cases come
// from the command line, not from a catalog.
#pragma once

#include "core/input_spec.hpp"

#include <mpscheck/workload.hpp>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace mpscheck {

struct TorchScriptOptions {
  std::string path;
  std::vector<InputSpec> inputs;
};

// Options from a path and --input spec strings; throws BadModelInput for a bad spec.
TorchScriptOptions torchscript_options(const std::string& path, const std::vector<std::string>& specs);

// The infer case, and the train case (backward of the sum of the outputs, parameter gradients
// compared) when `train` is set.
std::vector<std::unique_ptr<Workload>> make_torchscript_workloads(const TorchScriptOptions& options, bool train);

// A model output mpscheck cannot compare (an object, a dict with a float key) or two outputs with
// one name: the case is an `error` that names it, never a pass on the outputs that are left.
struct UncomparableOutput : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What a TorchScript case's reference is computed from, for the reference cache key: the file's
// content digest, the input specs and the mode. Empty for any other workload.
std::string torchscript_identity(const Workload& w);

// Loads the file and runs it once on CPU with the inputs; throws BadModelInput with one line when
// the file is missing, is not TorchScript, or the inputs do not fit the model.
void validate_torchscript(const TorchScriptOptions& options);

}  // namespace mpscheck

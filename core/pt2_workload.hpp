// The user's own model as a .pt2 package (torch.export + AOTInductor): `mpscheck --model
// FILE.pt2 [--eager FILE.pt]`. One package holds one compiled model per device and dtype, named
// DEVICE_DTYPE (cpu_float32, cpu_float64, cpu_bfloat16, mps_float16, ...); each side of a case runs
// the model compiled for where it computes. With --eager, the CPU float32 reference, the float64
// gold and the rounded-input baseline run the same model's TorchScript eagerly instead, so the
// compiled code is judged against the model's own eager arithmetic.
#pragma once

#include "core/torchscript_workload.hpp"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mpscheck {

struct Pt2Options {
  std::string path;                         // --model FILE.pt2
  std::vector<InputSpec> inputs;            // --input, else the specs the package records
  std::optional<TorchScriptOptions> eager;  // --eager FILE.pt (with its --model-for files)
};

// Whether `path` names a .pt2 package (by its extension).
bool is_pt2_path(const std::string& path);

// Options from the command line; without --input, the inputs are the ones the package records
// (scripts/mpscheck-export.py writes them). Throws BadModelInput with one line for a package that
// cannot be read, a spec that does not parse, or no --input and no record.
Pt2Options pt2_options(const std::string& path, const std::vector<std::string>& specs, const std::string& eager,
                       const std::vector<std::string>& model_for);

// The infer case (a package is compiled for inference only).
std::vector<std::unique_ptr<Workload>> make_pt2_workloads(const Pt2Options& options);

// Before anything runs, for a run on `device` computing in `dtype`: every model the run loads is in
// the package, was compiled for this platform, CPU and LibTorch, and loads; the inputs match the
// ones it was compiled for; the --eager file is TorchScript that takes them. Throws BadModelInput
// with one line (exit code 2) otherwise, naming the models the package holds.
void check_pt2(const Pt2Options& options, const c10::Device& device, c10::ScalarType dtype);

}  // namespace mpscheck

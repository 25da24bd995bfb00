// PyTorch's own OpInfo samples as op cases (issue 50). scripts/export-opinfo.py runs every OpInfo
// op's sample inputs on the CPU under a TorchDispatchMode and saves the ATen calls they make, with
// their tensors as the calls found them (dtype, shape, strides, storage offset), to one file that
// torch.save writes and LibTorch's unpickler reads. Each saved call becomes a case per floating dtype,
// `op/opinfo/<opinfo name>/<f32|f16|bf16>/s<sample>-<aten op>/<forward|backward>`, replayed exactly as
// a model's own calls are (core/op_call_workload.hpp), so the catalog's op rules, float64 gold,
// honest baseline, later call, crash isolation, timing and reproducers all apply.
//
// Why the host and not a plugin: a plugin sees the SDK alone, and replaying a recorded ATen call by
// its schema is host code that the per-model replay already has; a second copy against the SDK would
// drift from the first. The file sits beside the plugins (build/plugins/opinfo-calls.pt, or in any
// --plugin-dir), is generated at build time and never committed.
#pragma once

#include "core/op_record.hpp"

#include <mpscheck/workload.hpp>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace mpscheck {

// The file's name in a plugin folder.
inline constexpr const char* kOpInfoFileName = "opinfo-calls.pt";

// One saved call and where in OpInfo it came from.
struct OpInfoCall {
  RecordedCall call;
  std::string opinfo;             // the OpInfo entry's full name: "nn.functional.gelu", "max.reduction_with_dim"
  int sample = 0;                 // its index among the entry's samples
  bool backward = false;          // made by autograd's backward of the sample
  int index = 0;                  // its order among the sample's calls in that direction
  bool quick = false;             // in the --quick selection (the entry's first sample)
  std::vector<std::string> also;  // other entries' samples that made the same call ("addmm/s2")
};

struct OpInfoCalls {
  std::string file;
  std::string torch_version;  // of the wheel that exported it
  int entries = 0;            // OpInfo entries the export went through
  std::vector<OpInfoCall> calls;
  // Saved calls the host does not replay, by core/op_record.hpp's reason ("random": 3).
  std::vector<std::pair<std::string, int>> not_replayed;
};

// Reads an export. Throws PluginLoadError (core/plugin_host.hpp) with one line naming the file and
// what to do: unreadable, not an export, another format, or a call this LibTorch has no schema for.
OpInfoCalls read_opinfo_calls(const std::filesystem::path& file);

// The cases of `calls` (which must outlive them): one per call and dtype (float32, float16,
// bfloat16), tagged `opinfo`, the direction and, beyond the quick selection, `full-only`.
std::vector<std::unique_ptr<Workload>> make_opinfo_workloads(const OpInfoCalls& calls);

// The id's last part for call `c`: the ATen op without its namespace and the overload after a dot
// ("addmm", "add.Tensor"); where its sample makes that op more than once in the same direction,
// each call's order follows ("mul.Tensor-2").
std::string opinfo_call_name(const OpInfoCall& c, bool repeated);

}  // namespace mpscheck

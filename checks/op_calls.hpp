// A model case's own ATen calls, each replayed alone on the target and judged by the op rules
// (core/op_replay.hpp, issue 49): the part of a model's result that says which op, at which shapes
// and in which module, is wrong by itself. Plain data, as the rest of the result model.
#pragma once

#include <mpscheck/vocabulary.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace mpscheck {

// One distinct call (same op, overload, argument dtypes, shapes, strides, storage offsets and
// values) and its verdict alone.
struct OpCallReport {
  std::string op;         // "aten::addmm"
  std::string overload;   // "" for the default overload
  std::string arguments;  // its tensors as recorded: "float32[64, 32], float32[32, 16] strides (1, 32)"
  std::string module;     // the module that made its first call ("layers.1", "backward of MmBackward0")
  int calls = 0;          // how many such calls the recorded run made
  int first_call = 0;     // the first one's 1-based index among the run's top-level calls
  bool backward = false;  // made by autograd's backward
  Status status = Status::Skip;
  std::string message;
  std::string later_call;   // what its second call on the target showed (checks/later_call.hpp)
  std::string fingerprint;  // reports/fingerprint.hpp's text for the op alone (findings only)
  std::string reproducer;   // a one-op Python script, torch only (findings only)
};

struct OpReplay {
  int top_level_calls = 0;   // every top-level ATen call of the recorded reference run
  int replayed = 0;          // distinct calls replayed (at most core/op_record.hpp's bound)
  int beyond_bound = 0;      // distinct calls the bound left out
  std::string not_replayed;  // calls left out by kind: "a view of its input: 12 (aten::view 8, aten::t 4)"
  std::string note;          // why nothing was replayed, when nothing was
  std::vector<OpCallReport> calls;

  int findings() const;
};

void to_json(nlohmann::json& j, const OpCallReport& c);
void from_json(const nlohmann::json& j, OpCallReport& c);
void to_json(nlohmann::json& j, const OpReplay& r);
void from_json(const nlohmann::json& j, OpReplay& r);

}  // namespace mpscheck

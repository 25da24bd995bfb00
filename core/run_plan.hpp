// Which selected cases are timed. Every case gets a verdict; timing costs far more than a
// verdict (a budget per side, repeated), so under --quick it goes to the cases whose speed a
// user reads: every model, and per operator and dtype one forward case on a contiguous input.
// The other variants (sliced, transposed, backward, ...) of that op and dtype are verdict-only.
#pragma once

#include <string>
#include <vector>

namespace mpscheck {

// The parts of an op id: op/<family>/<op>/<dtype>/<variant>[/<direction>].
struct OpIdParts {
  std::string family, op, dtype, variant, direction;  // direction: "forward", "backward" or empty
};
// False for ids that are not op ids of that shape (model ids, user plugins' own schemes).
bool parse_op_id(const std::string& id, OpIdParts* parts);

// On a target that computes float32 cases in a reduced dtype (`cpu:bfloat16`, `mps:float16`), an
// f32 op case and its twin in that dtype (the same id with `bf16` or `f16` for `f32`) are one
// computation: the same seed draws the same float32 inputs, the reference is CPU float32 for both,
// and the target computes both in the reduced dtype under that dtype's tolerance. `twin[i]` is true
// for an f32 case whose twin is among `ids`: it is run and reported once, under the twin's id,
// which names the dtype that ran. `reduced_short` is the twin's dtype segment, empty for a target
// that computes float32 cases in float32 (then nothing is a twin).
// The twin of an f32 op id in the dtype `reduced_short` ("bf16", "f16"); empty for any other id.
std::string reduced_twin_id(const std::string& id, const std::string& reduced_short);
std::vector<bool> same_computation_twins(const std::vector<std::string>& ids, const std::string& reduced_short);

// `timed[i]` for `ids[i]` (kinds: true for a model case). Without quick every case is timed but
// OpInfo's (op/opinfo/..., verdicts only: their shapes are test shapes); with min_time 0 none is.
std::vector<bool> plan_timing(const std::vector<std::string>& ids, const std::vector<bool>& is_model, bool quick,
                              double min_time_s);

}  // namespace mpscheck

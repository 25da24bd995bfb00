// The rounded-operation baseline: a float32 run in which every floating result of every operator
// (forward, backward, optimizer, in place or not) is rounded to a float16/bfloat16 dtype the moment
// it is made. That is what an honest device computing in that dtype gives at best: float32
// arithmetic inside each kernel, one rounding of each result. The rounded-input baseline rounds
// only the inputs and weights, so it misses what the roundings between operators do: an honest
// bfloat16 backward through a log-softmax loses a tenth of each weight gradient to them, where the
// rounded-input baseline shows a hundredth. On a CPU target it is the honest side of the training
// state rule (checks/structure.hpp), where the CPU's own run in the dtype is the target itself.
#pragma once

#include <c10/core/ScalarType.h>

namespace mpscheck {

// While alive, every operator called on this thread (and in the backward passes it starts) has
// each of its float32 results rounded to `dtype` before anything reads it. Nests; restores the
// previous state when it ends.
class RoundEveryResult {
 public:
  explicit RoundEveryResult(c10::ScalarType dtype);
  ~RoundEveryResult();
  RoundEveryResult(const RoundEveryResult&) = delete;
  RoundEveryResult& operator=(const RoundEveryResult&) = delete;

 private:
  c10::ScalarType saved_dtype_;
  bool saved_included_;
};

}  // namespace mpscheck

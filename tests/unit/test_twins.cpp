// On a target that computes f32 cases in a reduced dtype, an f32 op case and its twin in that dtype
// are one computation: it runs once, under the twin's id (issue: 1,284 duplicate runs on cpu:bfloat16).
#include "core/run_plan.hpp"

#include <gtest/gtest.h>

using namespace mpscheck;

TEST(SameComputationTwins, AnF32CaseWithItsReducedTwinSelectedIsATwin) {
  const std::vector<std::string> ids = {
      "op/activation/sigmoid/f32/contiguous/backward",
      "op/activation/sigmoid/bf16/contiguous/backward",
      "op/activation/sigmoid/f32/transposed/forward",  // no bf16 transposed variant: runs, computed in bf16
      "op/activation/sigmoid/f16/contiguous/forward",  // its own dtype, never a twin
      "op/reduction/sum/f32/contiguous",
      "op/reduction/sum/bf16/contiguous",  // ids without a direction
      "model/mlp/train",
      "op/indexing/gather/i64/contiguous/forward"};
  const auto bf16 = same_computation_twins(ids, "bf16");
  EXPECT_EQ(bf16, (std::vector<bool>{true, false, false, false, true, false, false, false}));
  // On float16, the bf16 cases are no twins of the f32 ones.
  const auto f16 = same_computation_twins(ids, "f16");
  EXPECT_EQ(f16, std::vector<bool>(ids.size(), false));
  // A target that computes f32 in f32 has no twins.
  EXPECT_EQ(same_computation_twins(ids, ""), std::vector<bool>(ids.size(), false));
}

TEST(SameComputationTwins, ATwinOutsideTheSelectionLeavesTheF32CaseToRun) {
  const std::vector<std::string> ids = {"op/activation/sigmoid/f32/contiguous/backward"};
  EXPECT_EQ(same_computation_twins(ids, "bf16"), std::vector<bool>{false});
}

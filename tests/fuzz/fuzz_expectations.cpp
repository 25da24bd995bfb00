// libFuzzer: expectations files (--expect). Any text either parses or is an ExpectationError, and
// what parses can be applied to a few cases without failing.
#include "core/workflow.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto expectations = mpscheck::parse_expectations(text, "fuzz.expect");
    std::vector<mpscheck::CaseResult> cases(3);
    cases[0].id = "op/conv/conv2d/f32/contiguous/forward";
    cases[0].status = mpscheck::Status::Mismatch;
    cases[1].id = "model/mlp/train";
    cases[1].status = mpscheck::Status::Pass;
    cases[2].id = "op/sort/argsort/f16/transposed/forward";
    cases[2].status = mpscheck::Status::Crash;
    const nlohmann::json env{{"torch_version", "2.13.0"}, {"os", "Linux"}};
    mpscheck::apply_expectations(expectations, env, "cpu:bfloat16", cases);
    mpscheck::has_unexpected(cases);
  } catch (const mpscheck::ExpectationError&) {
  }
  return 0;
}

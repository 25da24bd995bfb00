// libFuzzer: `--target DEVICE[:DTYPE]`. Any text either parses or is a BadTarget, and what parses
// prints back as something that parses to the same spec.
#include "core/target.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const mpscheck::TargetSpec spec = mpscheck::parse_target(text);
    const mpscheck::TargetSpec again = mpscheck::parse_target(spec.str());
    if (again.str() != spec.str()) __builtin_trap();
  } catch (const mpscheck::BadTarget&) {
  }
  return 0;
}

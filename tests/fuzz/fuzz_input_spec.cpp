// libFuzzer: `--input` specs of --model. Any text either parses or is a BadModelInput.
#include "core/input_spec.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const mpscheck::InputSpec s = mpscheck::parse_input_spec(text);
    int64_t numel = 1;
    for (int64_t d : s.shape) {
      if (d < 0) __builtin_trap();  // a negative dimension must never get through
      numel *= d;
    }
    if (numel > mpscheck::kMaxInputElements) __builtin_trap();
  } catch (const mpscheck::BadModelInput&) {
  }
  return 0;
}

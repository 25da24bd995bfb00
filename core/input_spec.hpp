// The `--input` spec of `mpscheck --model`: parsed without LibTorch beyond c10's ScalarType, so the
// parser can be fuzzed on its own (tests/fuzz).
#pragma once

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mpscheck {

// One `--input` spec: DTYPE[d0,d1,...] with an optional integer range :LO..HI (HI excluded), e.g.
// float32[1,3,224,224], int64[1,128]:0..30522, bool[1,128].
struct InputSpec {
  c10::ScalarType dtype = c10::kFloat;
  std::vector<int64_t> shape;
  int64_t lo = 0, hi = 10;
  std::string text;
};

struct BadModelInput : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// Largest input a spec may ask for, in elements: 2^31 (8 GiB of float32) is already far beyond a
// test input, and keeps every size computation clear of overflow.
constexpr int64_t kMaxInputElements = int64_t{1} << 31;

// Throws BadModelInput naming the spec and what is wrong with it.
InputSpec parse_input_spec(const std::string& text);

}  // namespace mpscheck

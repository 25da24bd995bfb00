// The float64 passes over a whole output (checks/attribution.cpp's gold judge, checks/structure.cpp's
// unit errors) read it a chunk at a time, so a 2^31-element output never needs a float64 copy of itself.
// Private to checks/.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace mpscheck::chunks {

constexpr std::int64_t kChunk = std::int64_t{1} << 20;

// Elements [begin, begin + len) of the flat tensor `x` as contiguous float64, rounded to `round_to`
// first unless it is Undefined (a float32 baseline held to the target dtype, as the target's output is).
inline at::Tensor as_double(const at::Tensor& x, std::int64_t begin, std::int64_t len,
                            c10::ScalarType round_to = c10::ScalarType::Undefined) {
  at::Tensor c = x.narrow(0, begin, len);
  if (round_to != c10::ScalarType::Undefined) c = c.to(round_to);
  return c.to(at::kDouble).contiguous();
}

}  // namespace mpscheck::chunks

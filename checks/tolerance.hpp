// The one table of comparison tolerances: per dtype, widened per family.
#pragma once

#include <c10/core/ScalarType.h>

#include <string>

namespace mpscheck {

struct Tolerance {
  double rtol = 0;
  double atol = 0;
};

// Tolerance for comparing a target computing in `dtype` against the CPU float32 reference, for a
// workload of tolerance family `family` (Workload::family()). Integer and bool dtypes are exact.
// float16/bfloat16 get one rule for every family but "random" (README, "Reduced precision"): the
// plain tolerance is only a fast path in front of the float64 judge, so its rtol is
// kPlainRoundingUnits units of the dtype's rounding and its atol is left for
// `scaled_to_output` to set from the output's own scale (here it is 0).
Tolerance tolerance_for(const std::string& family, c10::ScalarType dtype);

// The fast path's rtol for float16/bfloat16, in units of the dtype's unit roundoff: an element
// within it is within the float64 rule's kRoundingUnits * u * |g| + 3 * |r - g| (checks/compare.hpp).
constexpr double kPlainRoundingUnits = 4;
// The fast path's atol for float16/bfloat16 outputs of families that accumulate (dot products,
// reductions, networks): this many rounding units of the output's RMS, because an element that
// sums many terms carries the rounding of its terms, not of itself. An output of scale 1e-3 (a
// parameter update) is judged at 1e-3, never under a fixed atol. Families of one rounding per
// element (elementwise, activation, softmax, pool, indexing, shape) keep atol 0: their honest
// error is relative to the element, and a small element 2x off must reach the float64 judge.
constexpr double kScaleRoundingUnits = 4;

// `tol` for one output of a float16/bfloat16 target of tolerance family `family` whose reference
// has RMS `scale` (finite elements): see kScaleRoundingUnits. The atol never drops below tol.atol
// (a reference that differs from itself). Other dtypes keep `tol`.
Tolerance scaled_to_output(const Tolerance& tol, const std::string& family, c10::ScalarType dtype, double scale);

}  // namespace mpscheck

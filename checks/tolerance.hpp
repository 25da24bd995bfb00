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
Tolerance tolerance_for(const std::string& family, c10::ScalarType dtype);

}  // namespace mpscheck

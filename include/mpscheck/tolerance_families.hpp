// The tolerance families a workload may name in Workload::family() (and an op in OpDef::tolerance).
// mpscheck's tolerance table (checks/tolerance.cpp) has one rule for each, and the host refuses a
// plugin whose case names any other when it loads: a misspelt family would otherwise be compared
// under a default tolerance without a word.
#pragma once

#include <string>
#include <string_view>

namespace mpscheck {

inline constexpr std::string_view kToleranceFamilies[] = {
    "elementwise",  // one rounding per element: the default
    "activation",   // libm-style functions (exp, erf, tanh, ...)
    "conv",        "matmul",   "linalg", "reduction", "softmax",   "norm",
    "pool",        "indexing", "loss",   "attention", "recurrent", "fft",
    "random",  // statistics of samples (OpDef::statistics)
    "shape",   // pure data movement: exact
    "model",       "train",
};

constexpr bool is_tolerance_family(std::string_view family) {
  for (std::string_view known : kToleranceFamilies)
    if (known == family) return true;
  return false;
}

// "elementwise, activation, ...": for messages.
inline std::string tolerance_family_list() {
  std::string list;
  for (std::string_view known : kToleranceFamilies) {
    if (!list.empty()) list += ", ";
    list += known;
  }
  return list;
}

}  // namespace mpscheck

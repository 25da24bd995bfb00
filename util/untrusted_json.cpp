#include "util/untrusted_json.hpp"

#include <cmath>
#include <cstring>
#include <limits>

namespace mpscheck {

namespace {
// Fields the result model reads as integers, with the largest magnitude their type holds.
double integer_limit(const std::string& key) {
  if (key == "runs" || key == "first_diverging_layer_call") return static_cast<double>(std::numeric_limits<int>::max());
  for (const char* k : {"numel", "mismatches", "first_mismatch", "nan_reference", "inf_reference", "nan_target",
                        "inf_target", "shape", "schema_version", "mpscheck_journal", "cases", "seed",
                        "peak_allocated_bytes", "driver_peak_bytes", "process_peak_bytes", "recommended_max_bytes"})
    if (key == k) return 9.2e18;  // just under 2^63
  return 0;
}

bool fits(const nlohmann::json& v, double limit) {
  if (!v.is_number_float()) return true;
  const double d = v.get<double>();
  return std::isfinite(d) && std::fabs(d) < limit;
}

std::string check(const nlohmann::json& j, int depth) {
  if (depth > 64) return {};
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (const double limit = integer_limit(it.key()); limit > 0) {
        if (!fits(it.value(), limit)) return it.key();
        if (it.value().is_array())
          for (const auto& e : it.value())
            if (!fits(e, limit)) return it.key();
      }
      if (it.value().is_structured())
        if (std::string bad = check(it.value(), depth + 1); !bad.empty()) return bad;
    }
  } else if (j.is_array()) {
    for (const auto& e : j)
      if (e.is_structured())
        if (std::string bad = check(e, depth + 1); !bad.empty()) return bad;
  }
  return {};
}
}  // namespace

std::string bad_integer_field(const nlohmann::json& j) { return check(j, 0); }

}  // namespace mpscheck

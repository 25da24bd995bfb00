#include "util/untrusted_json.hpp"

#include <cmath>

namespace mpscheck {

namespace {

bool fits(const nlohmann::json& v, double limit) {
  if (!v.is_number_float()) return true;
  const double d = v.get<double>();
  return std::isfinite(d) && std::fabs(d) < limit;
}

std::string check(const nlohmann::json& j, IntegerFieldLimit limit_of, int depth) {
  if (depth > 64) return {};
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (const double limit = limit_of(it.key()); limit > 0) {
        if (!fits(it.value(), limit)) return it.key();
        if (it.value().is_array())
          for (const auto& e : it.value())
            if (!fits(e, limit)) return it.key();
      }
      if (it.value().is_structured())
        if (std::string bad = check(it.value(), limit_of, depth + 1); !bad.empty()) return bad;
    }
  } else if (j.is_array()) {
    for (const auto& e : j)
      if (e.is_structured())
        if (std::string bad = check(e, limit_of, depth + 1); !bad.empty()) return bad;
  }
  return {};
}
}  // namespace

std::string bad_integer_field(const nlohmann::json& j, IntegerFieldLimit limit_of) { return check(j, limit_of, 0); }

}  // namespace mpscheck

#include "reports/escape.hpp"

#include <fmt/format.h>

#include <cmath>

namespace mpscheck {

std::string format_figure(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0) return "0";
  return fmt::format("{:.3g}", value);
}

std::string format_speedup(double speedup) {
  if (!std::isfinite(speedup) || speedup >= 0.1) return fmt::format("{:.2f}", speedup);
  return fmt::format("{:.2g}", speedup);
}

std::vector<std::string> id_parts(const std::string& id) {
  std::vector<std::string> p;
  for (std::size_t start = 0;;) {
    const std::size_t slash = id.find('/', start);
    p.push_back(id.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return p;
}

}  // namespace mpscheck

#include "core/explore_speed.hpp"

#include <algorithm>
#include <cmath>

namespace mpscheck {

std::optional<Cliff> find_cliff(const std::vector<std::int64_t>& sizes, const RatioAt& ratio_at, double factor) {
  std::optional<std::int64_t> prev_size;
  double prev_ratio = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const std::int64_t size = sizes[i];
    const std::optional<double> ratio = ratio_at(size);
    if (!ratio || !(*ratio > 0)) return std::nullopt;  // cannot be timed here: the search ends
    if (prev_size && *ratio >= factor * prev_ratio) {
      // Timed again on both sides of the jump: the fast side at its slowest, the slow at its fastest.
      const std::optional<double> fast_again = ratio_at(*prev_size), slow_again = ratio_at(size);
      if (!fast_again || !slow_again) return std::nullopt;
      Cliff c;
      c.last_fast = *prev_size;
      c.first_slow = size;
      c.fast_ratio = std::max(prev_ratio, *fast_again);
      c.slow_ratio = std::min(*ratio, *slow_again);
      // A cliff stays past its size: the next size up is slow too.
      bool stays = true;
      if (c.slow_ratio >= factor * c.fast_ratio && i + 1 < sizes.size()) {
        const std::optional<double> beyond = ratio_at(sizes[i + 1]);
        if (!beyond) return std::nullopt;
        stays = *beyond >= factor * c.fast_ratio;
      }
      if (stays && c.slow_ratio >= factor * c.fast_ratio) {
        const double middle = std::sqrt(c.fast_ratio * c.slow_ratio);
        c.bisected = true;
        while (c.first_slow - c.last_fast > 1) {
          const std::int64_t mid = c.last_fast + (c.first_slow - c.last_fast) / 2;
          const std::optional<double> r = ratio_at(mid);
          if (!r) {
            c.bisected = false;
            break;
          }
          if (*r >= middle) {
            c.first_slow = mid;
            c.slow_ratio = *r;
          } else {
            c.last_fast = mid;
            c.fast_ratio = *r;
          }
        }
        return c;
      }
    }
    prev_size = size;
    prev_ratio = *ratio;
  }
  return std::nullopt;
}

}  // namespace mpscheck

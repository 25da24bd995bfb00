// Explore's sizes and layouts (private to core/explore*.cpp): which declared sizes are one size
// group (varied together), the sizes tried for each, and the layouts tried for each input.
#pragma once

#include "core/case_variant.hpp"

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace mpscheck::explore_detail {

bool is_power_of_two(std::int64_t n);
bool is_prime(std::int64_t n);
std::int64_t next_prime(std::int64_t n);

// A dimension of one input that a size group sets: to `factor` x the group's size.
struct SizePlace {
  size_t input = 0, dim = 0;
  std::int64_t factor = 1;
};

// One declared size and every place it occurs: varied together, so operands that must agree (an
// inner dimension K, a batch) still do. A dimension tied to a multiple of it (SizeTie) follows it.
struct SizeGroup {
  std::int64_t declared = 0;
  std::vector<SizePlace> at;
  std::string name;  // "a[1]=b[0]"; a multiple as "h[1]=w_ih[0]/4"
};

// The groups of equal declared sizes, then each tied dimension moved into the group of the
// dimension it is tied to; a pinned dimension is in no group. A tie that names no input, no
// dimension or a size its declaration does not hold is ignored (that dimension is varied on its own).
std::vector<SizeGroup> size_groups(const std::vector<InputShape>& inputs);

// The sizes tried for a declared size d, in order: the edge cases first (1, 2, 3, its neighbours, the
// next prime, the powers of two around it and ±1, two seeded odd draws), then d grown by powers of two.
std::vector<std::int64_t> candidate_sizes(std::int64_t d, std::mt19937_64& rng);

// FNV-1a of a case id: its seed for the drawn sizes.
std::uint64_t fnv1a(const std::string& s);

// The layouts tried for input i, in order: its own at storage offsets 1, 2 and 3 (odd, even,
// odd), then transposed (2+ dimensions), channels_last (4) and contiguous, each at offset 0 and 1
// (channels_last at 2 too), skipping the layout it is declared in; last, a floating input beside
// other inputs as a 0-dim tensor on the CPU (a scalar operand of the device's op), unless a size tie
// names it (its shape is the op's contract). None for a 0-d or empty input.
std::vector<InputVariant> layout_candidates(const std::vector<InputShape>& inputs, size_t i);

}  // namespace mpscheck::explore_detail

// A case at other input sizes, as `mpscheck explore` makes it: the declared case's id, '@', then
// each input whose shape differs from the declared one, `op/linalg/mm/f32/contiguous/forward@a=1x10000,b=10000x1`.
// The id holds no regex metacharacter, so `--filter ID` selects exactly it in a later explore run;
// the host and every worker resolve it the same way, from the declared case.
#pragma once

#include "core/registry.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace mpscheck {

inline constexpr char kVariantMark = '@';

using Shape = std::vector<std::int64_t>;

struct VariantId {
  std::string base;  // the declared case's id
  std::vector<std::pair<std::string, Shape>> shapes;  // input name -> its shape, for the inputs that differ
};

struct BadVariantId : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// Nothing when `id` has no '@' (a declared case id); throws BadVariantId naming what is wrong.
std::optional<VariantId> parse_variant_id(const std::string& id);

// "24x40", "" for a 0-d shape.
std::string sizes_text(const Shape& shape);

// The id of `base` with its inputs (named as `declared` names them) at `shapes`; the declared id
// itself when every shape is the declared one.
std::string variant_id(const std::string& base, const std::vector<InputShape>& declared,
                       const std::vector<Shape>& shapes);

// Finds declared cases and makes variants on demand, keeping each variant it made (and its id) for
// its own lifetime.
class CaseResolver {
 public:
  explicit CaseResolver(const Registry& registry) : registry_(registry) {}

  // Nullptr when there is no such case; throws BadVariantId for a variant the declared case cannot
  // be made as (an unknown input name, a shape of the wrong rank, a case that cannot be varied).
  const RegisteredWorkload* find(const std::string& id);

 private:
  struct Made {
    std::unique_ptr<Workload> workload;
    RegisteredWorkload registered;
  };
  const Registry& registry_;
  std::map<std::string, Made> made_;
};

}  // namespace mpscheck

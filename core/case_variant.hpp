// A case at other input sizes and layouts, as `mpscheck explore` makes it: the declared case's id,
// '@', then each input that differs from its declaration, its shape then any layout and storage
// offset: `op/linalg/mm/f32/contiguous/forward@a=1x10000,b=10000x1`,
// `op/pool/avg_pool2d/f32/contiguous/forward@x=1x2x2x2+cl+off1`. Layouts: `+c` contiguous, `+t`
// the last two dimensions transposed in memory, `+cl` channels_last, `+cpu` a 0-dim tensor left
// on the CPU (no shape: `@a=+cpu`); `+offN` starts the input N elements into its storage. A state
// probe follows the inputs after '~' (the inputs may be absent): `BASE@~dirty` (run after the
// device's memory was dirtied), `BASE@~threads2` (run from 2 threads at once),
// `BASE@a=2048x16x32,b=2048x32x16~repeat20` (run 20 times, the process's memory measured;
// core/state_probe.hpp). The id holds no regex metacharacter, so `--filter ID` selects exactly it in
// a later explore run; the host and every worker resolve it the same way, from the declared case.
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
inline constexpr char kProbeMark = '~';

using Shape = std::vector<std::int64_t>;

struct VariantInput {
  std::string name;
  InputVariant input;  // its shape, layout and storage offset
};

// A state the case is run in other than a fresh worker's: `dirty`, `threadsN` (N from 2 to 8),
// `repeatN` (N from 2 to 1000).
struct StateProbe {
  enum class Kind { None, Dirty, Threads, Repeat };
  Kind kind = Kind::None;
  int count = 0;  // Threads: threads at once; Repeat: calls
  bool operator==(const StateProbe&) const = default;
};

struct VariantId {
  std::string base;                  // the declared case's id
  std::vector<VariantInput> inputs;  // the inputs that differ from their declaration
  StateProbe probe;                  // none unless the id ends in ~PROBE
};

struct BadVariantId : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// Nothing when `id` has no '@' (a declared case id); throws BadVariantId naming what is wrong.
std::optional<VariantId> parse_variant_id(const std::string& id);

// "dirty", "threads2", "repeat20"; "" for none.
std::string probe_text(const StateProbe& probe);
// `id` (a declared case or a variant) run under `probe`: "BASE@~dirty", "BASE@a=24x40~repeat20".
std::string with_probe(const std::string& id, const StateProbe& probe);
// The probe an id names (none for a declared case or a plain variant); throws BadVariantId.
StateProbe probe_of(const std::string& id);

// "24x40", "" for a 0-d shape.
std::string sizes_text(const Shape& shape);

// "+cl+off3", "" for the declared layout at offset 0.
std::string layout_text(InputLayout layout, std::int64_t storage_offset);
// "channels_last at storage offset 3", in words.
std::string layout_words(InputLayout layout, std::int64_t storage_offset, const std::string& declared);

// The id of `base` with its inputs (named as `declared` names them) at `shapes`; the declared id
// itself when every shape is the declared one.
std::string variant_id(const std::string& base, const std::vector<InputShape>& declared,
                       const std::vector<Shape>& shapes);
// The same with layouts and storage offsets: an input that differs in any of them is named.
std::string variant_id(const std::string& base, const std::vector<InputShape>& declared,
                       const std::vector<InputVariant>& inputs);

// Finds declared cases and makes variants on demand, keeping each variant it made (and its id) for
// its own lifetime.
class CaseResolver {
 public:
  explicit CaseResolver(const Registry& registry) : registry_(registry) {}

  // Nullptr when there is no such case; throws BadVariantId for a variant the declared case cannot
  // be made as (an unknown input name, a shape of the wrong rank, a case that cannot be varied).
  const RegisteredWorkload* find(const std::string& id);

 private:
  std::unique_ptr<Workload> made_at(const VariantId& v, const RegisteredWorkload& base, const std::string& id);
  struct Made {
    std::unique_ptr<Workload> workload;
    RegisteredWorkload registered;
  };
  const Registry& registry_;
  std::map<std::string, Made> made_;
};

}  // namespace mpscheck

// The attention families' case tables. Their inference and training cases need different sizes:
// the seed workloads infer at batch 1 but train on a batch, and a full-size training step may not
// fit a CPU case. model::ModelDef's build and batch are not told which mode they serve, so
// add_sized makes one def per mode from a row of a family's table.
#pragma once

#include <mpscheck/model.hpp>

#include <cstddef>
#include <functional>
#include <type_traits>

namespace mpscheck::attention {

// What one case runs: the network's config and the batch drawn for it.
template <class Config>
struct Size {
  Config config;
  int64_t batch;       // sequences or images per batch
  int64_t length = 0;  // tokens per sequence (text models)
};

// One model of a family: its name and the size of each kind of case. `train` is the architecture
// at a size whose steps fit a CPU case; `quick` serves both modes of a --quick run.
template <class Config>
struct Sizes {
  const char* name;
  Size<Config> infer, train, quick;
};

// Registers model/<name>/infer and /train for every row of a family's table: `common` gives tags,
// forward, loss, optimizer and steps; each case builds Net from its size's config and draws its
// batch with `batch`.
template <class Net, class Config, size_t N>
void add_sized(Catalog& catalog, const Sizes<Config> (&table)[N], const model::ModelDef<Net>& common,
               std::type_identity_t<std::function<model::Batch(const Size<Config>&, at::Generator&)>> batch) {
  for (const Sizes<Config>& sizes : table) {
    auto def = [&](const Size<Config>& full) {
      model::ModelDef<Net> d = common;
      d.name = sizes.name;
      d.build = [full, quick = sizes.quick](bool q) { return Net(q ? quick.config : full.config); };
      d.batch = [full, quick = sizes.quick, batch](bool q, at::Generator& gen) { return batch(q ? quick : full, gen); };
      return d;
    };
    model::add_model(catalog, def(sizes.infer), def(sizes.train));
  }
}

}  // namespace mpscheck::attention

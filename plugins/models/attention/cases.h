// Registering a model whose inference and training cases need different batches or configs.
// model::add_model takes one ModelDef for both, and ModelDef::build/batch are not told which mode
// they serve; the seed workloads infer at batch 1 but train on a batch, so we pass two defs.
#pragma once

#include <mpscheck/model.hpp>

#include <memory>
#include <utility>

namespace mpscheck::attention {

template <class Net>
void add_model(Catalog& catalog, model::ModelDef<Net> infer, model::ModelDef<Net> train) {
  TORCH_CHECK(infer.name == train.name, "infer and train definitions must share a name: ", infer.name, " vs ",
              train.name);
  catalog.add(std::make_unique<model::ModelWorkload<Net>>(std::move(infer), false));
  catalog.add(std::make_unique<model::ModelWorkload<Net>>(std::move(train), true));
}

}  // namespace mpscheck::attention

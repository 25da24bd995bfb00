// The size tables of the model families whose cases run at a size per mode (the transformers,
// the LSTM, the diffusion UNet): one row per model, its config and batch for each case, which
// the def's build and batch pick by the mode they are given.
#pragma once

#include <mpscheck/model.hpp>

namespace mpscheck::models {

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
  const Size<Config>& of(model::Mode mode) const { return model::pick(mode, infer, train, quick); }
};

}  // namespace mpscheck::models

// The attention and sequence model families (ViT, BERT, GPT-2, LSTM, diffusion UNet): every
// family file here adds its cases with MPSCHECK_CATALOG.
#include <mpscheck/plugin.hpp>

MPSCHECK_PLUGIN("models-attention", "0.1.0")

// The transformer families (ViT, BERT, GPT-2): every family file here adds its cases with
// MPSCHECK_CATALOG.
#include <mpscheck/plugin.hpp>

MPSCHECK_PLUGIN("models-transformers", "0.1.0")

// The multi-layer perceptron plugin: every family file here adds its cases with MPSCHECK_CATALOG.
#include <mpscheck/plugin.hpp>

MPSCHECK_PLUGIN("models-mlp", "0.1.0")

// The networks on MNIST's 28x28 digits (LeNet-5, the examples' MNIST net and VAE, the reports'
// MNIST CNN): every family file here adds its cases with MPSCHECK_CATALOG.
#include <mpscheck/plugin.hpp>

MPSCHECK_PLUGIN("models-mnist", "0.1.0")

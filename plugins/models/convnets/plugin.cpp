// The convolutional networks on larger images (the ImageNet classifiers, DCGAN, the diffusion
// UNet): every family file here adds its cases with MPSCHECK_CATALOG.
#include <mpscheck/plugin.hpp>

MPSCHECK_PLUGIN("models-convnets", "0.1.0")

// The vision model plugin: every family file here adds its cases with MPSCHECK_CATALOG.
#include <mpscheck/plugin.hpp>

MPSCHECK_PLUGIN("models-vision", "0.1.0")

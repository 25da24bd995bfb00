// The recurrent networks (the LSTM text classifier): every family file here adds its cases with
// MPSCHECK_CATALOG.
#include <mpscheck/plugin.hpp>

MPSCHECK_PLUGIN("models-recurrent", "0.1.0")

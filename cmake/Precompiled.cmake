# Precompiled headers. Much of a translation unit's compile time here is spent parsing the same
# third-party headers again: <torch/torch.h> alone takes a third to a half of a model plugin's TU.
# Each header set below is compiled once, by a small object library that owns it, and every target
# that compiles with the same flags reuses that result (REUSE_FROM). GCC accepts a precompiled
# header only when the code-generation flags match, so every target is compiled with -fPIC
# (mpscheck_settings), the static core and the executables too, and loadable modules, which hide
# their symbols, have sets of their own. Loading a set costs time in proportion to its size, so a
# target gets the smallest set that covers what its TUs include:
#   mpscheck_pch_host      ATen, fmt, nlohmann::json     the core library and the unit tests
#   mpscheck_pch_module    ATen                          op plugins, the sim device, fixtures
#   mpscheck_pch_frontend  <torch/torch.h> (torch::nn)   plugins made with FRONTEND: the models
# The integration tests and main.cpp include neither LibTorch nor much of the core, and get none.
# A set makes its headers visible to a TU that forgot to include them; -DMPSCHECK_PCH=OFF builds
# without them, and scripts/sanitize.sh does, so such a slip still fails a build.
option(MPSCHECK_PCH "Compile LibTorch's headers once and reuse them in every target" ON)

set(_mpscheck_pch_std <algorithm> <chrono> <cmath> <cstdint> <functional> <map> <memory> <optional> <string>
                      <utility> <vector>)

# _mpscheck_pch_owner(NAME [HIDDEN] HEADERS h... LINK t...): the object library that owns a set.
# Its only source is an empty file written at configure time.
function(_mpscheck_pch_owner name)
  cmake_parse_arguments(P "HIDDEN" "" "HEADERS;LINK" ${ARGN})
  set(_anchor ${CMAKE_BINARY_DIR}/pch/${name}.cpp)
  file(CONFIGURE OUTPUT ${_anchor} CONTENT "// Owns the precompiled header set ${name}; nothing else.\n")
  add_library(${name} OBJECT ${_anchor})
  target_link_libraries(${name} PRIVATE mpscheck_sdk mpscheck_settings ${P_LINK})
  target_precompile_headers(${name} PRIVATE ${P_HEADERS} ${_mpscheck_pch_std})
  if(P_HIDDEN)
    set_target_properties(${name} PROPERTIES CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  endif()
endfunction()

if(MPSCHECK_PCH)
  _mpscheck_pch_owner(mpscheck_pch_host HEADERS <ATen/ATen.h> <fmt/format.h> <nlohmann/json.hpp>
                      LINK mpscheck_fmt nlohmann_json::nlohmann_json)
  _mpscheck_pch_owner(mpscheck_pch_module HIDDEN HEADERS <ATen/ATen.h>)
  _mpscheck_pch_owner(mpscheck_pch_frontend HIDDEN HEADERS <torch/torch.h>)
endif()

# mpscheck_use_pch(TARGET HOST|MODULE|FRONTEND): compile TARGET against that set.
function(mpscheck_use_pch target kind)
  if(NOT MPSCHECK_PCH)
    return()
  endif()
  if(NOT kind MATCHES "^(HOST|MODULE|FRONTEND)$")
    message(FATAL_ERROR "mpscheck_use_pch(${target} ${kind}): the set is HOST, MODULE or FRONTEND")
  endif()
  string(TOLOWER ${kind} _set)
  target_precompile_headers(${target} REUSE_FROM mpscheck_pch_${_set})
endfunction()

# mpscheck_find_torch(): find LibTorch. An explicit Torch_DIR or CMAKE_PREFIX_PATH wins; otherwise
# the LibTorch inside the pip wheel of `python3` (torch.utils.cmake_prefix_path), the one Mac users
# have through pip or Homebrew's pytorch; a system-wide LibTorch is the last resort.
macro(mpscheck_find_torch)
  if(NOT Torch_DIR AND NOT CMAKE_PREFIX_PATH AND NOT DEFINED ENV{CMAKE_PREFIX_PATH})
    find_program(MPSCHECK_PYTHON NAMES python3 python)
    if(MPSCHECK_PYTHON)
      execute_process(COMMAND ${MPSCHECK_PYTHON} -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
                      OUTPUT_VARIABLE _mpscheck_torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE
                      RESULT_VARIABLE _mpscheck_torch_rc ERROR_QUIET)
      if(_mpscheck_torch_rc EQUAL 0 AND _mpscheck_torch_prefix)
        message(STATUS "LibTorch from the torch wheel of ${MPSCHECK_PYTHON}: ${_mpscheck_torch_prefix}")
        list(APPEND CMAKE_PREFIX_PATH "${_mpscheck_torch_prefix}")
      endif()
    endif()
  endif()
  find_package(Torch QUIET)
  if(NOT Torch_FOUND)
    message(FATAL_ERROR "LibTorch not found. Install it with `scripts/install-deps.sh` (pip install torch==2.13.0), "
                        "or point CMake at one: -DCMAKE_PREFIX_PATH=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)') "
                        "or -DTorch_DIR=<libtorch>/share/cmake/Torch")
  endif()
  if(Torch_VERSION VERSION_LESS 2.1)
    message(FATAL_ERROR "LibTorch ${Torch_VERSION} (${Torch_DIR}) is too old: mpscheck needs LibTorch 2.1 or newer "
                        "and is tested on 2.13; pip install torch==2.13.0, or point CMAKE_PREFIX_PATH at a newer LibTorch")
  endif()
  message(STATUS "LibTorch ${Torch_VERSION}: ${Torch_DIR}")
endmacro()

# mpscheck_find_torch(): find LibTorch. An explicit Torch_DIR or CMAKE_PREFIX_PATH wins; otherwise
# the LibTorch inside the pip wheel of `python3` (torch.utils.cmake_prefix_path), the one Mac users
# have through pip or Homebrew's pytorch; a system-wide LibTorch is the last resort.
#
# One LibTorch, whole: TorchConfig.cmake finds its Caffe2 package and its c10/torch libraries with
# find_package(... PATHS <its own folder>) and find_library(... PATHS <its lib>), and CMake searches
# the system prefixes before such PATHS. With Debian's libtorch-dev (1.13) installed, the wheel's
# Torch 2.13 then took Caffe2 and libc10.so from /usr/lib and a binary linked both, which dies in
# the dynamic loader or later (SIGBUS). So the system prefixes are left out while LibTorch's own
# files are found, and results cached from such a search are dropped.
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
  mpscheck_find_whole_torch()
  if(NOT Torch_FOUND)
    message(FATAL_ERROR "LibTorch not found. Install it with `scripts/install-deps.sh` (pip install torch==2.13.0), "
                        "or point CMake at one: -DCMAKE_PREFIX_PATH=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)') "
                        "or -DTorch_DIR=<libtorch>/share/cmake/Torch")
  endif()
  if(Torch_VERSION VERSION_LESS 2.1)
    message(FATAL_ERROR "LibTorch ${Torch_VERSION} (${Torch_DIR}) is too old: mpscheck needs LibTorch 2.1 or newer "
                        "and is tested on 2.13; pip install torch==2.13.0, or point CMAKE_PREFIX_PATH at a newer LibTorch")
  endif()
  message(STATUS "LibTorch ${Torch_VERSION}: ${Torch_DIR} (libraries in ${MPSCHECK_TORCH_LIBRARY_DIR})")
endmacro()

# find_package(Torch) with every library of it from the one install it found. Sets
# MPSCHECK_TORCH_LIBRARY_DIR (the folder of its libc10) and, if the libraries are not all from that
# install, stops with one line.
macro(mpscheck_find_whole_torch)
  # A Torch_DIR cached by an earlier configure names the install; what an earlier search cached
  # from elsewhere (a system libc10.so, a system Caffe2) is forgotten.
  if(Torch_DIR AND EXISTS "${Torch_DIR}/TorchConfig.cmake")
    get_filename_component(_mpscheck_torch_root "${Torch_DIR}/../../.." ABSOLUTE)
    foreach(_mpscheck_var c10_LIBRARY TORCH_LIBRARY Caffe2_DIR)
      if(DEFINED CACHE{${_mpscheck_var}})
        file(RELATIVE_PATH _mpscheck_rel "${_mpscheck_torch_root}" "$CACHE{${_mpscheck_var}}")
        if(_mpscheck_rel MATCHES "^\\.\\./")
          message(STATUS "LibTorch: forgetting ${_mpscheck_var}=$CACHE{${_mpscheck_var}}, "
                         "not part of ${_mpscheck_torch_root}")
          unset(${_mpscheck_var} CACHE)
        endif()
      endif()
    endforeach()
  endif()
  set(_mpscheck_saved_system_path ${CMAKE_FIND_USE_CMAKE_SYSTEM_PATH})
  set(_mpscheck_saved_environment_path ${CMAKE_FIND_USE_SYSTEM_ENVIRONMENT_PATH})
  set(CMAKE_FIND_USE_CMAKE_SYSTEM_PATH FALSE)
  set(CMAKE_FIND_USE_SYSTEM_ENVIRONMENT_PATH FALSE)
  find_package(Torch QUIET)
  set(CMAKE_FIND_USE_CMAKE_SYSTEM_PATH ${_mpscheck_saved_system_path})
  set(CMAKE_FIND_USE_SYSTEM_ENVIRONMENT_PATH ${_mpscheck_saved_environment_path})
  # The last resort: a LibTorch installed system-wide (whose Caffe2 and libc10 are then the system's too).
  if(NOT Torch_FOUND)
    find_package(Torch QUIET)
  endif()
  if(Torch_FOUND)
    get_filename_component(_mpscheck_torch_root "${Torch_DIR}/../../.." ABSOLUTE)
    get_filename_component(MPSCHECK_TORCH_LIBRARY_DIR "${c10_LIBRARY}" DIRECTORY)
    set(_mpscheck_rel "../none")  # no libc10 found at all
    set(_mpscheck_rel_caffe2 "")
    if(IS_ABSOLUTE "${c10_LIBRARY}")
      file(RELATIVE_PATH _mpscheck_rel "${_mpscheck_torch_root}" "${c10_LIBRARY}")
    endif()
    if(IS_ABSOLUTE "${Caffe2_DIR}")
      file(RELATIVE_PATH _mpscheck_rel_caffe2 "${_mpscheck_torch_root}" "${Caffe2_DIR}")
    endif()
    if(NOT c10_LIBRARY OR _mpscheck_rel MATCHES "^\\.\\./" OR _mpscheck_rel_caffe2 MATCHES "^\\.\\./")
      message(FATAL_ERROR " mpscheck: LibTorch ${Torch_VERSION} at ${_mpscheck_torch_root} came with c10 "
                          "${c10_LIBRARY} and Caffe2 ${Caffe2_DIR} from another install; a binary linking both dies "
                          "when it loads. Point Torch_DIR at one complete LibTorch.")
    endif()
  endif()
endmacro()

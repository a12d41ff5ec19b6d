# Decides STRATA_WITH_CUDA from STRATA_CUDA (AUTO, ON, OFF) and, with it, enables the CUDA
# language for Hopper: sm_90a machine code (wgmma and setmaxnreg are sm_90a-only) and sm_90, so
# that the binary runs on any compute capability 9.0 part.
set(STRATA_WITH_CUDA OFF)
if(NOT STRATA_CUDA MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "STRATA_CUDA=${STRATA_CUDA}: expected AUTO, ON or OFF")
endif()
if(NOT STRATA_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(STRATA_WITH_CUDA ON)
  elseif(STRATA_CUDA STREQUAL "ON")
    message(FATAL_ERROR "STRATA_CUDA=ON, but no CUDA compiler (nvcc) was found")
  endif()
endif()
if(STRATA_WITH_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90a-real 90)
  endif()
  enable_language(CUDA)
  # Packages found in /usr/include (fmt) would otherwise reach nvcc as -isystem=/usr/include,
  # which breaks the C++ library's #include_next <math.h>.
  list(APPEND CMAKE_CUDA_IMPLICIT_INCLUDE_DIRECTORIES /usr/include)
  # CMake 3.25 knows no C++20 dialect flag for nvcc (12.0 added it); the targets ask for C++20.
  if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
  find_package(CUDAToolkit REQUIRED)
  message(STATUS "Strata: CUDA backend on (${CMAKE_CUDA_COMPILER}, architectures ${CMAKE_CUDA_ARCHITECTURES})")
else()
  message(STATUS "Strata: CUDA backend off (the stub in src/no_cuda refuses --device cuda)")
endif()

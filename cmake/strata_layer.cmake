# One static library per layer of DESIGN.md §1. Sources are the *.cpp files of the folder and its
# subfolders (cpu/kernels/), and the *.cu files, which only src/cuda/ has:
#   *_test.cpp  -> the layer's GoogleTest binary (strata_<layer>_tests), registered with CTest
#   *_avx2.cpp  -> compiled with AVX2/FMA/F16C; callers select them at run time (cpu_features.h)
#   *_avx512.cpp -> compiled with AVX-512 (F, BW, VL) and VNNI besides; selected the same way
# Layers name only the layers below them in DEPENDS, so an upward include fails to link.
function(strata_layer name)
  cmake_parse_arguments(ARG "" "" "DEPENDS;PRIVATE_DEPENDS" ${ARGN})
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp
       ${CMAKE_CURRENT_SOURCE_DIR}/*.cu)
  file(GLOB_RECURSE tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_test.cpp)
  if(tests)
    list(REMOVE_ITEM sources ${tests})
  endif()
  if(NOT sources)  # a layer still being written: headers only
    add_library(strata_${name} INTERFACE)
    target_include_directories(strata_${name} INTERFACE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
    target_link_libraries(strata_${name} INTERFACE ${ARG_DEPENDS})
    return()
  endif()
  add_library(strata_${name} STATIC ${sources})
  target_include_directories(strata_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(strata_${name} PUBLIC ${ARG_DEPENDS} PRIVATE ${ARG_PRIVATE_DEPENDS})
  foreach(source ${sources})
    if(source MATCHES "_avx2\\.cpp$")
      set_source_files_properties(${source} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c;-mbmi2")
    elseif(source MATCHES "_avx512\\.cpp$")
      # GCC 12's AVX-512 intrinsics start from self-initialised "undefined" registers, which
      # -W(maybe-)uninitialized reports at every use (GCC bug 105593, fixed in GCC 13).
      set_source_files_properties(${source} PROPERTIES COMPILE_OPTIONS
        "-mavx2;-mfma;-mf16c;-mbmi2;-mavx512f;-mavx512bw;-mavx512vl;-mavx512vnni;-Wno-maybe-uninitialized;-Wno-uninitialized")
    endif()
  endforeach()
  if(tests AND STRATA_BUILD_TESTS)
    add_executable(strata_${name}_tests ${tests})
    target_link_libraries(strata_${name}_tests PRIVATE strata_${name} GTest::gtest GTest::gtest_main)
    target_compile_definitions(strata_${name}_tests PRIVATE STRATA_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
    add_test(NAME ${name} COMMAND strata_${name}_tests)
  endif()
endfunction()

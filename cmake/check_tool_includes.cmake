# Fails naming every `#include "..."` in TOOLS_DIR's sources that is neither a public header
# (those are included as <strata/...>) nor matched by ALLOWED, a regex alternation
# (src/tools/CMakeLists.txt lists the headers tools may include, and why).
file(GLOB sources ${TOOLS_DIR}/*.cpp ${TOOLS_DIR}/*.h)
set(offending "")
foreach(source ${sources})
  file(STRINGS ${source} includes REGEX "^#include \"")
  foreach(line ${includes})
    string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" header "${line}")
    if(NOT header MATCHES "^(${ALLOWED})$")
      get_filename_component(name ${source} NAME)
      list(APPEND offending "${name}: ${header}")
    endif()
  endforeach()
endforeach()
if(offending)
  list(JOIN offending "\n  " text)
  message(FATAL_ERROR "tools include internal headers src/tools/CMakeLists.txt does not allow:\n  ${text}")
endif()

// What this binary is, for `strata --version` and bug reports.
#pragma once

#include <string>

namespace strata {

// One line: "strata <commit>, <build type> build, <SIMD kernels> kernels, CUDA: <state>", e.g.
// "strata 8bee5b0a1b2c, Release build, avx2+avx512vnni kernels, CUDA: not built". The commit
// is `git describe` of the tree it was built from ("-dirty" with uncommitted changes); the
// kernels are those this CPU runs (STRATA_SIMD may restrict them).
std::string version_line();

}  // namespace strata

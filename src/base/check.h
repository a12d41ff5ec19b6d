// STRATA_CHECK: aborts with file, line and the failed condition when one of our own invariants
// breaks. Never used for user input (that is a Status, include/strata/status.h).
#pragma once

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

namespace strata::detail {
[[noreturn]] inline void check_failed(const char* file, int line, const char* condition,
                                      const std::string& detail) {
  std::fprintf(stderr, "%s:%d: CHECK failed: %s %s\n", file, line, condition, detail.c_str());
  std::abort();
}
}  // namespace strata::detail

#define STRATA_CHECK(condition)                                                           \
  do {                                                                                    \
    if (!(condition)) ::strata::detail::check_failed(__FILE__, __LINE__, #condition, ""); \
  } while (0)

#define STRATA_CHECK_OP(a, op, b)                                                      \
  do {                                                                                 \
    const auto& strata_a_ = (a);                                                       \
    const auto& strata_b_ = (b);                                                       \
    if (!(strata_a_ op strata_b_))                                                     \
      ::strata::detail::check_failed(__FILE__, __LINE__, #a " " #op " " #b,            \
                                     fmt::format("({} vs {})", strata_a_, strata_b_)); \
  } while (0)

#define STRATA_CHECK_EQ(a, b) STRATA_CHECK_OP(a, ==, b)
#define STRATA_CHECK_LE(a, b) STRATA_CHECK_OP(a, <=, b)
#define STRATA_CHECK_LT(a, b) STRATA_CHECK_OP(a, <, b)

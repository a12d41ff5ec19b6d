// Checks for flags. CLI11's NonNegativeNumber and PositiveNumber report a bad value against an
// upper bound printed as a 309-digit double; these say what is wanted.
#pragma once

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cmath>
#include <string>

namespace strata::tools {

// A whole number no smaller than `minimum`: "--io-depth: must be a whole number, 0 or more
// (got '-1')".
inline CLI::Validator at_least(long long minimum) {
  return CLI::Validator(
      [minimum](std::string& text) -> std::string {
        long long value = 0;
        if (!CLI::detail::lexical_cast(text, value) || value < minimum)
          return fmt::format("must be a whole number, {} or more (got '{}')", minimum, text);
        return std::string();
      },
      fmt::format("INT>={}", minimum));
}

// A finite number that `accept` takes: "--top-p: must be a number in (0, 1] (got 'nan')". NaN
// or a negative temperature would otherwise sample silent garbage.
inline CLI::Validator real_number(const std::string& wanted, bool (*accept)(double)) {
  return CLI::Validator(
      [wanted, accept](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value) || !std::isfinite(value) || !accept(value))
          return fmt::format("must be a number {} (got '{}')", wanted, text);
        return std::string();
      },
      "FLOAT");
}

}  // namespace strata::tools

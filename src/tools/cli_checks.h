// Checks for flags. CLI11's NonNegativeNumber and PositiveNumber report a bad value against an
// upper bound printed as a 309-digit double; these say what is wanted.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "cpu/thread_pool.h"
#include "experts/replacement_policy.h"

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

// A whole number in [minimum, maximum]: "--threads: must be a whole number from 0 to 512 (got
// '100000')". For counts that size something (threads, queues) and would fail, or wrap, far out.
inline CLI::Validator whole_number_from(long long minimum, long long maximum) {
  return CLI::Validator(
      [minimum, maximum](std::string& text) -> std::string {
        long long value = 0;
        if (!CLI::detail::lexical_cast(text, value) || value < minimum || value > maximum)
          return fmt::format("must be a whole number from {} to {} (got '{}')", minimum, maximum,
                             text);
        return std::string();
      },
      fmt::format("INT in [{}, {}]", minimum, maximum));
}

// -t/--threads of every command: 0 (one per core) up to the thread pool's limit.
inline CLI::Validator compute_threads() { return whole_number_from(0, ThreadPool::kMaxThreads); }

// An expert arena replacement policy (experts/replacement_policy.h), checked whether or not
// experts stream, so that a typo is said at once: "--cache-policy: unknown replacement policy
// 'lifo' (known: lru, ...)".
inline CLI::Validator replacement_policy() {
  return CLI::Validator(
      [](std::string& name) -> std::string {
        const std::vector<std::string_view> known = policy_names();
        if (std::find(known.begin(), known.end(), name) != known.end()) return std::string();
        return fmt::format("unknown replacement policy '{}' (known: {})", name,
                           fmt::join(known, ", "));
      },
      "POLICY");
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

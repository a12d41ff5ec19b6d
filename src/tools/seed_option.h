// Seed flags (--seed of run, chat, trace, make-model and make-suite; --bootstrap-seed): a whole
// number from 0 to 2^64 - 1, or -1 for a random seed, which is said on stderr ("seed: 1234567")
// so that the run can be repeated, as llama.cpp does. Other negative numbers and numbers past
// 2^64 - 1 are refused (CLI11 alone wrapped them around).
#pragma once

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <charconv>
#include <cstdint>
#include <random>
#include <string>

#include "tools/command.h"

namespace strata::tools {

inline bool parse_seed(const std::string& text, uint64_t& seed) {
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, seed);
  return error == std::errc() && stop == end && !text.empty();
}

// `label` names the seed in the line said for a random one ("seed", "bootstrap seed").
inline CLI::Option* add_seed_option(CLI::App* command, const std::string& names, uint64_t& seed,
                                    const std::string& label, const std::string& description) {
  return command
      ->add_option_function<std::string>(
          names,
          [&seed, label](const std::string& text) {
            if (text != "-1") {
              parse_seed(text, seed);  // the check below accepted it
              return;
            }
            std::random_device device;
            seed = uint64_t(device()) << 32 | device();
            say_after_parsing(fmt::format("{}: {}", label, seed));
          },
          description + " (-1: a random one, printed)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            uint64_t value = 0;
            if (text == "-1" || parse_seed(text, value)) return std::string();
            return fmt::format(
                "must be a whole number from 0 to {}, or -1 for a random seed "
                "(got '{}')",
                UINT64_MAX, text);
          },
          "SEED"));
}

}  // namespace strata::tools

// --help as llama.cpp's users read it: an option's default closes its description,
// "(default: 0.8)", and its value is named by its type alone ("INT", "FILE"), not by the
// validators' wording ("INT:INT>=0").
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <string>

namespace strata::tools {

class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_opts(const CLI::Option* option) const override {
    std::string text;
    if (option->get_type_size() != 0) {
      text += " " + value_name(option->get_type_name());
      if (option->get_expected_max() == CLI::detail::expected_max_vector_size) text += " ...";
      if (option->get_required()) text += " REQUIRED";
    }
    if (!option->get_excludes().empty()) {
      text += " Excludes:";
      for (const CLI::Option* other : option->get_excludes()) text += " " + other->get_name();
    }
    return text;
  }

  std::string make_option_desc(const CLI::Option* option) const override {
    const std::string& shown = option->get_default_str();
    if (option->get_type_size() == 0 || shown.empty()) return option->get_description();
    return option->get_description() + " (default: " + shown + ")";
  }

 private:
  // "INT:INT>=0" -> "INT"; "TEXT:FILE" -> "FILE": a validator named by one word in capitals says
  // what the value is, others say what it must be, which the description and the error tell.
  static std::string value_name(const std::string& type_name) {
    const size_t colon = type_name.find(':');
    if (colon == std::string::npos) return type_name;
    const std::string checked = type_name.substr(colon + 1);
    const bool one_word =
        !checked.empty() && std::all_of(checked.begin(), checked.end(), [](char c) {
          return std::isupper(static_cast<unsigned char>(c)) != 0;
        });
    return one_word ? checked : type_name.substr(0, colon);
  }
};

}  // namespace strata::tools

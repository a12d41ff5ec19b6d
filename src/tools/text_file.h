// Reading a text the user names (a prompt, a document to trace or fit on) whole.
#pragma once

#include <strata/status.h>

#include <fstream>
#include <iterator>
#include <string>

namespace strata::tools {

inline Result<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::errorf("{}: cannot open", path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace strata::tools

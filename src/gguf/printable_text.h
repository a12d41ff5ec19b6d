// File-supplied text made safe for one-line error messages (gguf_file.cpp, gguf_split.cpp).
#pragma once

#include <string>
#include <string_view>

namespace strata::gguf {

// Control bytes, quotes, backslashes and (unless `keep_utf8`) non-ASCII bytes become \xNN, and
// long strings are cut.
std::string printable(std::string_view text, bool keep_utf8 = false);

}  // namespace strata::gguf

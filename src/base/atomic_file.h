// Files appear complete or not at all: written to "<path>.tmp-<pid>", then renamed over
// `path`, so a crash or a full disk never leaves half a file where a reader expects one, and
// a failure or an interruption leaves no temporary either (temporary_path.h).
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace strata {

Status write_file_atomically(const std::string& path, std::span<const uint8_t> bytes);
Status write_file_atomically(const std::string& path, std::string_view contents);

}  // namespace strata

// Files the tools write appear complete or not at all: written to "<path>.tmp-<pid>", then
// renamed over `path`.
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <span>
#include <string>

namespace strata::tools {

Status write_file_atomically(const std::string& path, std::span<const uint8_t> bytes);

}  // namespace strata::tools

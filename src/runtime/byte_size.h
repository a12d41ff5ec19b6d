// Byte counts as people write them: parse "512M", "4G", "4GiB", "1.5G" (binary units, as
// memory budgets are), print 1.5 GiB.
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace strata {

Result<uint64_t> parse_byte_size(std::string_view text);
std::string format_bytes(uint64_t bytes);

}  // namespace strata

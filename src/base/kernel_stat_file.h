// Reading one number from the kernel's statistics files: /proc/meminfo and /proc/self/status
// ("MemAvailable:   123 kB") and a cgroup's memory.stat ("inactive_file 123").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace strata {

// The number after `key` (with or without its colon) on the line it starts, in the units the
// file uses; nullopt where the file, the line or the number is missing.
std::optional<uint64_t> kernel_stat_field(const std::string& path, std::string_view key);

}  // namespace strata

#include "base/kernel_stat_file.h"

#include <algorithm>
#include <charconv>

#include "base/whole_file.h"

namespace strata {

std::optional<uint64_t> kernel_stat_field(const std::string& path, std::string_view key) {
  const Result<std::string> text = read_whole_file(path);
  if (!text.ok()) return std::nullopt;
  std::string_view rest = *text;
  while (!rest.empty()) {
    const size_t end = std::min(rest.find('\n'), rest.size());
    std::string_view line = rest.substr(0, end);
    rest.remove_prefix(std::min(end + 1, rest.size()));
    if (!line.starts_with(key)) continue;
    line.remove_prefix(key.size());
    if (line.starts_with(':')) line.remove_prefix(1);
    if (line.empty() || (line[0] != ' ' && line[0] != '\t')) continue;  // a longer key
    const size_t digits = line.find_first_not_of(" \t");
    if (digits == std::string_view::npos) return std::nullopt;
    uint64_t value = 0;
    const auto [after, error] =
        std::from_chars(line.data() + digits, line.data() + line.size(), value);
    if (error != std::errc() || after == line.data() + digits) return std::nullopt;
    return value;
  }
  return std::nullopt;
}

}  // namespace strata

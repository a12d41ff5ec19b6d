#include "runtime/byte_size.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>

namespace strata {

Result<uint64_t> parse_byte_size(std::string_view text) {
  const auto invalid = [&] {
    return Status::errorf("invalid size '{}' (expected e.g. 512M, 4G, 4GiB, 1.5G)", text);
  };
  size_t digits = 0;
  while (digits < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.'))
    ++digits;
  if (digits == 0) return invalid();
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + digits, value);
  if (error != std::errc() || end != text.data() + digits) return invalid();
  std::string unit;
  for (char c : text.substr(digits)) unit += char(std::toupper(static_cast<unsigned char>(c)));
  double scale;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "K" || unit == "KB" || unit == "KIB")
    scale = 1024.0;
  else if (unit == "M" || unit == "MB" || unit == "MIB")
    scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "GB" || unit == "GIB")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "TB" || unit == "TIB")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else
    return invalid();
  const double bytes = value * scale;
  if (!std::isfinite(bytes) || bytes >= 1.8e19) return invalid();
  return uint64_t(std::llround(bytes));
}

std::string format_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = double(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.2f} {}", value, units[unit]);
}

}  // namespace strata

#include "runtime/cgroup_memory.h"

#include <algorithm>
#include <charconv>
#include <sstream>
#include <string_view>
#include <vector>

#include "base/kernel_stat_file.h"
#include "base/whole_file.h"

namespace strata {
namespace {

// Where a hierarchy is mounted, and which of its cgroups the mount's root is.
struct Mount {
  std::string root;
  std::string point;
};

// The kernel writes a space in a mount point as \040 (and tab, newline, backslash likewise).
std::string unescape_octal(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 3 < text.size() &&
        std::all_of(text.begin() + i + 1, text.begin() + i + 4,
                    [](char c) { return c >= '0' && c <= '7'; })) {
      out += char((text[i + 1] - '0') * 64 + (text[i + 2] - '0') * 8 + (text[i + 3] - '0'));
      i += 3;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, separator);) parts.push_back(part);
  return parts;
}

// The mount of the v2 hierarchy (v1 false) or of v1's memory controller (v1 true).
std::optional<Mount> find_mount(const std::string& mountinfo, bool v1) {
  for (const std::string& line : split(mountinfo, '\n')) {
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    const std::vector<std::string> before = split(line.substr(0, dash), ' ');
    const std::vector<std::string> after = split(line.substr(dash + 3), ' ');
    if (before.size() < 5 || after.size() < 3) continue;
    const std::vector<std::string> options = split(after[2], ',');
    const bool wanted = v1 ? after[0] == "cgroup" && std::find(options.begin(), options.end(),
                                                               "memory") != options.end()
                           : after[0] == "cgroup2";
    if (wanted) return Mount{unescape_octal(before[3]), unescape_octal(before[4])};
  }
  return std::nullopt;
}

// This process's cgroup in the v2 hierarchy (v1 false) or in v1's memory hierarchy.
std::optional<std::string> find_cgroup(const std::string& self_cgroup, bool v1) {
  for (const std::string& line : split(self_cgroup, '\n')) {
    const size_t first = line.find(':');
    const size_t second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::vector<std::string> names = split(controllers, ',');
    const bool wanted = v1 ? std::find(names.begin(), names.end(), "memory") != names.end()
                           : line.substr(0, first) == "0" && controllers.empty();
    if (wanted) return line.substr(second + 1);
  }
  return std::nullopt;
}

std::optional<uint64_t> read_number(const std::string& path) {
  const Result<std::string> text = read_whole_file(path);
  if (!text.ok()) return std::nullopt;
  uint64_t value = 0;
  const char* end = text->data() + text->size();
  const auto [rest, error] = std::from_chars(text->data(), end, value);
  if (error != std::errc() || rest == text->data()) return std::nullopt;
  return value;
}

// One cgroup's headroom: nullopt where it has no limit or its files cannot be read.
std::optional<uint64_t> headroom_of(const std::string& dir, bool v1) {
  // cgroup v1 writes "no limit" as the largest page-aligned signed 64-bit number.
  constexpr uint64_t kUnlimitedFrom = uint64_t(1) << 60;
  const std::optional<uint64_t> limit =
      read_number(dir + (v1 ? "/memory.limit_in_bytes" : "/memory.max"));  // v2 "max": none
  const std::optional<uint64_t> usage =
      read_number(dir + (v1 ? "/memory.usage_in_bytes" : "/memory.current"));
  if (!limit || *limit >= kUnlimitedFrom || !usage) return std::nullopt;
  const std::string stat = dir + "/memory.stat";
  uint64_t inactive =
      kernel_stat_field(stat, v1 ? "total_inactive_file" : "inactive_file").value_or(0);
  if (v1 && inactive == 0) inactive = kernel_stat_field(stat, "inactive_file").value_or(0);
  const uint64_t working_set = *usage - std::min(*usage, inactive);
  return *limit > working_set ? *limit - working_set : 0;
}

std::optional<uint64_t> hierarchy_headroom(const std::string& self_cgroup,
                                           const std::string& mountinfo, bool v1) {
  const std::optional<Mount> mount = find_mount(mountinfo, v1);
  const std::optional<std::string> cgroup = find_cgroup(self_cgroup, v1);
  if (!mount || !cgroup) return std::nullopt;
  // The cgroup path is from the hierarchy's root; the mount shows it from `mount->root` down.
  std::string relative;
  if (mount->root == "/")
    relative = *cgroup;
  else if (cgroup->rfind(mount->root, 0) == 0)
    relative = cgroup->substr(mount->root.size());
  std::optional<uint64_t> smallest;
  for (std::string path = relative;;) {
    while (!path.empty() && path.back() == '/') path.pop_back();
    if (const auto headroom = headroom_of(mount->point + path, v1))
      smallest = std::min(smallest.value_or(*headroom), *headroom);
    if (path.empty()) break;
    path.erase(path.rfind('/') == std::string::npos ? 0 : path.rfind('/'));
  }
  return smallest;
}

}  // namespace

std::optional<uint64_t> cgroup_memory_headroom(const std::string& self_cgroup,
                                               const std::string& mountinfo) {
  const std::optional<uint64_t> v1 = hierarchy_headroom(self_cgroup, mountinfo, true);
  const std::optional<uint64_t> v2 = hierarchy_headroom(self_cgroup, mountinfo, false);
  if (v1 && v2) return std::min(*v1, *v2);
  return v1 ? v1 : v2;
}

std::optional<uint64_t> cgroup_memory_headroom() {
  const Result<std::string> self_cgroup = read_whole_file("/proc/self/cgroup");
  const Result<std::string> mountinfo = read_whole_file("/proc/self/mountinfo");
  if (!self_cgroup.ok() || !mountinfo.ok()) return std::nullopt;
  return cgroup_memory_headroom(*self_cgroup, *mountinfo);
}

}  // namespace strata

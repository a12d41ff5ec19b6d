// How much more memory this process's control groups let it use. MemAvailable describes the
// whole machine; in a container, or under a cap set from outside, the cgroup's limit is what the
// kernel enforces, by killing the process, so `--mem auto` must see it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace strata {

// The smallest headroom, limit less working set (usage less the inactive file pages the kernel
// reclaims before it kills), over this process's memory cgroup and its ancestors, in cgroup v1
// and v2 hierarchies alike; nullopt where none of them has a limit that can be read.
// `self_cgroup` and `mountinfo` are the texts of /proc/self/cgroup and /proc/self/mountinfo;
// the limits are read from the mount points the latter names.
std::optional<uint64_t> cgroup_memory_headroom(const std::string& self_cgroup,
                                               const std::string& mountinfo);

// The same for this process.
std::optional<uint64_t> cgroup_memory_headroom();

}  // namespace strata

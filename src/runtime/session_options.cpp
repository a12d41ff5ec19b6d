#include <strata/session_options.h>

#include <fmt/format.h>

#include <charconv>

#include "runtime/byte_size.h"
#include "runtime/memory_plan.h"

namespace strata {

SessionOptions without_plan_notes(SessionOptions options) {
  if (options.on_note)
    options.on_note = [note = std::move(options.on_note)](NoteKind kind, std::string_view line) {
      if (kind != NoteKind::kPlan) note(kind, line);
    };
  options.show_progress = false;
  return options;
}

bool streams_experts(const SessionOptions& options) {
  return options.memory_budget > 0 || options.arena_share > 0 || options.gpu_memory_budget > 0;
}

Result<int> parse_cpu_experts(std::string_view text) {
  if (text == "auto") return SessionOptions::kCpuExpertsAuto;
  if (text == "off") return 0;
  int count = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), count);
  if (error != std::errc() || end != text.data() + text.size() || count < 1)
    return Status::errorf("--cpu-experts {}: expected auto, off or a count of 1 or more", text);
  return count;
}

Result<uint64_t> parse_readahead_budget(std::string_view text) {
  if (text == "0") return uint64_t(0);
  Result<uint64_t> bytes = parse_byte_size(text);
  if (!bytes.ok()) return bytes.status().with_prefix("--readahead-budget");
  return bytes;
}

Result<MemoryBudget> parse_memory_budget(std::string_view text) {
  if (text == "auto") {
    const std::optional<AvailableMemory> available = available_memory();
    if (!available)
      return Status::error(
          "--mem auto: cannot read MemAvailable from /proc/meminfo nor a cgroup memory limit");
    return MemoryBudget{available->bytes / 10 * 8,  // 80 %: room for everyone else
                        fmt::format("--mem auto: 80 % of {} {}", format_bytes(available->bytes),
                                    available->source)};
  }
  // A share is what --arena takes (an arena holding that share of the experts); a budget of the
  // whole process as a share of something would leave unsaid of what.
  if (text.ends_with('%'))
    return Status::errorf(
        "--mem {}: a memory budget is a size (512M, 4G) or auto; for an expert arena holding {} of "
        "the experts use --arena {}",
        text, text, text);
  STRATA_ASSIGN_OR_RETURN(const uint64_t bytes, parse_byte_size(text));
  // 0 stands for "no budget" in SessionOptions; asked for, it would silently lift the bound.
  if (bytes == 0)
    return Status::errorf("--mem {}: a budget must be above zero (leave --mem out for none)", text);
  return MemoryBudget{bytes, ""};
}

}  // namespace strata

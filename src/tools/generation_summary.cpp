#include "tools/generation_summary.h"

#include <fmt/format.h>

#include <cstdio>

namespace strata::tools {
namespace {

// ", device memory at its peak 5120.0 MiB, the decode waiting for the device 812.5 ms" where
// the model computes on a device, and the host arena's reads under --mem.
std::string device_text(const Engine& engine, const SessionStats& stats) {
  const ExpertCounters& e = stats.experts;
  const auto peak = engine.peak_device_bytes();
  std::string text = peak
                         ? fmt::format(
                               ", device memory at its peak {:.1f} MiB, the decode waiting for the "
                               "device {:.1f} ms",
                               double(*peak) / 1048576, stats.decode_device_wait_ms)
                         : "";
  if (e.host_arena_hits + e.host_arena_misses > 0)
    text += fmt::format(" | host arena: {} reads served from host memory, {} from the file",
                        e.host_arena_hits, e.host_arena_misses);
  return text;
}

}  // namespace

void print_generation_summary(const Session& session, int64_t prompt_tokens,
                              int64_t generated_tokens, bool streaming) {
  const SessionStats& stats = session.stats();
  // The rates are per forward pass of each shape, the counts what the user gave and got.
  std::string summary = fmt::format("prompt {} tokens", prompt_tokens);
  if (stats.prefill_tokens > 0)
    summary += fmt::format(", {:.1f} tok/s", stats.prefill_tokens_per_s());
  summary += fmt::format(" | generated {} tokens", generated_tokens);
  if (stats.decode_tokens > 0)
    summary += fmt::format(", decode {:.2f} tok/s over {} steps", stats.decode_tokens_per_s(),
                           stats.decode_tokens);
  std::fprintf(stderr, "%s\n", summary.c_str());
  if (!streaming) return;
  // What each figure is, in MiB and ms. The share served from the arena counts the claims that
  // did not wait for a read: hits and timely read-ahead hits, not late ones.
  const ExpertCounters& e = stats.experts;
  const double run_ms = stats.prefill_ms + stats.decode_ms;
  constexpr double kMiB = 1048576;
  std::fprintf(
      stderr, "%s\n",
      fmt::format(
          "experts: {:.1f} % served from the arena ({} hits: resident when their layer began; {} "
          "read-ahead hits: prefetched in time; {} late: prefetched but still loading; {} "
          "misses: read on demand{}) | {:.1f} MiB read, waiting {:.1f} ms, computing {:.1f} ms, "
          "disk busy {:.0f} % | peak RSS {:.1f} MiB{}",
          100 * e.hit_rate(), e.hits, e.readahead_hits, e.late_readaheads, e.misses,
          e.misses_on_host > 0
              ? fmt::format(", {} of them computed by the CPU from host memory", e.misses_on_host)
              : std::string(),
          double(e.bytes_read) / kMiB, e.host_wait_ms, run_ms - e.host_wait_ms,
          run_ms > 0 ? 100 * e.disk_active_ms / run_ms : 0.0,
          double(Engine::peak_rss_bytes()) / kMiB, device_text(session.engine(), stats))
          .c_str());
}

}  // namespace strata::tools

#include "tools/generation_summary.h"

#include <fmt/format.h>

#include <cstdio>

namespace strata::tools {

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
  const ExpertCounters& e = stats.experts;
  const double ms = stats.prefill_ms + stats.decode_ms;
  std::fprintf(stderr,
               "experts: %.1f %% hits (%llu hits, %llu read-ahead hits, %llu late, %llu misses), "
               "%.1f MB read, %.1f ms waiting and %.1f computing, disk reading %.0f %% of the "
               "time; peak RSS %.1f MiB\n",
               100 * e.hit_rate(), static_cast<unsigned long long>(e.hits),
               static_cast<unsigned long long>(e.readahead_hits),
               static_cast<unsigned long long>(e.late_readaheads),
               static_cast<unsigned long long>(e.misses), double(e.bytes_read) / 1e6,
               e.host_wait_ms, ms - e.host_wait_ms, ms > 0 ? 100 * e.disk_active_ms / ms : 0.0,
               double(Session::peak_rss_bytes()) / 1048576);
}

}  // namespace strata::tools

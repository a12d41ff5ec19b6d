// A progress line on stderr for long work (loading or writing large files): fraction done,
// rate and time left, redrawn in place at most five times a second, and only when stderr is
// a terminal (logs and CI output stay clean).
//
// Thread-safety: advance() may be called from several threads.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace strata {

class ProgressBar {
 public:
  ProgressBar(std::string label, uint64_t total_bytes);
  // Finishes the line; draws none when nothing was done, so that a command refused before its
  // work (an output that exists, say) prints its one error line alone.
  ~ProgressBar();

  void advance(uint64_t bytes);

 private:
  void draw(bool final);

  std::string label_;
  uint64_t total_;
  std::atomic<uint64_t> done_{0};
  bool enabled_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  std::mutex draw_mutex_;
};

}  // namespace strata

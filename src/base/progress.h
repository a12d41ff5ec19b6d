// A progress line on stderr for long work (loading or writing large files): fraction done,
// rate and time left, redrawn in place at most five times a second, and only when stderr is
// a terminal (logs and CI output stay clean).
//
// The line ends at 100 % when the work completed (finish()), even where the total was an
// estimate (quantize sizes its bar by the input file); otherwise (an error, an interrupt) it is
// erased, so that what the terminal shows last is the error line, not a bar stopped at 98 %.
//
// Thread-safety: advance() may be called from several threads; finish() and the destructor
// from the thread that made the bar, after the others are done.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace strata {

class ProgressBar {
 public:
  ProgressBar(std::string label, uint64_t total_bytes);
  // Draws on `out` whether or not it is a terminal (for tests).
  ProgressBar(std::string label, uint64_t total_bytes, std::FILE* out);
  ~ProgressBar();  // erases the line unless finish() ended it
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void advance(uint64_t bytes);
  // The work is complete: the line is drawn at 100 % and ended.
  void finish();

 private:
  ProgressBar(std::string label, uint64_t total_bytes, std::FILE* out, bool enabled);
  void draw(bool final);
  void erase();

  std::string label_;
  uint64_t total_;
  std::atomic<uint64_t> done_{0};
  std::FILE* out_;
  bool enabled_;
  bool finished_ = false;
  bool drawn_ = false;  // a line is on the terminal, not yet ended
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  std::mutex draw_mutex_;
};

}  // namespace strata

#include "base/progress.h"

#include <unistd.h>

#include <cstdio>

namespace strata {

ProgressBar::ProgressBar(std::string label, uint64_t total_bytes)
    : label_(std::move(label)),
      total_(total_bytes),
      enabled_(isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

ProgressBar::~ProgressBar() {
  if (enabled_ && done_.load() > 0) draw(true);
}

void ProgressBar::advance(uint64_t bytes) {
  done_.fetch_add(bytes, std::memory_order_relaxed);
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(200)) return;
  std::unique_lock lock(draw_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  last_draw_ = now;
  draw(false);
}

void ProgressBar::draw(bool final) {
  const uint64_t done = std::min(done_.load(), total_);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double fraction = total_ ? double(done) / double(total_) : 1.0;
  const double rate = seconds > 0 ? double(done) / seconds : 0;
  constexpr int kWidth = 30;
  char bar[kWidth + 1];
  for (int i = 0; i < kWidth; ++i) bar[i] = i < int(fraction * kWidth) ? '#' : '.';
  bar[kWidth] = 0;
  const double left = rate > 0 ? double(total_ - done) / rate : 0;
  std::fprintf(stderr, "\r%s [%s] %5.1f%%  %7.1f MiB/s  %4.0f s left ", label_.c_str(), bar,
               100 * fraction, rate / 1048576, final ? 0.0 : left);
  if (final) std::fputc('\n', stderr);
}

}  // namespace strata

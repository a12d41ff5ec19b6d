#include "base/progress.h"

#include <unistd.h>

#include <algorithm>

namespace strata {
namespace {

// "\r" back to the line's start, then ANSI erase-to-end-of-line: the bar draws only on
// terminals.
constexpr char kEraseLine[] = "\r\033[K";

}  // namespace

ProgressBar::ProgressBar(std::string label, uint64_t total_bytes)
    : ProgressBar(std::move(label), total_bytes, stderr, isatty(STDERR_FILENO) != 0) {}

ProgressBar::ProgressBar(std::string label, uint64_t total_bytes, std::FILE* out)
    : ProgressBar(std::move(label), total_bytes, out, true) {}

ProgressBar::ProgressBar(std::string label, uint64_t total_bytes, std::FILE* out, bool enabled)
    : label_(std::move(label)),
      total_(total_bytes),
      out_(out),
      enabled_(enabled),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

ProgressBar::~ProgressBar() {
  if (enabled_ && !finished_) erase();
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

void ProgressBar::finish() {
  if (!enabled_ || finished_) return;
  std::lock_guard lock(draw_mutex_);
  finished_ = true;
  draw(true);
}

void ProgressBar::erase() {
  std::lock_guard lock(draw_mutex_);
  if (!drawn_) return;
  drawn_ = false;
  std::fputs(kEraseLine, out_);
  std::fflush(out_);
}

void ProgressBar::draw(bool final) {
  // When the work is done, the total is what was done, whatever was estimated.
  const uint64_t done = final ? total_ : std::min(done_.load(), total_);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double fraction = total_ ? double(done) / double(total_) : 1.0;
  const double rate = seconds > 0 ? double(final ? done_.load() : done) / seconds : 0;
  constexpr int kWidth = 30;
  char bar[kWidth + 1];
  for (int i = 0; i < kWidth; ++i) bar[i] = i < int(fraction * kWidth) ? '#' : '.';
  bar[kWidth] = 0;
  const double left = rate > 0 ? double(total_ - done) / rate : 0;
  std::fprintf(out_, "\r%s [%s] %5.1f%%  %7.1f MiB/s  %4.0f s left ", label_.c_str(), bar,
               100 * fraction, rate / 1048576, final ? 0.0 : left);
  if (final) std::fputc('\n', out_);
  std::fflush(out_);
  drawn_ = !final;
}

}  // namespace strata

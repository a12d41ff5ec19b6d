#include "base/progress.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>

namespace strata {
namespace {

// "\r" back to the line's start, then ANSI erase-to-end-of-line: the bar draws only on
// terminals.
constexpr char kEraseLine[] = "\r\033[K";

// The descriptor of the line a bar has drawn and not yet ended (-1: none), for the handler of
// SIGINT and SIGTERM: an interrupted run exits without destructors, and would leave its bar on
// the terminal with the shell's prompt after it.
std::atomic<int> drawn_line_fd{-1};
struct sigaction previous_sigint, previous_sigterm;

void erase_drawn_line_and_die(int signal) {
  const int fd = drawn_line_fd.exchange(-1);
  if (fd >= 0) {
    const ssize_t ignored = ::write(fd, kEraseLine, sizeof(kEraseLine) - 1);
    (void)ignored;
  }
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

// Only over the default action: a handler someone else installed stays in charge.
void install_handlers() {
  struct sigaction action {};
  action.sa_handler = erase_drawn_line_and_die;
  sigemptyset(&action.sa_mask);
  for (auto [signal, previous] :
       {std::pair{SIGINT, &previous_sigint}, std::pair{SIGTERM, &previous_sigterm}}) {
    struct sigaction current {};
    if (::sigaction(signal, nullptr, &current) == 0 && current.sa_handler == SIG_DFL)
      ::sigaction(signal, &action, previous);
    else
      *previous = current;
  }
}

void restore_handlers() {
  ::sigaction(SIGINT, &previous_sigint, nullptr);
  ::sigaction(SIGTERM, &previous_sigterm, nullptr);
}

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
      last_draw_(start_) {
  if (enabled_ && out_ == stderr) install_handlers();
}

ProgressBar::~ProgressBar() {
  if (!enabled_) return;
  if (!finished_) erase();
  if (out_ == stderr) restore_handlers();
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
  if (drawn_line_fd.exchange(-1) < 0 && out_ == stderr) return;  // nothing drawn yet
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
  if (out_ == stderr) drawn_line_fd.store(final ? -1 : STDERR_FILENO);
}

}  // namespace strata

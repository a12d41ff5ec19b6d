#include "tools/input_lines.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/interrupt.h"

namespace strata::tools {

Result<InputLines::Next> InputLines::next(std::string& line) {
  for (;;) {
    if (const size_t newline = buffered_.find('\n'); newline != std::string::npos) {
      line = buffered_.substr(0, newline);
      buffered_.erase(0, newline + 1);
      return Next::kLine;
    }
    if (ended_) {
      if (buffered_.empty()) return Next::kEnd;
      line = std::move(buffered_);  // a last line without its newline
      buffered_.clear();
      return Next::kLine;
    }
    if (interrupted()) return Next::kInterrupted;
    pollfd waits[2] = {{STDIN_FILENO, POLLIN, 0}, {interrupt_wakeup_fd(), POLLIN, 0}};
    if (::poll(waits, waits[1].fd >= 0 ? 2 : 1, -1) < 0) {
      if (errno == EINTR) continue;
      return Status::errorf("standard input: poll failed: {}", std::strerror(errno));
    }
    if (waits[0].revents == 0) continue;  // the wakeup: seen by interrupted() above
    char bytes[4096];
    const ssize_t n = ::read(STDIN_FILENO, bytes, sizeof(bytes));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) return Status::errorf("standard input: cannot read: {}", std::strerror(errno));
    if (n == 0) ended_ = true;
    buffered_.append(bytes, size_t(n > 0 ? n : 0));
  }
}

}  // namespace strata::tools

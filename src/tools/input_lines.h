// Lines of standard input for `strata chat`, read so that Ctrl-C or SIGTERM ends the wait: the
// read waits in poll() on the input and on base/interrupt.h's wakeup descriptor, because the
// handlers' SA_RESTART would resume a plain read() after the signal.
#pragma once

#include <strata/status.h>

#include <string>

namespace strata::tools {

class InputLines {
 public:
  enum class Next {
    kLine,         // `line` holds the next line, without its newline
    kEnd,          // end of input (Ctrl-D on a terminal)
    kInterrupted,  // a signal arrived while waiting
  };

  // An error names standard input and the failed call.
  Result<Next> next(std::string& line);

 private:
  std::string buffered_;  // read, not yet returned
  bool ended_ = false;
};

}  // namespace strata::tools

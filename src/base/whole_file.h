// Reading a file the user names, whole: a suite, a trace, a run record, a warm-start file, a
// document; or a text that may come through a pipe: a prompt, a token list, a text to fit on.
// iostreams read a directory by throwing from deep inside the iterator (libstdc++) and say
// nothing of read errors unless asked; these say either in one line naming the file.
#pragma once

#include <strata/status.h>

#include <string>

namespace strata {

// A regular file's bytes, opened without blocking (base/regular_file.h), so a FIFO is an error
// rather than a hang: "PATH: cannot open: <reason>", "PATH: is a directory", "PATH: not a
// regular file" or "PATH: cannot read: <reason>".
Result<std::string> read_whole_file(const std::string& path);

// A text's bytes, where a pipe is as good as a file: "-" is standard input (`strata run -f -`),
// and a FIFO or /dev/fd/N (`-f <(cmd)`) is read to its end. Errors as above, less "not a
// regular file".
Result<std::string> read_whole_text(const std::string& path);

}  // namespace strata

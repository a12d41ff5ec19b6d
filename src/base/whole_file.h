// Reading a file the user names, whole: a prompt, a document, a suite, a trace, a warm-start
// file. iostreams read a directory by throwing from deep inside the iterator (libstdc++) and
// say nothing of read errors unless asked; this says either in one line naming the file.
#pragma once

#include <strata/status.h>

#include <string>

namespace strata {

// The file's bytes; an error "PATH: cannot open: <reason>", "PATH: is a directory" or
// "PATH: cannot read: <reason>".
Result<std::string> read_whole_file(const std::string& path);

// The same, or standard input for "-": a prompt or a text piped in (`strata run -f -`).
Result<std::string> read_whole_file_or_stdin(const std::string& path);

}  // namespace strata

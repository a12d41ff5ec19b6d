// The one rule for every file Strata writes, checked before a command does any work:
//
//   1. It is never an input of the same command. Inputs and output are compared by device and
//      inode (stat, following symlinks), so a name, a symlink and a hard link to an input are
//      all refused. A character device (/dev/null, a terminal) is exempt: it holds no bytes to
//      lose, and /dev/stdin and /dev/stdout are often the same terminal.
//   2. An existing file is replaced only when the user said so (--force).
//   3. A directory is refused; a character device or a FIFO is written in place, without
//      --force (base/atomic_file.h).
//
// A file the command reads and updates by design (--warm: usage accumulates across runs) is
// exempt from rules 2 and 3: it must be a regular file if it exists.
#pragma once

#include <strata/status.h>

#include <span>
#include <string>

namespace strata {

// A file a command reads, and how to name it in an error: {"the model", "m.gguf"}.
struct CommandInput {
  std::string what;
  std::string path;
};

enum class ExistingOutput {
  kRefuse,   // without --force
  kReplace,  // --force
  kUpdate,   // read, then written back (--warm)
};

// What --force asks for.
constexpr ExistingOutput existing_output(bool force) {
  return force ? ExistingOutput::kReplace : ExistingOutput::kRefuse;
}

// OK, or the first rule `path` breaks: "PATH: is an input of this command (the model M);
// refusing to overwrite it", "PATH: exists; --force replaces it", "PATH: is a directory",
// "DIR: no such directory", "PATH: not a regular file". Inputs that do not exist are skipped:
// the command reports them when it reads them.
Status check_output_path(const std::string& path, std::span<const CommandInput> inputs,
                         ExistingOutput existing);

}  // namespace strata

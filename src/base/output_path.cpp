#include "base/output_path.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace strata {
namespace {

Status check_directory_of(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code error;
  if (parent.empty() || std::filesystem::is_directory(parent, error)) return Status();
  return Status::errorf("{}: no such directory", parent.string());
}

// The input `output` is, or null.
const CommandInput* input_at(const struct stat& output, std::span<const CommandInput> inputs) {
  for (const CommandInput& input : inputs) {
    struct stat info {};
    if (::stat(input.path.c_str(), &info) == 0 && info.st_dev == output.st_dev &&
        info.st_ino == output.st_ino)
      return &input;
  }
  return nullptr;
}

}  // namespace

Status check_output_path(const std::string& path, std::span<const CommandInput> inputs,
                         ExistingOutput existing) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    if (errno == ENOENT) return check_directory_of(path);
    return Status::errorf("{}: cannot write: {}", path, std::strerror(errno));
  }
  const bool device = S_ISCHR(info.st_mode);
  if (const CommandInput* input = device ? nullptr : input_at(info, inputs))
    return Status::errorf("{}: is an input of this command ({} {}); refusing to overwrite it", path,
                          input->what, input->path);
  if (S_ISDIR(info.st_mode)) return Status::errorf("{}: is a directory", path);
  const bool regular = S_ISREG(info.st_mode);
  if (existing == ExistingOutput::kUpdate)
    return regular ? Status() : Status::errorf("{}: not a regular file", path);
  if (device || S_ISFIFO(info.st_mode)) return Status();
  if (!regular) return Status::errorf("{}: not a regular file", path);
  if (existing == ExistingOutput::kRefuse)
    return Status::errorf("{}: exists; --force replaces it", path);
  return Status();
}

}  // namespace strata

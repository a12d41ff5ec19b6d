#include "lab/provenance.h"

#include <openssl/evp.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <memory>
#include <span>
#include <thread>

#include "base/cpu_features.h"
#include "base/regular_file.h"
#include "gguf/gguf_file.h"

extern char** environ;

namespace strata {

namespace {

// SHA-256 of the files' bytes one after the other.
Result<std::string> sha256_of_files(std::span<const std::string> paths) {
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> context(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr);
  std::vector<unsigned char> buffer(8 << 20);
  for (const std::string& path : paths) {
    STRATA_ASSIGN_OR_RETURN(const RegularFile file, RegularFile::open(path));
    for (;;) {
      const ssize_t got = ::read(file.fd(), buffer.data(), buffer.size());
      if (got == 0) break;
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return Status::errorf("{}: read error while hashing", path);
      EVP_DigestUpdate(context.get(), buffer.data(), size_t(got));
    }
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(context.get(), digest, &length);
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

}  // namespace

Result<std::string> sha256_file(const std::string& path) {
  const std::string paths[] = {path};
  return sha256_of_files(paths);
}

Result<std::string> sha256_model(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(const auto file, gguf::GgufFile::open(path));
  std::vector<std::string> paths;
  for (const FilePart& part : file->parts()) paths.push_back(part.path);
  return sha256_of_files(paths);
}

static std::string first_line_with(const std::string& path, const std::string& prefix) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(prefix, 0) == 0) {
      const size_t colon = line.find(':');
      std::string value = colon == std::string::npos ? line : line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(" \t"));
      return value;
    }
  return "";
}

nlohmann::json machine_description() {
  utsname name{};
  uname(&name);
  return {{"cpu", first_line_with("/proc/cpuinfo", "model name")},
          {"cores", std::thread::hardware_concurrency()},
          {"memory", first_line_with("/proc/meminfo", "MemTotal")},
          {"kernel", std::string(name.sysname) + " " + name.release},
          {"hostname", name.nodename},
          {"simd", simd_kernels_name()}};
}

// Only variables that change how this process runs: Strata's own, the C library's allocator and
// loader, threading and CUDA runtimes. Results are committed and shared, and a deny-list of
// secret-looking names would still let through whatever a name does not give away.
bool affects_the_run(std::string_view name) {
  static constexpr std::string_view kPrefixes[] = {"STRATA_", "MALLOC_", "GLIBC_TUNABLES", "LD_",
                                                   "OMP_",    "GOMP_",   "CUDA_",          "NCCL_"};
  for (std::string_view prefix : kPrefixes)
    if (name.starts_with(prefix)) return true;
  return false;
}

nlohmann::json environment_description() {
  nlohmann::json env = nlohmann::json::object();
  for (char** entry = environ; *entry; ++entry) {
    const std::string_view text = *entry;
    const size_t equals = text.find('=');
    if (equals == std::string_view::npos || !affects_the_run(text.substr(0, equals))) continue;
    env[std::string(text.substr(0, equals))] = std::string(text.substr(equals + 1));
  }
  return env;
}

nlohmann::json binary_description() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  const std::string exe = n > 0 ? std::string(path, size_t(n)) : "";
  const auto hash = exe.empty() ? Result<std::string>(Status::error("unknown")) : sha256_file(exe);
  return {{"path", exe},
          {"sha256", hash.ok() ? hash.value() : "unknown"},
          {"commit", strata_build_commit()}};
}

}  // namespace strata

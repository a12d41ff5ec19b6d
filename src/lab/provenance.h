// Where a measurement came from: the build's commit, file hashes, the machine, the
// environment. Benchmarks attach it to every result they write.
#pragma once

#include <strata/status.h>

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace strata {

// build_commit.cpp, generated at build time: `git describe` of the source tree, and
// CMAKE_BUILD_TYPE (Release, Debug, ...).
const char* strata_build_commit();
const char* strata_build_type();

// Hex SHA-256 of a file's contents (streamed; fine for 17 GB models).
Result<std::string> sha256_file(const std::string& path);
// SHA-256 of a model's bytes: its file's, or a split model's parts' one after the other (the
// digest of their concatenation). Opening the model finds the parts.
Result<std::string> sha256_model(const std::string& path);

// CPU model, cores, memory, kernel; the environment variables that change how the process runs
// (Strata's, the allocator's and loader's, threading and CUDA runtimes'; no others, so nothing
// private lands in a result file); this binary's path and hash.
nlohmann::json machine_description();
bool affects_the_run(std::string_view variable_name);
nlohmann::json environment_description();
nlohmann::json binary_description();

}  // namespace strata

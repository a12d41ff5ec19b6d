// libFuzzer target for the evaluation's files that people pass in: suites (`strata eval run
// --suite`) and run records (`strata eval compare`, `strata eval table`). The first byte picks
// the parser, the rest is the file. A crash, a sanitizer report, an error that is not one line
// naming the file, or a suite that does not survive encoding and decoding again is a bug.
// Run with fuzz/run_fuzz.sh SECONDS.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/check.h"
#include "eval/run_record.h"
#include "eval/suite.h"

namespace {

constexpr std::string_view kName = "fuzz.file";

void check_error_message(const std::string& message) {
  STRATA_CHECK(message.size() > kName.size() + 2);
  STRATA_CHECK(message.starts_with(kName) && message.substr(kName.size(), 2) == ": ");
  STRATA_CHECK(message.find_first_of("\n\r") == std::string::npos);
}

void fuzz_suite(const std::string& text) {
  const auto suite = strata::eval::decode_suite(text, std::string(kName));
  if (!suite.ok()) return check_error_message(suite.status().message());
  STRATA_CHECK(!suite.value().windows.empty());
  const std::string encoded = strata::eval::encode_suite(suite.value());
  const auto again = strata::eval::decode_suite(encoded, std::string(kName));
  STRATA_CHECK(again.ok());
  STRATA_CHECK(strata::eval::encode_suite(again.value()) == encoded);
}

void fuzz_run_record(const std::string& text) {
  const auto record = strata::eval::parse_run_record(text, std::string(kName));
  if (!record.ok()) return check_error_message(record.status().message());
  STRATA_CHECK(!record.value().windows.empty());
  for (const auto& window : record.value().windows) STRATA_CHECK(window.positions >= 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string file(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] % 2 == 0)
    fuzz_suite(file);
  else
    fuzz_run_record(file);
  return 0;
}

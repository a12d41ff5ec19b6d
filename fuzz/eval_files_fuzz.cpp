// libFuzzer target for the evaluation's files that people pass in: suites (`strata eval run
// --suite`), run records (`strata eval compare`, `strata eval table`) and the files of a
// reference directory (`--ref-logits DIR`: its manifest, top-K rows and full rows). The first
// byte picks the parser; for rows, the next bytes pick the shape; the rest is the file. A
// crash, a sanitizer report, an error that is not one line naming the file, a suite that does
// not survive encoding and decoding again, or rows accepted that break their contract
// (reference_files.h) is a bug.
// Run with fuzz/run_fuzz.sh SECONDS.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <algorithm>
#include <cmath>
#include <set>

#include "base/check.h"
#include "eval/reference_files.h"
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

// The suite a manifest is checked against: two windows.
const strata::eval::Suite& manifest_suite() {
  static const strata::eval::Suite suite = [] {
    strata::eval::Suite s;
    s.windows.push_back(
        {.id = "code-000", .prompt = 8, .scored = 16, .tokens_fnv1a64 = "0123456789abcdef"});
    s.windows.push_back(
        {.id = "code-001", .prompt = 8, .scored = 16, .tokens_fnv1a64 = "fedcba9876543210"});
    return s;
  }();
  return suite;
}
constexpr int64_t kManifestVocab = 1000;

void fuzz_manifest(const std::string& text) {
  const auto manifest = strata::eval::parse_reference_manifest(text, std::string(kName),
                                                               manifest_suite(), kManifestVocab);
  if (!manifest.ok()) return check_error_message(manifest.status().message());
  STRATA_CHECK(manifest.value().top_k >= 0 && manifest.value().top_k <= kManifestVocab);
  STRATA_CHECK(manifest.value().description.is_object());
}

void fuzz_top_k_rows(const std::string& bytes, int64_t scored, int top_k, int64_t n_vocab) {
  const auto rows =
      strata::eval::parse_top_k_rows(bytes, std::string(kName), scored, top_k, n_vocab);
  if (!rows.ok()) return check_error_message(rows.status().message());
  STRATA_CHECK(int64_t(rows.value().size()) == scored);
  for (const strata::eval::TopKRow& row : rows.value()) {
    STRATA_CHECK(std::isfinite(row.next_log_prob) && row.next_log_prob <= 0);
    STRATA_CHECK(int(row.ids.size()) == top_k && row.log_probs.size() == row.ids.size());
    STRATA_CHECK(std::set<int32_t>(row.ids.begin(), row.ids.end()).size() == row.ids.size());
    for (size_t i = 0; i < row.ids.size(); ++i) {
      STRATA_CHECK(row.ids[i] >= 0 && row.ids[i] < n_vocab && row.log_probs[i] <= 0);
      STRATA_CHECK(i == 0 || row.log_probs[i] <= row.log_probs[i - 1]);
    }
  }
}

void fuzz_full_rows(const std::string& bytes, int64_t scored, int64_t fed, int64_t n_vocab) {
  const auto rows =
      strata::eval::parse_full_rows(bytes, std::string(kName), scored, fed, n_vocab, "code-000");
  if (!rows.ok()) return check_error_message(rows.status().message());
  STRATA_CHECK(int64_t(rows.value().size()) == scored * n_vocab);
  STRATA_CHECK(std::all_of(rows.value().begin(), rows.value().end(),
                           [](float v) { return std::isfinite(v); }));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const std::string file(reinterpret_cast<const char*>(data + 1), size - 1);
  // Rows take three shape bytes: small shapes, so that short inputs can be valid files.
  const std::string rows(reinterpret_cast<const char*>(data + 4), size - 4);
  const int64_t scored = data[1] % 4, more = data[2] % 3, width = 1 + data[3] % 4;
  switch (data[0] % 5) {
    case 0:
      fuzz_suite(file);
      break;
    case 1:
      fuzz_run_record(file);
      break;
    case 2:
      fuzz_manifest(file);
      break;
    case 3:
      fuzz_top_k_rows(rows, scored, int(width), /*n_vocab=*/width + more);
      break;
    default:
      fuzz_full_rows(rows, scored, scored + more, /*n_vocab=*/width);
      break;
  }
  return 0;
}

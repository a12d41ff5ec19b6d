// libFuzzer target for the expert store's own files: expert traces (`strata trace`, read by
// `cachesim`) and warm-start usage files (`--warm`). The first byte picks the parser, the rest
// is the file. A crash, a sanitizer report, an error that is not one line naming the file, or a
// trace that does not survive encoding and decoding again is a bug.
// Run with fuzz/run_fuzz.sh SECONDS.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/check.h"
#include "experts/lab/expert_trace.h"
#include "runtime/expert_usage.h"

namespace {

constexpr std::string_view kName = "fuzz.file";
// The shape a usage file is checked against: the seeds' (fuzz/make_expert_files_corpus.py).
constexpr int kUsageLayers = 2, kUsageExperts = 4;

void check_error_message(const std::string& message) {
  STRATA_CHECK(message.size() > kName.size() + 2);
  STRATA_CHECK(message.starts_with(kName) && message.substr(kName.size(), 2) == ": ");
  STRATA_CHECK(message.find_first_of("\n\r") == std::string::npos);
}

void fuzz_trace(std::span<const uint8_t> bytes) {
  const auto trace = strata::decode_expert_trace(bytes, kName);
  if (!trace.ok()) return check_error_message(trace.status().message());
  STRATA_CHECK(strata::validate_expert_trace(trace.value(), kName).ok());
  const auto again = strata::decode_expert_trace(strata::encode_expert_trace(trace.value()), kName);
  STRATA_CHECK(again.ok());
  const strata::ExpertTrace &a = trace.value(), &b = again.value();
  STRATA_CHECK(a.n_layer == b.n_layer && a.n_expert == b.n_expert &&
               a.n_expert_used == b.n_expert_used && a.n_prompt_tokens == b.n_prompt_tokens &&
               a.teacher_forced == b.teacher_forced && a.note == b.note && a.experts == b.experts &&
               a.has_predictions == b.has_predictions && a.predictions == b.predictions);
}

void fuzz_usage(std::string_view text) {
  const auto usage =
      strata::ExpertUsage::parse(text, std::string(kName), kUsageLayers, kUsageExperts);
  if (!usage.ok()) return check_error_message(usage.status().message());
  uint64_t used = 0;
  for (int l = 0; l < kUsageLayers; ++l)
    for (int e = 0; e < kUsageExperts; ++e) used += usage.value().count(l, e) > 0;
  STRATA_CHECK_EQ(usage.value().hottest().size(), used);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::span<const uint8_t> file(data + 1, size - 1);
  if (data[0] % 2 == 0)
    fuzz_trace(file);
  else
    fuzz_usage({reinterpret_cast<const char*>(file.data()), file.size()});
  return 0;
}

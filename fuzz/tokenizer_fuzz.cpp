// libFuzzer target for the tokenizer with the Qwen3 vocabulary: every prompt, chat message and
// document a user gives goes through encode(), whatever its bytes. A crash, a sanitizer report,
// an id outside the vocabulary, or a round trip that does not give the text back (invalid UTF-8
// repaired as tokenizer.h says) is a bug. Run with fuzz/run_fuzz.sh SECONDS.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "base/check.h"
#include "gguf/gguf_file.h"
#include "runtime/tokenizer.h"
#include "runtime/unicode_bytes.h"

namespace {

using strata::runtime::Tokenizer;

const Tokenizer* tokenizer = nullptr;

void check_round_trip(std::string_view text, bool parse_special) {
  const std::vector<int32_t> ids = tokenizer->encode(text, parse_special);
  for (const int32_t id : ids) STRATA_CHECK(id >= 0 && id < tokenizer->token_count());
  const auto decoded = tokenizer->decode(ids);
  STRATA_CHECK(decoded.ok());
  STRATA_CHECK(decoded.value() == strata::runtime::repair_utf8(text));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // The vocabulary of tests/golden/tokenizer (its README says where it comes from).
  auto file = strata::gguf::GgufFile::open(STRATA_FUZZ_VOCAB);
  if (!file.ok()) {
    std::fprintf(stderr, "%s\n", file.status().message().c_str());
    std::abort();
  }
  auto loaded = Tokenizer::from_gguf(*file.value());
  if (!loaded.ok()) {
    std::fprintf(stderr, "%s\n", loaded.status().message().c_str());
    std::abort();
  }
  tokenizer = new Tokenizer(std::move(loaded).value());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // Without parse_special the text of <|im_start|> stays text; with it, it becomes the token,
  // which decodes to the same text.
  check_round_trip(text, /*parse_special=*/false);
  check_round_trip(text, /*parse_special=*/true);
  return 0;
}

// libFuzzer target for the GGUF reader: parse arbitrary bytes, then read everything a consumer
// could. A crash, a sanitizer report, or a broken promise of GgufFile (checked below) is a bug.
// Run with fuzz/run_fuzz.sh SECONDS.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/check.h"
#include "gguf/gguf_file.h"

namespace {

using strata::gguf::GgufFile;
using strata::gguf::TensorInfo;

constexpr std::string_view kName = "fuzz.gguf";

void check_error_message(const std::string& message) {
  STRATA_CHECK(message.size() > kName.size() + 2);
  STRATA_CHECK(message.starts_with(kName) && message.substr(kName.size(), 2) == ": ");
  STRATA_CHECK(message.find_first_of("\n\r") == std::string::npos);
}

void touch_metadata(const GgufFile& file) {
  for (const std::string& key : file.keys()) {
    STRATA_CHECK(file.has(key));
    STRATA_CHECK(file.type_of(key).ok());
    STRATA_CHECK(!file.describe(key).empty());
    const auto raw = file.raw_value(key);
    STRATA_CHECK(raw.ok() && raw.value().size() >= 5);
    for (const auto& status :
         {file.get_uint(key).status(), file.get_int(key).status(), file.get_float(key).status(),
          file.get_bool(key).status(), file.get_string(key).status(),
          file.get_string_array(key).status(), file.get_int_array(key).status(),
          file.get_float_array(key).status()}) {
      if (!status.ok()) check_error_message(status.message());
    }
  }
}

// The reader promises aligned, in-bounds, non-overlapping tensors with unique names.
void touch_tensors(const GgufFile& file) {
  uint64_t checksum = 0;
  for (const TensorInfo& tensor : file.tensors()) {
    STRATA_CHECK(file.find_tensor(tensor.name) == &tensor);
    STRATA_CHECK(tensor.offset % file.alignment() == 0);
    STRATA_CHECK(tensor.offset >= file.data_offset());
    STRATA_CHECK(tensor.offset <= file.file_size());
    STRATA_CHECK(tensor.n_bytes <= file.file_size() - tensor.offset);
    STRATA_CHECK(tensor.n_elements() >= 0);
    if (tensor.n_bytes > 0) {
      checksum += file.tensor_data(tensor)[0] + file.tensor_data(tensor)[tensor.n_bytes - 1];
    }
    for (const TensorInfo& other : file.tensors()) {
      if (&other == &tensor || other.n_bytes == 0 || tensor.n_bytes == 0) continue;
      STRATA_CHECK(tensor.offset + tensor.n_bytes <= other.offset ||
                   other.offset + other.n_bytes <= tensor.offset);
    }
  }
  volatile uint64_t sink = checksum;
  (void)sink;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parsed = GgufFile::parse({data, size}, std::string(kName));
  if (!parsed.ok()) {
    check_error_message(parsed.status().message());
    return 0;
  }
  const GgufFile& file = *parsed.value();
  STRATA_CHECK(file.version() == 2 || file.version() == 3);
  STRATA_CHECK(file.alignment() > 0 && (file.alignment() & (file.alignment() - 1)) == 0);
  touch_metadata(file);
  touch_tensors(file);
  return 0;
}

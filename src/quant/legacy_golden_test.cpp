// The quantizers against llama.cpp's own output: the golden synthetic models come in F32 and in
// variants made from it by llama-quantize (tests/golden/synthetic/README.md), so quantizing an
// F32 tensor here must give the bytes of the same tensor in the Q4_0, Q5_0, IQ4_NL and F16
// files. Q8_0 weights differ by design in a few quants (q8_0.cpp: our quantizer follows the
// AVX2 activation path), which is checked quant by quant.
//
// The files are read with a minimal GGUF walker written here, so these tests do not depend on
// the gguf/ layer (see gguf/gguf_file.h for the layout).
#include "quant/legacy_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>

namespace strata {
namespace {

struct GgufTensor {
  std::vector<int64_t> shape;
  uint32_t type = 0;
  uint64_t offset = 0;  // from the start of the file
  int64_t n_elements() const {
    int64_t n = 1;
    for (int64_t dim : shape) n *= dim;
    return n;
  }
};

class GgufImage {
 public:
  explicit GgufImage(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    if (!file) throw std::runtime_error(path + ": cannot open");
    bytes_.assign(std::istreambuf_iterator<char>(file), {});
    parse();
  }
  const std::map<std::string, GgufTensor>& tensors() const { return tensors_; }
  const uint8_t* data(const GgufTensor& tensor) const { return bytes_.data() + tensor.offset; }

 private:
  template <class T>
  T read() {
    if (cursor_ + sizeof(T) > bytes_.size()) throw std::runtime_error("truncated GGUF");
    T value;
    std::memcpy(&value, bytes_.data() + cursor_, sizeof(T));
    cursor_ += sizeof(T);
    return value;
  }
  std::string read_string() {
    const auto length = read<uint64_t>();
    if (cursor_ + length > bytes_.size()) throw std::runtime_error("truncated GGUF string");
    std::string s(reinterpret_cast<const char*>(bytes_.data() + cursor_), length);
    cursor_ += length;
    return s;
  }
  // Skips a value of GGUF type `type`, returning it when it is an integer (for the alignment).
  uint64_t skip_value(uint32_t type) {
    static constexpr int kSizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    if (type == 8) {
      read_string();
      return 0;
    }
    if (type == 9) {
      const auto element_type = read<uint32_t>();
      const auto count = read<uint64_t>();
      for (uint64_t i = 0; i < count; ++i) skip_value(element_type);
      return 0;
    }
    if (type > 12) throw std::runtime_error("bad GGUF value type");
    uint64_t value = 0;
    std::memcpy(&value, bytes_.data() + cursor_, kSizes[type]);
    cursor_ += kSizes[type];
    return value;
  }
  void parse() {
    if (read<uint32_t>() != 0x46554747) throw std::runtime_error("not GGUF");
    read<uint32_t>();  // version
    const auto n_tensors = read<uint64_t>();
    const auto n_kv = read<uint64_t>();
    uint64_t alignment = 32;
    for (uint64_t i = 0; i < n_kv; ++i) {
      const std::string key = read_string();
      const uint64_t value = skip_value(read<uint32_t>());
      if (key == "general.alignment") alignment = value;
    }
    std::vector<std::pair<std::string, GgufTensor>> infos;
    for (uint64_t i = 0; i < n_tensors; ++i) {
      std::string name = read_string();
      GgufTensor tensor;
      tensor.shape.resize(read<uint32_t>());
      for (auto& dim : tensor.shape) dim = int64_t(read<uint64_t>());
      tensor.type = read<uint32_t>();
      tensor.offset = read<uint64_t>();
      infos.emplace_back(std::move(name), std::move(tensor));
    }
    const uint64_t data_start = (cursor_ + alignment - 1) / alignment * alignment;
    for (auto& [name, tensor] : infos) {
      tensor.offset += data_start;
      tensors_[name] = tensor;
    }
  }

  std::vector<uint8_t> bytes_;
  size_t cursor_ = 0;
  std::map<std::string, GgufTensor> tensors_;
};

std::string model_path(const std::string& name) {
  return std::string(STRATA_SOURCE_DIR) + "/tests/golden/synthetic/models/" + name + ".gguf";
}

// Every tensor of `variant` stored as `type` must equal our quantization of the F32 tensor.
// Returns how many tensors were compared.
int expect_tensors_match(const std::string& family, const std::string& variant, QuantType type) {
  const GgufImage source(model_path(family + "-f32"));
  const GgufImage quantized(model_path(family + "-" + variant));
  const auto& f = legacy_test::format(type);
  int compared = 0;
  for (const auto& [name, tensor] : quantized.tensors()) {
    if (tensor.type != uint32_t(type)) continue;
    const GgufTensor& original = source.tensors().at(name);
    EXPECT_EQ(original.type, uint32_t(QuantType::kF32)) << name;
    EXPECT_EQ(original.shape, tensor.shape) << name;
    const int64_t n = tensor.n_elements();
    std::vector<float> x(static_cast<size_t>(n));
    std::memcpy(x.data(), source.data(original), size_t(n) * 4);
    std::vector<uint8_t> ours(f.row_bytes(n));
    f.quantize(x.data(), ours.data(), n);
    size_t first_difference = 0;
    while (first_difference < ours.size() &&
           ours[first_difference] == quantized.data(tensor)[first_difference])
      ++first_difference;
    EXPECT_EQ(first_difference, ours.size())
        << family << "-" << variant << " " << name << ": first differing byte " << first_difference
        << " (block " << first_difference / f.block_bytes << ")";
    ++compared;
  }
  return compared;
}

TEST(LegacyGolden, Q4_0MatchesLlamaQuantize) {
  EXPECT_GT(expect_tensors_match("tiny-qwen3moe", "q4_0", QuantType::kQ4_0), 20);
  EXPECT_GT(expect_tensors_match("tiny-qwen2moe", "q4_0", QuantType::kQ4_0), 20);
}

TEST(LegacyGolden, Q5_0MatchesLlamaQuantize) {
  // The Q4_K_M variant falls back to Q5_0 where rows are not multiples of 256.
  EXPECT_GT(expect_tensors_match("tiny-qwen3moe", "q4_k_m", QuantType::kQ5_0), 20);
}

TEST(LegacyGolden, IQ4_NLMatchesLlamaQuantize) {
  EXPECT_GT(expect_tensors_match("tiny-qwen3moe", "iq4_nl", QuantType::kIQ4_NL), 20);
  EXPECT_GT(expect_tensors_match("tiny-qwen2moe", "iq4_nl", QuantType::kIQ4_NL), 20);
}

TEST(LegacyGolden, F16MatchesConvertedModel) {
  EXPECT_GT(expect_tensors_match("tiny-qwen3moe", "f16", QuantType::kF16), 20);
}

// llama-quantize writes Q8_0 with ggml's scalar reference: q = roundf(x * (1 / d)), halves away
// from zero. Ours (the AVX2 activation path) multiplies by 127 / max and rounds halves to even.
// The scales must agree everywhere, every golden quant must be the reference formula's, and
// ours may differ from it only by one, only where the two formulas disagree.
TEST(LegacyGolden, Q8_0DiffersFromLlamaQuantizeOnlyAtRoundingBoundaries) {
  constexpr double kMaxDifferingFraction = 1e-3;  // x / d within an ulp or two of k + 0.5
  int64_t n_quants = 0, n_differing = 0;
  for (const std::string family : {"tiny-qwen3moe", "tiny-qwen2moe"}) {
    const GgufImage source(model_path(family + "-f32"));
    const GgufImage quantized(model_path(family + "-q8_0"));
    for (const auto& [name, tensor] : quantized.tensors()) {
      if (tensor.type != uint32_t(QuantType::kQ8_0)) continue;
      const int64_t n = tensor.n_elements();
      std::vector<float> x(static_cast<size_t>(n));
      std::memcpy(x.data(), source.data(source.tensors().at(name)), size_t(n) * 4);
      std::vector<BlockQ8_0> ours(n / 32), golden(n / 32);
      quantize_row_q8_0(x.data(), ours.data(), n);
      std::memcpy(golden.data(), quantized.data(tensor), golden.size() * sizeof(BlockQ8_0));
      for (int64_t b = 0; b < n / 32; ++b) {
        ASSERT_EQ(ours[b].d, golden[b].d) << name << " block " << b;
        float amax = 0.0f;
        for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
        const float d = amax / 127.0f, inverse = d != 0.0f ? 1.0f / d : 0.0f;
        for (int j = 0; j < 32; ++j) {
          const int reference = int(std::round(x[b * 32 + j] * inverse));
          ASSERT_EQ(golden[b].qs[j], reference) << name << " block " << b << " quant " << j;
          if (ours[b].qs[j] != golden[b].qs[j]) {
            ASSERT_EQ(std::abs(ours[b].qs[j] - golden[b].qs[j]), 1) << name;
            ++n_differing;
          }
          ++n_quants;
        }
      }
    }
  }
  EXPECT_GT(n_quants, 100000);
  EXPECT_LE(double(n_differing), kMaxDifferingFraction * double(n_quants));
  std::printf("Q8_0: %lld of %lld quants differ from llama-quantize's by one\n",
              static_cast<long long>(n_differing), static_cast<long long>(n_quants));
}

}  // namespace
}  // namespace strata

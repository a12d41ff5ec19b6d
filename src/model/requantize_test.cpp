// requantize_experts on the golden synthetic models (tests/golden/synthetic/README.md): tiny
// qwen3moe, expert rows of 128 (gate, up) and 64 (down), so block-32 formats fit and K-quants
// do not. Expert tensors are recognised here by name, independently of the architecture
// binding requantize.cpp uses.
#include "model/requantize.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "model/model_file_test_support.h"

namespace strata {
namespace {

using testing::open_gguf;

namespace fs = std::filesystem;

using testing::golden_synthetic;
const std::string kQ8Model = golden_synthetic("models/tiny-qwen3moe-q8_0.gguf");
const std::string kF32Model = golden_synthetic("models/tiny-qwen3moe-f32.gguf");
// sequences.json "seq16_en": the first 16 llama.cpp tokens of "The quick brown fox j...".
const std::vector<int32_t> kSeq16 = {51,  71, 68, 220, 412, 271, 74,  313,
                                     280, 86, 77, 284, 78,  87,  220, 73};

bool is_expert_name(const std::string& name) {
  return name.ends_with("ffn_gate_exps.weight") || name.ends_with("ffn_up_exps.weight") ||
         name.ends_with("ffn_down_exps.weight");
}

class RequantizeTest : public testing::ScratchDirectoryTest {
 protected:
  std::shared_ptr<const gguf::GgufFile> requantize(const std::string& input, QuantType type,
                                                   const std::string& output, int n_threads = 2) {
    RequantizeOptions options;
    options.expert_type = type;
    options.n_threads = n_threads;
    const auto summary = requantize_model_file(input, output, options);
    EXPECT_TRUE(summary.ok()) << summary.status().message();
    auto file = gguf::GgufFile::open(output);
    EXPECT_TRUE(file.ok()) << file.status().message();
    return file.ok() ? file.value() : nullptr;
  }
};

std::span<const uint8_t> bytes_of(const gguf::GgufFile& file, const gguf::TensorInfo& tensor) {
  return {file.tensor_data(tensor), tensor.n_bytes};
}

// quantize(dequantize(row)) for every row, as the specification of one expert tensor.
std::vector<uint8_t> reference_requantize(const gguf::GgufFile& file,
                                          const gguf::TensorInfo& tensor, QuantType target) {
  const QuantTraits& from = quant_traits(QuantType(tensor.type_id));
  const QuantTraits& to = quant_traits(target);
  const int64_t n = tensor.shape[0];
  std::vector<uint8_t> out;
  std::vector<float> row(static_cast<size_t>(n));
  std::vector<uint8_t> blocks(to.row_bytes(n));
  for (int64_t r = 0; r < tensor.n_elements() / n; ++r) {
    from.dequantize_row(file.tensor_data(tensor) + size_t(r) * from.row_bytes(n), row.data(), n);
    to.quantize_row(row.data(), blocks.data(), n);
    out.insert(out.end(), blocks.begin(), blocks.end());
  }
  return out;
}

TEST_F(RequantizeTest, Q8ToQ4KeepsEverythingButTheExperts) {
  const auto input = open_gguf(kQ8Model);
  const auto output = requantize(kQ8Model, QuantType::kQ4_0, path("q4_0.gguf"));
  ASSERT_TRUE(input && output);
  ASSERT_EQ(output->tensors().size(), input->tensors().size());
  int n_experts = 0;
  for (size_t i = 0; i < input->tensors().size(); ++i) {
    const gguf::TensorInfo& in = input->tensors()[i];
    const gguf::TensorInfo& out = output->tensors()[i];
    ASSERT_EQ(out.name, in.name);  // order kept
    EXPECT_EQ(out.shape, in.shape) << in.name;
    if (!is_expert_name(in.name)) {
      EXPECT_EQ(out.type_id, in.type_id) << in.name;
      const auto a = bytes_of(*input, in), b = bytes_of(*output, out);
      EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << in.name;
      continue;
    }
    ++n_experts;
    EXPECT_EQ(out.type_id, uint32_t(QuantType::kQ4_0)) << in.name;
    const auto expected = reference_requantize(*input, in, QuantType::kQ4_0);
    const auto actual = bytes_of(*output, out);
    EXPECT_TRUE(std::equal(expected.begin(), expected.end(), actual.begin(), actual.end()))
        << in.name;
  }
  EXPECT_EQ(n_experts, 3 * 4);  // gate, up, down of 4 layers

  // Every key copied unchanged and in order, then the provenance.
  const auto in_keys = input->keys(), out_keys = output->keys();
  ASSERT_EQ(out_keys.size(), in_keys.size() + 1);
  for (size_t i = 0; i < in_keys.size(); ++i) {
    ASSERT_EQ(out_keys[i], in_keys[i]);
    const auto a = input->raw_value(in_keys[i]).value(), b = output->raw_value(out_keys[i]).value();
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << in_keys[i];
  }
  EXPECT_EQ(output->get_string(kRequantizeProvenanceKey).value(), "Q4_0 from Q8_0");
}

TEST_F(RequantizeTest, BytesDoNotDependOnThreadCount) {
  const auto one = requantize(kQ8Model, QuantType::kIQ4_NL, path("one.gguf"), 1);
  const auto three = requantize(kQ8Model, QuantType::kIQ4_NL, path("three.gguf"), 3);
  ASSERT_TRUE(one && three);
  EXPECT_TRUE(std::ranges::equal(one->bytes(), three->bytes()));
}

// Q8_0 -> F32 -> Q8_0 gives the same quants back: the largest |weight| is 127 * d exactly, so
// d is recovered and every weight divides back to its integer quant.
TEST_F(RequantizeTest, Q8ToQ8IsTheIdentityOnTensors) {
  const auto input = open_gguf(kQ8Model);
  const auto output = requantize(kQ8Model, QuantType::kQ8_0, path("q8_0.gguf"));
  ASSERT_TRUE(input && output);
  for (size_t i = 0; i < input->tensors().size(); ++i) {
    const auto a = bytes_of(*input, input->tensors()[i]);
    const auto b = bytes_of(*output, output->tensors()[i]);
    EXPECT_TRUE(std::ranges::equal(a, b)) << input->tensors()[i].name;
  }
  EXPECT_EQ(output->get_string(kRequantizeProvenanceKey).value(), "Q8_0 from Q8_0");
}

// Against an independent implementation: llama-quantize made tiny-qwen3moe-q4_0 from the F32
// file, so our F32 -> Q4_0 experts must be its expert tensors byte for byte.
TEST_F(RequantizeTest, F32ToQ4MatchesLlamaQuantizeExperts) {
  const auto llama = open_gguf(golden_synthetic("models/tiny-qwen3moe-q4_0.gguf"));
  const auto output = requantize(kF32Model, QuantType::kQ4_0, path("f32_q4_0.gguf"));
  ASSERT_TRUE(llama && output);
  int n_compared = 0;
  for (const gguf::TensorInfo& tensor : output->tensors()) {
    if (!is_expert_name(tensor.name)) continue;
    const gguf::TensorInfo* theirs = llama->find_tensor(tensor.name);
    ASSERT_NE(theirs, nullptr) << tensor.name;
    ASSERT_EQ(theirs->type_id, uint32_t(QuantType::kQ4_0));
    EXPECT_TRUE(std::ranges::equal(bytes_of(*output, tensor), bytes_of(*llama, *theirs)))
        << tensor.name;
    ++n_compared;
  }
  EXPECT_EQ(n_compared, 12);
}

std::vector<float> read_floats(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  const std::string bytes(std::istreambuf_iterator<char>(file), {});
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  return values;
}

// Every position's logits of seq16_en, all experts resident.
std::vector<float> run_seq16(const std::string& path) {
  return testing::resident_logits(path, kSeq16);
}

double rms_difference(std::span<const float> a, std::span<const float> b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) sum += (double(a[i]) - b[i]) * (a[i] - b[i]);
  return std::sqrt(sum / double(a.size()));
}

// The requantized files load and compute. Bound: llama.cpp's own all-Q4_0 model (every matrix
// Q4_0, not just the experts) is 0.314 RMS from its F32 logits on seq16_en (manifest.json
// checks, logit RMS ~2.0); Q4_0 experts alone must stay below that. And they must differ from
// the source's logits, or the experts were not used.
constexpr double kLlamaAllQ4RmsVsF32 = 0.314;

TEST_F(RequantizeTest, RequantizedModelsRunCloseToTheF32Reference) {
  const auto reference =
      read_floats(golden_synthetic("logits/tiny-qwen3moe-f32.seq16_en.logits.bin"));
  ASSERT_EQ(reference.size(), kSeq16.size() * 768);
  for (const std::string& source : {kF32Model, kQ8Model}) {
    SCOPED_TRACE(source);
    const std::string output = path("run.gguf");
    fs::remove(output);
    requantize(source, QuantType::kQ4_0, output);
    const auto before = run_seq16(source);
    const auto after = run_seq16(output);
    ASSERT_EQ(after.size(), reference.size());
    for (const float value : after) ASSERT_TRUE(std::isfinite(value));
    const double rms = rms_difference(after, reference);
    EXPECT_LT(rms, kLlamaAllQ4RmsVsF32);
    EXPECT_GT(rms_difference(after, before), 1e-3);
    std::printf("%s -> Q4_0 experts: logit RMS vs llama.cpp F32 %.4f (source %.4f)\n",
                source.c_str(), rms, rms_difference(before, reference));
  }
}

// Q2_0, Strata's own type: every expert row is the reference quantizer's, the file carries the
// type id above ggml's, and the model runs.
TEST_F(RequantizeTest, F32ToQ2_0WritesTheReferenceQuantizerAndRuns) {
  const auto input = open_gguf(kF32Model);
  const std::string output_path = path("q2_0.gguf");
  const auto output = requantize(kF32Model, QuantType::kQ2_0, output_path);
  ASSERT_TRUE(input && output);
  int n_experts = 0;
  for (size_t i = 0; i < input->tensors().size(); ++i) {
    const gguf::TensorInfo& in = input->tensors()[i];
    if (!is_expert_name(in.name)) continue;
    ++n_experts;
    const gguf::TensorInfo& out = output->tensors()[i];
    EXPECT_EQ(out.type_id, 1000u) << in.name;
    EXPECT_TRUE(std::ranges::equal(reference_requantize(*input, in, QuantType::kQ2_0),
                                   bytes_of(*output, out)))
        << in.name;
  }
  EXPECT_EQ(n_experts, 3 * 4);
  for (const float value : run_seq16(output_path)) ASSERT_TRUE(std::isfinite(value));
}

TEST_F(RequantizeTest, RefusesKQuantsOnRowsNotAMultipleOf256) {
  RequantizeOptions options;
  options.expert_type = QuantType::kQ4_K;
  const auto summary = requantize_model_file(kQ8Model, path("q4_k.gguf"), options);
  ASSERT_FALSE(summary.ok());
  // The first expert tensor in file order (llama-quantize sorts them) is blk.0's down stack.
  EXPECT_EQ(summary.status().message(),
            kQ8Model +
                ": tensor blk.0.ffn_down_exps.weight: row length 64 is not a multiple of "
                "Q4_K's block size 256; choose a format with a smaller block");
  EXPECT_FALSE(fs::exists(path("q4_k.gguf")));
  EXPECT_TRUE(fs::is_empty(dir_));  // no temporary left behind
}

TEST_F(RequantizeTest, RefusesToOverwriteTheInputEvenWithOverwrite) {
  const std::string input = path("input.gguf");
  fs::copy_file(kQ8Model, input);
  const auto size = fs::file_size(input);
  fs::create_symlink(input, path("link.gguf"));
  RequantizeOptions options;
  options.expert_type = QuantType::kQ4_0;
  options.overwrite = true;
  for (const std::string& output : {input, path("link.gguf")}) {
    const auto summary = requantize_model_file(input, output, options);
    ASSERT_FALSE(summary.ok());
    EXPECT_EQ(summary.status().message(), output + ": is an input of this command (the model " +
                                              input + "); refusing to overwrite it");
  }
  EXPECT_EQ(fs::file_size(input), size);
  EXPECT_TRUE(fs::is_symlink(path("link.gguf")));
}

TEST_F(RequantizeTest, ReplacesAnExistingOutputOnlyWhenAsked) {
  const std::string output = path("existing.gguf");
  std::ofstream(output) << "keep me";
  RequantizeOptions options;
  options.expert_type = QuantType::kQ4_0;
  const auto refused = requantize_model_file(kQ8Model, output, options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(), output + ": exists; --force replaces it");
  EXPECT_EQ(fs::file_size(output), 7u);
  options.overwrite = true;
  const auto replaced = requantize_model_file(kQ8Model, output, options);
  ASSERT_TRUE(replaced.ok()) << replaced.status().message();
  EXPECT_EQ(open_gguf(output)->get_string(kRequantizeProvenanceKey).value(), "Q4_0 from Q8_0");
}

TEST_F(RequantizeTest, KeepsEarlierProvenanceAndNamesBadInput) {
  requantize(kQ8Model, QuantType::kQ5_0, path("q5_0.gguf"));
  const auto twice = requantize(path("q5_0.gguf"), QuantType::kQ4_0, path("q4_0.gguf"));
  ASSERT_TRUE(twice);
  EXPECT_EQ(twice->get_string(kRequantizeProvenanceKey).value(),
            "Q4_0 from Q5_0; before: Q5_0 from Q8_0");

  std::ofstream(path("junk.gguf")) << "not a gguf file";
  const auto junk = requantize_model_file(path("junk.gguf"), path("out.gguf"), {});
  ASSERT_FALSE(junk.ok());
  EXPECT_TRUE(junk.status().message().starts_with(path("junk.gguf") + ": "))
      << junk.status().message();
}

}  // namespace
}  // namespace strata

// Test helpers: a scratch directory of JSON Lines documents to draw suites from, and the
// synthetic model whose tokenizer reads them (tests/golden/synthetic: 768 tokens, ChatML).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace strata::eval::testing {

inline const std::string kSyntheticQ8 =
    std::string(STRATA_SOURCE_DIR) + "/tests/golden/synthetic/models/tiny-qwen3moe-q8_0.gguf";
inline const std::string kSyntheticQ4 =
    std::string(STRATA_SOURCE_DIR) + "/tests/golden/synthetic/models/tiny-qwen3moe-q4_0.gguf";
inline const std::string kBundledModel =
    std::string(STRATA_SOURCE_DIR) + "/models/strata-tiny-moe-q4_0.gguf";
inline const std::string kQwen3Vocab =
    std::string(STRATA_SOURCE_DIR) + "/tests/golden/tokenizer/qwen3-vocab.gguf";

inline std::filesystem::path scratch_dir(const std::string& name) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("strata-eval-" + std::to_string(getpid())) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

struct TestDocument {
  std::string id, domain, text;
};

inline void write_jsonl(const std::filesystem::path& path,
                        const std::vector<TestDocument>& documents) {
  std::ofstream out(path, std::ios::binary);
  for (const TestDocument& d : documents)
    out << nlohmann::json{{"id", d.id}, {"domain", d.domain}, {"text", d.text}, {"license", "-"}}
               .dump()
        << "\n";
}

inline std::string prose(int paragraph) {
  static const char* kSentences[] = {
      "The quick brown fox jumps over the lazy dog near the river bank. ",
      "A small boat drifted slowly past the old mill while the children watched. ",
      "Every morning the baker opened his shop before the sun was up. ",
      "They walked along the narrow road until the village lights appeared. ",
      "Rain fell on the roofs of the town through the whole of the long night. "};
  std::string text;
  for (int i = 0; i < 6; ++i) text += kSentences[(paragraph + i) % 5];
  return text;
}

inline std::string chat(int conversation) {
  std::string text;
  for (int turn = 0; turn < 4; ++turn)
    text += "<|im_start|>user\n" + prose(conversation + turn).substr(0, 70) +
            "<|im_end|>\n<|im_start|>assistant\n" + prose(conversation + turn + 2).substr(0, 90) +
            "<|im_end|>\n";
  return text;
}

// prose.jsonl: 3 documents of domain "prose"; chat.jsonl: 2 of domain "chat".
inline std::filesystem::path write_eval_dir(const std::string& name) {
  const auto dir = scratch_dir(name);
  write_jsonl(dir / "prose.jsonl",
              {{"p0", "prose", prose(0)}, {"p1", "prose", prose(1)}, {"p2", "prose", prose(2)}});
  write_jsonl(dir / "chat.jsonl", {{"c0", "chat", chat(0)}, {"c1", "chat", chat(1)}});
  return dir;
}

}  // namespace strata::eval::testing

#include "runtime/vocab.h"

#include "base/check.h"
#include "gguf/gguf_file.h"
#include "runtime/unicode_bytes.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <initializer_list>

namespace strata::runtime {
namespace {

constexpr std::string_view kModelKey = "tokenizer.ggml.model";
constexpr std::string_view kPreKey = "tokenizer.ggml.pre";
constexpr std::string_view kTokensKey = "tokenizer.ggml.tokens";
constexpr std::string_view kTokenTypeKey = "tokenizer.ggml.token_type";
constexpr std::string_view kMergesKey = "tokenizer.ggml.merges";
constexpr std::string_view kAddBosKey = "tokenizer.ggml.add_bos_token";
constexpr std::string_view kChatTemplateKey = "tokenizer.chat_template";

// The "tokenizer.ggml.<name>_token_id" keys we read.
constexpr std::string_view kSpecialIdNames[] = {"bos",     "eos",     "padding", "eot",
                                                "eom",     "fim_pre", "fim_suf", "fim_mid",
                                                "fim_pad", "fim_rep", "fim_sep"};

// Token texts that llama.cpp (llama-vocab.cpp) treats as end of generation whatever the file
// says, making them CONTROL if they are not.
constexpr std::string_view kEndOfGenerationTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",   "<|endoftext|>",
    "<|eom_id|>", "<EOT>",      "_<EOT>",  "<|end_of_text|>", "<end_of_utterance>"};

// Fill-in-the-middle tokens: found by key, else by text (first listed text present); a token
// found by text becomes CONTROL. Pad, repo and file separator also end generation.
struct FimRole {
  std::string_view id_name;
  bool ends_generation;
  std::initializer_list<std::string_view> texts;
};
const FimRole kFimRoles[] = {
    {"fim_pre", false, {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<PRE>"}},
    {"fim_suf", false, {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<SUF>"}},
    {"fim_mid", false, {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<MID>"}},
    {"fim_pad", true, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>"}},
    {"fim_rep", true, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}},
    {"fim_sep", true, {"<|file_sep|>"}},
};

// GGUF token_type values (llama.cpp's llama_token_type) -> attributes; others are undefined (0).
uint8_t attr_from_type(int64_t type) {
  switch (type) {
    case 1:
      return kAttrNormal;
    case 2:
      return kAttrUnknown;
    case 3:
      return kAttrControl;
    case 4:
      return kAttrUserDefined;
    case 5:
      return kAttrUnused;
    case 6:
      return kAttrByte;
    default:
      return 0;
  }
}

}  // namespace

void MergeTable::reserve(size_t n_rules) {
  // At most half full, so a miss (the common lookup) ends after a probe or two.
  const size_t capacity = std::bit_ceil(std::max<size_t>(2 * n_rules, 2));
  slots_.assign(capacity, Slot{kEmptyKey, {}});
  mask_ = capacity - 1;
  shift_ = 64 - std::countr_zero(capacity);
}

void MergeTable::insert(int32_t left, int32_t right, MergeRule rule) {
  const uint64_t key = pack(left, right);
  STRATA_CHECK(key != kEmptyKey);
  for (uint64_t slot = hash(key);; slot = (slot + 1) & mask_) {
    Slot& entry = slots_[slot];
    if (entry.key == key) return;
    if (entry.key == kEmptyKey) {
      entry = Slot{key, rule};
      return;
    }
  }
}

void TextIndex::reserve(size_t n_texts) {
  slots_.assign(std::bit_ceil(std::max<size_t>(2 * n_texts, 64)), 0);
  mask_ = slots_.size() - 1;
  size_ = 0;
}

uint64_t TextIndex::hash_text(std::string_view text) { return std::hash<std::string_view>{}(text); }

void TextIndex::place(uint64_t hash, int32_t id) {
  uint64_t slot = hash & mask_;
  while (slots_[slot] != 0) slot = (slot + 1) & mask_;
  slots_[slot] = (hash >> 32 << 32) | uint32_t(id + 1);
  ++size_;
}

Result<Vocab> Vocab::from_gguf(const gguf::GgufFile& file) {
  VocabSpec spec;
  spec.source = file.name();
  STRATA_ASSIGN_OR_RETURN(spec.model, file.get_string(kModelKey));
  if (file.has(kPreKey)) {
    STRATA_ASSIGN_OR_RETURN(spec.pre, file.get_string(kPreKey));
  }
  STRATA_ASSIGN_OR_RETURN(spec.tokens, file.get_string_array(kTokensKey));
  if (file.has(kTokenTypeKey)) {
    STRATA_ASSIGN_OR_RETURN(spec.token_types, file.get_int_array(kTokenTypeKey));
  }
  if (spec.model == "gpt2") {
    STRATA_ASSIGN_OR_RETURN(spec.merges, file.get_string_array(kMergesKey));
  }
  for (std::string_view name : kSpecialIdNames) {
    const std::string key = fmt::format("tokenizer.ggml.{}_token_id", name);
    if (!file.has(key)) continue;
    STRATA_ASSIGN_OR_RETURN(spec.special_ids[std::string(name)], file.get_int(key));
  }
  if (file.has(kAddBosKey)) {
    STRATA_ASSIGN_OR_RETURN(spec.add_bos, file.get_bool(kAddBosKey));
  }
  if (file.has(kChatTemplateKey)) {
    STRATA_ASSIGN_OR_RETURN(spec.chat_template, file.get_string(kChatTemplateKey));
  }
  return build(std::move(spec));
}

Result<Vocab> Vocab::build(VocabSpec spec) {
  Vocab vocab;
  vocab.source_ = std::move(spec.source);
  if (spec.model != "gpt2") {
    return Status::errorf("{}: tokenizer model '{}' is not supported (only gpt2, byte-level BPE)",
                          vocab.source_, spec.model);
  }
  // Symbol ids (tokens, then up to three new strings per merge and 256 bytes) are int32.
  const uint64_t max_symbols = spec.tokens.size() + 3 * uint64_t(spec.merges.size()) + 256;
  if (spec.tokens.empty() || max_symbols >= uint64_t(INT32_MAX)) {
    return Status::errorf("{}: {} tokens and {} merges: not a vocabulary this tokenizer can index",
                          vocab.source_, spec.tokens.size(), spec.merges.size());
  }
  vocab.pre_tokenizer_ = std::move(spec.pre);
  vocab.tokens_ = std::move(spec.tokens);
  vocab.add_bos_ = spec.add_bos;
  vocab.chat_template_ = std::move(spec.chat_template);
  STRATA_RETURN_IF_ERROR(vocab.index_tokens(spec.token_types));
  STRATA_RETURN_IF_ERROR(vocab.index_merges(spec.merges));
  vocab.resolve_special_tokens(spec.special_ids);
  return vocab;
}

Status Vocab::index_tokens(const std::vector<int64_t>& token_types) {
  if (!token_types.empty() && token_types.size() < tokens_.size()) {
    return Status::errorf("{}: key {}: {} entries for {} tokens", source_, kTokenTypeKey,
                          token_types.size(), tokens_.size());
  }
  attrs_.resize(tokens_.size());
  by_text_.reserve(tokens_.size());
  const auto spell = [this](int32_t id) { return std::string_view(tokens_[id]); };
  for (size_t id = 0; id < tokens_.size(); ++id) {
    // llama.cpp renames empty tokens so that every text is distinct and non-empty.
    if (tokens_[id].empty()) tokens_[id] = fmt::format("[EMPTY_{}]", id);
    attrs_[id] = token_types.empty() ? uint8_t{kAttrNormal} : attr_from_type(token_types[id]);
    const int32_t same = by_text_.find(tokens_[id], spell);
    if (same != kNoToken) {
      return Status::errorf("{}: key {}: tokens {} and {} have the same text", source_, kTokensKey,
                            same, id);
    }
    by_text_.insert(tokens_[id], int32_t(id), spell);
  }
  for (int byte = 0; byte < 256; ++byte) {
    const char text = char(byte);
    single_byte_tokens_[byte] = find(std::string_view(&text, 1));
  }
  return Status();
}

int32_t Vocab::intern(std::string_view text) {
  const auto spell = [this](int32_t symbol) {
    return symbol < size() ? std::string_view(tokens_[symbol]) : extra_symbols_[symbol - size()];
  };
  const int32_t found = by_text_.find(text, spell);
  if (found != kNoToken) return found;
  const int32_t symbol = size() + int32_t(extra_symbols_.size());
  extra_symbols_.emplace_back(text);
  by_text_.insert(extra_symbols_.back(), symbol, spell);
  return symbol;
}

Status Vocab::index_merges(const std::vector<std::string>& merges) {
  merges_.reserve(merges.size());
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string_view merge = merges[rank];
    // Split at the first space after the first character, as llama.cpp does.
    const size_t space = merge.find(' ', 1);
    if (space == std::string_view::npos || space + 1 == merge.size()) {
      return Status::errorf("{}: key {}: merge {} ('{}') is not two symbols", source_, kMergesKey,
                            rank, merge);
    }
    const std::string_view left = merge.substr(0, space);
    const std::string_view right = merge.substr(space + 1);
    joined.assign(left).append(right);
    const int32_t left_symbol = intern(left);
    const int32_t right_symbol = intern(right);
    const int32_t result = intern(joined);
    merges_.insert(left_symbol, right_symbol, MergeRule{int32_t(rank), result});
  }
  for (int byte = 0; byte < 256; ++byte) byte_symbols_[byte] = intern(byte_to_utf8(uint8_t(byte)));
  return Status();
}

int32_t Vocab::find(std::string_view text) const {
  const int32_t symbol =
      by_text_.find(text, [this](int32_t symbol) { return symbol_text(symbol); });
  return contains(symbol) ? symbol : kNoToken;
}

std::string_view Vocab::symbol_text(int32_t symbol) const {
  STRATA_CHECK(symbol >= 0 && symbol < size() + int32_t(extra_symbols_.size()));
  return symbol < size() ? std::string_view(tokens_[symbol]) : extra_symbols_[symbol - size()];
}

bool Vocab::is_eog(int32_t id) const {
  return std::binary_search(eog_ids_.begin(), eog_ids_.end(), id);
}

void Vocab::resolve_special_tokens(const std::unordered_map<std::string, int64_t>& special_ids) {
  // llama.cpp ignores (with a warning) an id outside the vocabulary; so do we.
  auto id_of = [&](std::string_view name) {
    const auto it = special_ids.find(std::string(name));
    if (it == special_ids.end() || it->second < 0 || it->second >= size()) return kNoToken;
    return int32_t(it->second);
  };
  bos_id_ = id_of("bos");
  eos_id_ = id_of("eos");
  pad_id_ = id_of("padding");
  for (std::string_view name : {"eos", "eot", "eom"}) {
    if (const int32_t id = id_of(name); id != kNoToken) eog_ids_.push_back(id);
  }
  for (const FimRole& role : kFimRoles) {
    int32_t id = id_of(role.id_name);
    for (auto text = role.texts.begin(); id == kNoToken && text != role.texts.end(); ++text) {
      id = find(*text);
      if (id != kNoToken) attrs_[id] |= kAttrControl;
    }
    if (id != kNoToken && role.ends_generation) eog_ids_.push_back(id);
  }
  for (std::string_view text : kEndOfGenerationTexts) {
    const int32_t id = find(text);
    if (id == kNoToken) continue;
    attrs_[id] |= kAttrControl;
    eog_ids_.push_back(id);
  }
  std::sort(eog_ids_.begin(), eog_ids_.end());
  eog_ids_.erase(std::unique(eog_ids_.begin(), eog_ids_.end()), eog_ids_.end());

  for (int32_t id = 0; id < size(); ++id) {
    if (attrs_[id] & (kAttrControl | kAttrUserDefined | kAttrUnknown))
      special_tokens_.push_back(id);
  }
  std::stable_sort(special_tokens_.begin(), special_tokens_.end(),
                   [&](int32_t a, int32_t b) { return tokens_[a].size() > tokens_[b].size(); });
}

}  // namespace strata::runtime

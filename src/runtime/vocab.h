// The vocabulary of a byte-level BPE tokenizer, read from GGUF metadata the way llama.cpp reads
// it. Works on vocab-only files (no tensors).
//
// GGUF keys (all optional unless marked):
//   tokenizer.ggml.model           string   "gpt2" (byte-level BPE); required, nothing else taken
//   tokenizer.ggml.pre             string   pre-tokenizer name (pre_tokenizer.h): "qwen2"
//   tokenizer.ggml.tokens          string[] required; index = token id. Normal tokens are spelled
//                                           in the GPT-2 byte alphabet (unicode_bytes.h), special
//                                           ones literally ("<|im_end|>")
//   tokenizer.ggml.token_type      int32[]  per token: 1 normal, 2 unknown, 3 control,
//                                           4 user-defined, 5 unused, 6 byte; absent = all normal
//   tokenizer.ggml.merges          string[] required; "left right", rank = index (lower first)
//   tokenizer.ggml.{bos,eos,padding,eot,eom}_token_id             uint32
//   tokenizer.ggml.fim_{pre,suf,mid,pad,rep,sep}_token_id         uint32
//   tokenizer.ggml.add_bos_token   bool     default false: BOS only if the model asks
//   tokenizer.chat_template        string   Jinja source, kept verbatim (never interpreted)
//
// Like llama.cpp, some tokens are recognised by their text (tables in vocab.cpp): end-of-turn
// and fill-in-the-middle tokens become CONTROL even if the file says otherwise, and the
// end-of-generation set is eos, eot, eom, the FIM pad/repo/file-separator tokens and every
// token spelled like an end-of-turn marker (<|im_end|>, <|endoftext|>, ...).
//
// Thread-safety: a Vocab is immutable after construction; concurrent reads are safe.
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace strata::gguf {
class GgufFile;
}

namespace strata::runtime {

// Token attributes, a bit set as in llama.cpp (a token can be USER_DEFINED and CONTROL).
enum TokenAttr : uint8_t {
  kAttrNormal = 1 << 0,
  kAttrUnknown = 1 << 1,
  kAttrControl = 1 << 2,
  kAttrUserDefined = 1 << 3,
  kAttrUnused = 1 << 4,
  kAttrByte = 1 << 5,
};

inline constexpr int32_t kNoToken = -1;

// What the tokenizer.* keys of a GGUF file hold; tests build one by hand.
struct VocabSpec {
  std::string source;  // file name, for error messages
  std::string model;   // tokenizer.ggml.model
  std::string pre;     // tokenizer.ggml.pre
  std::vector<std::string> tokens;
  std::vector<int64_t> token_types;  // empty: all normal
  std::vector<std::string> merges;
  // Ids from the *_token_id keys, keyed by the part between "tokenizer.ggml." and "_token_id"
  // ("bos", "eos", "padding", "eot", "eom", "fim_pre", ...).
  std::unordered_map<std::string, int64_t> special_ids;
  bool add_bos = false;
  std::string chat_template;
};

// A merge: the adjacent symbols (left, right) become `result`; lower rank merges first.
struct MergeRule {
  int32_t rank;
  int32_t result;
};

// (left symbol, right symbol) -> MergeRule, open addressing: BPE looks a pair up for every
// adjacent pair of every word, so this is the tokenizer's hottest table.
class MergeTable {
 public:
  void reserve(size_t n_rules);
  // Keeps the first rule for a pair, as llama.cpp does.
  void insert(int32_t left, int32_t right, MergeRule rule);
  // Starts loading the slot find(left, right) reads first: a word's pair lookups are
  // independent, and issuing their cache misses together overlaps them.
  void prefetch(int32_t left, int32_t right) const {
    __builtin_prefetch(&slots_[hash(pack(left, right))]);
  }
  const MergeRule* find(int32_t left, int32_t right) const {
    const uint64_t key = pack(left, right);
    for (uint64_t slot = hash(key);; slot = (slot + 1) & mask_) {
      const Slot& entry = slots_[slot];
      if (entry.key == key) return &entry.rule;
      if (entry.key == kEmptyKey) return nullptr;
    }
  }

 private:
  struct Slot {
    uint64_t key;
    MergeRule rule;
  };
  static constexpr uint64_t kEmptyKey = ~uint64_t{0};
  static uint64_t pack(int32_t left, int32_t right) {
    return (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
  }
  uint64_t hash(uint64_t key) const { return (key * 0x9E3779B97F4A7C15ull) >> shift_; }

  // capacity 2^k: probes start at the top k bits of the hash
  std::vector<Slot> slots_ = {Slot{kEmptyKey, {}}, Slot{kEmptyKey, {}}};
  uint64_t mask_ = 1;
  int shift_ = 63;
};

// Text -> id for texts stored elsewhere: open addressing over (hash tag, id) slots, so loading
// a 151k-token vocabulary allocates no node per token. Callers pass `spell`, the function that
// returns the text of an id.
class TextIndex {
 public:
  template <class Spell>
  int32_t find(std::string_view text, const Spell& spell) const {
    if (slots_.empty()) return kNoToken;
    const uint64_t hash = hash_text(text);
    for (uint64_t slot = hash & mask_;; slot = (slot + 1) & mask_) {
      const uint64_t entry = slots_[slot];
      if (entry == 0) return kNoToken;
      if (uint32_t(entry >> 32) == uint32_t(hash >> 32) && spell(id_of(entry)) == text) {
        return id_of(entry);
      }
    }
  }
  // REQUIRES: `text` (= spell(id)) is not in the index.
  template <class Spell>
  void insert(std::string_view text, int32_t id, const Spell& spell) {
    if (2 * (size_ + 1) > slots_.size()) {
      const std::vector<uint64_t> old = std::exchange(slots_, {});
      slots_.assign(std::max<size_t>(2 * old.size(), 64), 0);
      mask_ = slots_.size() - 1;
      size_ = 0;
      for (const uint64_t entry : old) {
        if (entry != 0) place(hash_text(spell(id_of(entry))), id_of(entry));
      }
    }
    place(hash_text(text), id);
  }
  void reserve(size_t n_texts);

 private:
  static uint64_t hash_text(std::string_view text);
  static int32_t id_of(uint64_t entry) { return int32_t(uint32_t(entry)) - 1; }
  void place(uint64_t hash, int32_t id);

  std::vector<uint64_t> slots_;  // hash tag << 32 | (id + 1); 0 = empty
  uint64_t mask_ = 0;
  size_t size_ = 0;
};

class Vocab {
 public:
  // Reads the keys above. Errors name the file and the key.
  static Result<Vocab> from_gguf(const gguf::GgufFile& file);
  // Validates and indexes a spec: refuses a model other than gpt2, a token_type list shorter
  // than the token list, duplicate token texts and merges that are not two symbols.
  static Result<Vocab> build(VocabSpec spec);

  const std::string& source() const { return source_; }
  const std::string& pre_tokenizer() const { return pre_tokenizer_; }
  int32_t size() const { return int32_t(tokens_.size()); }
  bool contains(int32_t id) const { return id >= 0 && id < size(); }
  // REQUIRES: contains(id)
  const std::string& text(int32_t id) const { return tokens_[id]; }
  uint8_t attr(int32_t id) const { return attrs_[id]; }
  // The token spelled `text` (vocabulary spelling), or kNoToken.
  int32_t find(std::string_view text) const;

  int32_t bos_id() const { return bos_id_; }
  int32_t eos_id() const { return eos_id_; }
  int32_t pad_id() const { return pad_id_; }
  bool add_bos() const { return add_bos_; }
  bool is_eog(int32_t id) const;
  const std::vector<int32_t>& eog_ids() const { return eog_ids_; }
  const std::string& chat_template() const { return chat_template_; }
  // CONTROL, USER_DEFINED and UNKNOWN tokens, longest text first (ties: lower id first); the
  // order in which the tokenizer looks for them in raw text.
  const std::vector<int32_t>& special_tokens() const { return special_tokens_; }

  // BPE works on symbols: every token id, plus ids from size() up for strings that merges
  // produce or consume but that are not tokens themselves.
  // The symbol a single input byte starts as.
  int32_t byte_symbol(uint8_t byte) const { return byte_symbols_[byte]; }
  const MergeRule* find_merge(int32_t left, int32_t right) const {
    return merges_.find(left, right);
  }
  void prefetch_merge(int32_t left, int32_t right) const { merges_.prefetch(left, right); }
  // Vocabulary spelling of a symbol. REQUIRES: a valid symbol id.
  std::string_view symbol_text(int32_t symbol) const;
  // The token spelled by the single byte `byte`, or kNoToken (llama.cpp's fallback for a
  // symbol that is not a token emits these for each byte of its spelling).
  int32_t single_byte_token(uint8_t byte) const { return single_byte_tokens_[byte]; }

 private:
  Vocab() = default;
  Status index_tokens(const std::vector<int64_t>& token_types);
  Status index_merges(const std::vector<std::string>& merges);
  void resolve_special_tokens(const std::unordered_map<std::string, int64_t>& special_ids);
  int32_t intern(std::string_view text);

  std::string source_;
  std::string pre_tokenizer_;
  std::vector<std::string> tokens_;
  std::vector<uint8_t> attrs_;
  TextIndex by_text_;  // tokens and extra symbols
  std::vector<std::string> extra_symbols_;
  MergeTable merges_;
  int32_t byte_symbols_[256] = {};
  int32_t single_byte_tokens_[256] = {};

  int32_t bos_id_ = kNoToken;
  int32_t eos_id_ = kNoToken;
  int32_t pad_id_ = kNoToken;
  bool add_bos_ = false;
  std::vector<int32_t> eog_ids_;  // sorted
  std::vector<int32_t> special_tokens_;
  std::string chat_template_;
};

}  // namespace strata::runtime

#include "runtime/tokenizer.h"

#include "base/check.h"
#include "gguf/gguf_file.h"
#include "runtime/unicode_bytes.h"

#include <algorithm>
#include <bit>
#include <charconv>

namespace strata::runtime {
namespace {

// A symbol of the word being merged; symbols form a linked list indexed by the position of
// their first byte, so a symbol at index i covers bytes [i, next).
struct Symbol {
  int32_t id;  // kDeadSymbol once merged into its left neighbour
  int32_t prev;
  int32_t next;
};
constexpr int32_t kDeadSymbol = -1;
constexpr int32_t kNoLink = -1;

// A merge that was possible when queued; stale once either side has changed.
struct Candidate {
  int32_t rank;
  int32_t left;
  int32_t right;
  int32_t left_id;
  int32_t right_id;
  int32_t result;
};

// Heap order: lowest rank first, then leftmost (llama.cpp's llm_bigram_bpe::comparator).
struct ComesLater {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

// Words already merged in this encode() call, direct-mapped: natural text repeats its words
// (Zipf), and a hit copies earlier output instead of looking up a merge per symbol pair.
class WordCache {
 public:
  // Texts shorter than this gain less than the table costs to set up.
  static constexpr size_t kMinTextBytes = 256;

  explicit WordCache(size_t text_bytes)
      : entries_(text_bytes < kMinTextBytes
                     ? 0
                     : std::bit_ceil(std::clamp<size_t>(text_bytes / 16, 256, 65536))) {}

  // Appends the tokens of `word` to `ids` if cached; REQUIRES `word` views the text given to
  // every earlier lookup, which outlives the cache.
  bool append_cached(std::string_view word, std::vector<int32_t>* ids) const {
    if (entries_.empty()) return false;
    const Entry& entry = entries_[slot(word)];
    if (entry.word != word) return false;
    for (uint32_t i = 0; i < entry.count; ++i) ids->push_back((*ids)[entry.first + i]);
    return true;
  }
  // Records that `word` produced ids[first, ids.size()).
  void remember(std::string_view word, size_t first, const std::vector<int32_t>& ids) {
    if (!entries_.empty())
      entries_[slot(word)] = {word, uint32_t(first), uint32_t(ids.size() - first)};
  }

 private:
  struct Entry {
    std::string_view word;
    uint32_t first = 0;
    uint32_t count = 0;
  };
  size_t slot(std::string_view word) const {
    return std::hash<std::string_view>{}(word) & (entries_.size() - 1);
  }
  std::vector<Entry> entries_;
};

// llama.cpp spells byte tokens "<0xAB>".
int byte_token_value(std::string_view text) {
  if (text.size() != 6 || !text.starts_with("<0x") || text.back() != '>') return -1;
  int value = 0;
  const auto [end, error] = std::from_chars(text.data() + 3, text.data() + 5, value, 16);
  return error == std::errc() && end == text.data() + 5 ? value : -1;
}

// Appends the bytes a token decodes to (llama.cpp's token_to_piece with special = true).
void append_piece(const Vocab& vocab, int32_t id, std::string* out) {
  const std::string& text = vocab.text(id);
  const uint8_t attr = vocab.attr(id);
  if (attr & (kAttrControl | kAttrUnknown | kAttrUserDefined)) {
    out->append(text);
  } else if (attr & kAttrNormal) {
    for (size_t pos = 0; pos < text.size();) {
      if (const uint8_t ascii = uint8_t(text[pos]); ascii >= 0x21 && ascii <= 0x7E) {
        out->push_back(char(ascii));  // printable ASCII stands for itself
        ++pos;
        continue;
      }
      const LenientCodepoint read = decode_utf8_lenient(text, pos);
      const int byte = byte_from_codepoint(read.codepoint);
      // llama.cpp writes "[UNK_BYTE_0x..]" for a character outside the byte alphabet; a
      // vocabulary with such a token is malformed, and keeping the character is kinder.
      if (byte >= 0) {
        out->push_back(char(byte));
      } else {
        out->append(text, pos, read.n_bytes);
      }
      pos += read.n_bytes;
    }
  } else if (attr & kAttrByte) {
    const int byte = byte_token_value(text);
    if (byte >= 0) out->push_back(char(byte));
  }
}

}  // namespace

// Buffers reused across the words of one encode() call.
struct Tokenizer::Scratch {
  explicit Scratch(size_t text_bytes) : cache(text_bytes) {}
  WordCache cache;  // views words of the text given to encode()
  std::vector<size_t> word_ends;
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap;
};

Tokenizer::Tokenizer(Vocab vocab, PreTokenizer pre_tokenizer)
    : vocab_(std::move(vocab)), pre_tokenizer_(std::move(pre_tokenizer)) {
  build_pieces();
}

Result<Tokenizer> Tokenizer::from_gguf(const gguf::GgufFile& file) {
  STRATA_ASSIGN_OR_RETURN(Vocab vocab, Vocab::from_gguf(file));
  return from_vocab(std::move(vocab));
}

Result<Tokenizer> Tokenizer::from_vocab(Vocab vocab) {
  if (vocab.pre_tokenizer().empty()) {
    return Status::errorf("{}: key tokenizer.ggml.pre: missing (the pre-tokenizer is required)",
                          vocab.source());
  }
  Result<PreTokenizer> pre_tokenizer = PreTokenizer::create(vocab.pre_tokenizer());
  if (!pre_tokenizer.ok()) return pre_tokenizer.status().with_prefix(vocab.source());
  return Tokenizer(std::move(vocab), std::move(pre_tokenizer).value());
}

void Tokenizer::build_pieces() {
  piece_offsets_.reserve(size_t(vocab_.size()) + 1);
  piece_offsets_.push_back(0);
  for (int32_t id = 0; id < vocab_.size(); ++id) {
    append_piece(vocab_, id, &piece_bytes_);
    STRATA_CHECK_LE(piece_bytes_.size(), size_t(UINT32_MAX));
    piece_offsets_.push_back(uint32_t(piece_bytes_.size()));
  }
}

std::string_view Tokenizer::decode_piece(int32_t id) const {
  STRATA_CHECK(vocab_.contains(id));
  return std::string_view(piece_bytes_)
      .substr(piece_offsets_[id], piece_offsets_[id + 1] - piece_offsets_[id]);
}

Result<std::string> Tokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
  std::string text;
  for (const int32_t id : ids) {
    if (!vocab_.contains(id)) {
      return Status::errorf("{}: token id {} is outside the vocabulary (0..{})", vocab_.source(),
                            id, vocab_.size() - 1);
    }
    if (!render_special && (vocab_.attr(id) & (kAttrControl | kAttrUnknown))) continue;
    text += decode_piece(id);
  }
  return text;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool parse_special) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  Scratch scratch(text.size());
  for (const Fragment& fragment : cut_special_tokens(text, parse_special)) {
    if (fragment.token != kNoToken) {
      ids.push_back(fragment.token);
    } else {
      encode_text(text.substr(fragment.begin, fragment.end - fragment.begin), &scratch, &ids);
    }
  }
  return ids;
}

std::vector<Tokenizer::Fragment> Tokenizer::cut_special_tokens(std::string_view text,
                                                               bool parse_special) const {
  std::vector<Fragment> fragments;
  if (!text.empty()) fragments.push_back({0, text.size(), kNoToken});
  std::vector<Fragment> next;
  for (const int32_t id : vocab_.special_tokens()) {
    if (!parse_special && (vocab_.attr(id) & (kAttrControl | kAttrUnknown))) continue;
    const std::string_view special = vocab_.text(id);
    if (text.find(special) == std::string_view::npos) continue;
    next.clear();
    for (const Fragment& fragment : fragments) {
      if (fragment.token != kNoToken) {
        next.push_back(fragment);
        continue;
      }
      // Occurrences must lie inside the fragment, so search a view that ends with it.
      const std::string_view window = text.substr(0, fragment.end);
      size_t begin = fragment.begin;
      for (size_t match = window.find(special, begin); match != std::string_view::npos;
           match = window.find(special, begin)) {
        if (match > begin) next.push_back({begin, match, kNoToken});
        next.push_back({match, match + special.size(), id});
        begin = match + special.size();
      }
      if (begin < fragment.end) next.push_back({begin, fragment.end, kNoToken});
    }
    fragments.swap(next);
  }
  return fragments;
}

void Tokenizer::encode_text(std::string_view raw, Scratch* scratch,
                            std::vector<int32_t>* ids) const {
  std::string repaired;
  std::string_view text = raw;
  if (!is_strict_utf8(raw)) {
    repaired = repair_utf8(raw);
    text = repaired;
  }
  // The cache keeps views of words, so only words of the caller's text may enter it.
  const bool cacheable = repaired.empty();
  scratch->word_ends.clear();
  pre_tokenizer_.split(text, &scratch->word_ends);
  size_t begin = 0;
  for (const size_t end : scratch->word_ends) {
    const std::string_view word = text.substr(begin, end - begin);
    begin = end;
    if (word.size() == 1 || !cacheable) {
      encode_word(word, scratch, ids);
    } else if (!scratch->cache.append_cached(word, ids)) {
      const size_t first = ids->size();
      encode_word(word, scratch, ids);
      scratch->cache.remember(word, first, *ids);
    }
  }
}

void Tokenizer::encode_word(std::string_view word, Scratch* scratch,
                            std::vector<int32_t>* ids) const {
  const auto n = int32_t(word.size());
  if (n == 1) {
    emit_symbol(vocab_.byte_symbol(uint8_t(word[0])), word, ids);
    return;
  }
  std::vector<Symbol>& symbols = scratch->symbols;
  std::vector<Candidate>& heap = scratch->heap;
  symbols.resize(size_t(n));
  for (int32_t i = 0; i < n; ++i) {
    symbols[i] = {vocab_.byte_symbol(uint8_t(word[i])), i - 1, i + 1 < n ? i + 1 : kNoLink};
  }
  heap.clear();
  auto queue = [&](int32_t left, int32_t right) {
    const MergeRule* rule = vocab_.find_merge(symbols[left].id, symbols[right].id);
    if (rule == nullptr) return;
    heap.push_back({rule->rank, left, right, symbols[left].id, symbols[right].id, rule->result});
    std::push_heap(heap.begin(), heap.end(), ComesLater());
  };
  for (int32_t i = 0; i + 1 < n; ++i) vocab_.prefetch_merge(symbols[i].id, symbols[i + 1].id);
  for (int32_t i = 0; i + 1 < n; ++i) queue(i, i + 1);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), ComesLater());
    const Candidate merge = heap.back();
    heap.pop_back();
    Symbol& left = symbols[merge.left];
    Symbol& right = symbols[merge.right];
    // A live, unchanged left symbol still has the same right neighbour: only merging into it
    // changes its `next`, and that changes its id too.
    if (left.id != merge.left_id || right.id != merge.right_id) continue;
    left.id = merge.result;
    right.id = kDeadSymbol;
    left.next = right.next;
    if (left.next != kNoLink) symbols[left.next].prev = merge.left;
    if (left.prev != kNoLink) queue(left.prev, merge.left);
    if (left.next != kNoLink) queue(merge.left, left.next);
  }
  for (int32_t i = 0; i != kNoLink; i = symbols[i].next) {
    const int32_t end = symbols[i].next == kNoLink ? n : symbols[i].next;
    emit_symbol(symbols[i].id, word.substr(i, end - i), ids);
  }
}

void Tokenizer::emit_symbol(int32_t symbol, std::string_view bytes,
                            std::vector<int32_t>* ids) const {
  if (vocab_.contains(symbol)) {
    ids->push_back(symbol);
    return;
  }
  // llama.cpp: a symbol that is no token becomes the tokens spelled by single bytes of its
  // spelling, skipping bytes no token spells.
  for (const char byte : bytes) {
    for (const char spelled : byte_to_utf8(uint8_t(byte))) {
      const int32_t token = vocab_.single_byte_token(uint8_t(spelled));
      if (token != kNoToken) ids->push_back(token);
    }
  }
}

}  // namespace strata::runtime

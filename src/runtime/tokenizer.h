// Byte-level BPE tokenizer, llama.cpp-compatible (tokenizer.ggml.model "gpt2"; pre-tokenizers
// in pre_tokenizer.cpp's table).
//
// Encoding, in llama.cpp's order:
//   1. Special tokens written literally in the text are cut out first: the vocabulary's
//      special tokens are tried longest first, each splitting every remaining stretch of text
//      at its non-overlapping occurrences, left to right.
//   2. Each stretch between them is repaired (invalid UTF-8 -> U+FFFD, repair_utf8) and cut
//      into words by the pre-tokenizer regex.
//   3. Each word's bytes start as single-byte symbols (GPT-2 byte alphabet) and the pair with
//      the lowest merge rank is merged, leftmost first on ties, until no pair has a merge.
//   4. A final symbol that is not a token falls back to the tokens of its single bytes, if any.
//
// Thread-safety: a Tokenizer is immutable after construction; all methods may run concurrently.
#pragma once

#include <strata/status.h>

#include "runtime/pre_tokenizer.h"
#include "runtime/vocab.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strata::gguf {
class GgufFile;
}

namespace strata::runtime {

class Tokenizer {
 public:
  // Errors name the file: a missing key, a model other than gpt2, an unsupported pre-tokenizer.
  static Result<Tokenizer> from_gguf(const gguf::GgufFile& file);
  static Result<Tokenizer> from_vocab(Vocab vocab);

  // Text -> token ids; any bytes are accepted. Never adds BOS: callers prepend bos_id() when
  // add_bos(). With `parse_special`, the texts of CONTROL, USER_DEFINED and UNKNOWN tokens
  // become their ids; without it only USER_DEFINED ones do (as in llama.cpp and HF tokenizers,
  // e.g. Qwen3's <think>), so user text cannot forge <|im_start|>.
  std::vector<int32_t> encode(std::string_view text, bool parse_special) const;

  // Token ids -> bytes. Special tokens appear as their text unless !render_special, which
  // drops CONTROL and UNKNOWN ones. Fails for an id outside the vocabulary.
  Result<std::string> decode(std::span<const int32_t> ids, bool render_special = true) const;
  // The bytes of one token, special tokens as their text; for streaming (see Utf8Stream in
  // unicode_bytes.h). REQUIRES: 0 <= id < token_count().
  std::string_view decode_piece(int32_t id) const;

  int32_t token_count() const { return vocab_.size(); }
  bool is_eog(int32_t id) const { return vocab_.is_eog(id); }
  int32_t bos_id() const { return vocab_.bos_id(); }  // kNoToken if the model has none
  int32_t eos_id() const { return vocab_.eos_id(); }
  bool add_bos() const { return vocab_.add_bos(); }
  // The model's Jinja template, verbatim (chat_template.h formats ChatML without it).
  const std::string& chat_template() const { return vocab_.chat_template(); }
  const Vocab& vocab() const { return vocab_; }

 private:
  struct Fragment {
    size_t begin;
    size_t end;
    int32_t token;  // a special token, or kNoToken for the text [begin, end)
  };
  struct Scratch;

  Tokenizer(Vocab vocab, PreTokenizer pre_tokenizer);
  void build_pieces();
  std::vector<Fragment> cut_special_tokens(std::string_view text, bool parse_special) const;
  void encode_text(std::string_view raw, Scratch* scratch, std::vector<int32_t>* ids) const;
  void encode_word(std::string_view word, Scratch* scratch, std::vector<int32_t>* ids) const;
  void emit_symbol(int32_t symbol, std::string_view bytes, std::vector<int32_t>* ids) const;

  Vocab vocab_;
  PreTokenizer pre_tokenizer_;
  // decode_piece(id) = piece_bytes_[piece_offsets_[id], piece_offsets_[id + 1])
  std::string piece_bytes_;
  std::vector<uint32_t> piece_offsets_;
};

}  // namespace strata::runtime

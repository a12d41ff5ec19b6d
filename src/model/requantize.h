// Rewriting a model file's routed experts in another tensor format (`strata quantize`), so
// that what each expert format costs in quality and speed can be measured on the same model.
//
// Which tensors are routed experts is the architecture's decision: the file is bound with
// Model::describe() and the tensors at the offsets of its ExpertLayout (the stacked
// blk.N.ffn_{gate,up,down}_exps) are rewritten. Every other tensor (embeddings, attention,
// norms, routers, shared experts) and every metadata key are copied byte for byte, in the
// file's order; the key kRequantizeProvenanceKey records what was done. Rows that a file from
// `strata repack --grouped` stores in row groups are written in the GGUF order again, and the
// output does not carry model/tensor_data.h's kQ4_0RowGroupsKey.
//
// Each expert row is dequantized with the source format's reference dequantizer and quantized
// with the target's reference quantizer (quant_traits.cpp): out = quantize(dequantize(in)).
// Starting from a Q8_0 file quantizes twice (F16 -> Q8_0 by whoever made the file, Q8_0 ->
// target here); that is what a user without the F16 original has, and its error is the Q8_0
// error plus the target's. A target whose block size does not divide an expert tensor's row
// length (K-quants and IQ4_XS need multiples of 256) is refused before anything is written;
// no tensor silently keeps or changes its format.
//
// The output is written tensor by tensor (GgufWriter: temporary file, fsync, rename), so
// memory stays at one chunk of output rows whatever the model's size.
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "quant/quant_type.h"

namespace strata {

class ProgressBar;

// Metadata key holding e.g. "Q5_0 from Q8_0" (earlier requantizations are kept after "; ").
inline constexpr std::string_view kRequantizeProvenanceKey = "strata.quantize.experts";

enum class ExpertMatrix { kGate, kUp, kDown };

// The importance of each input channel of one expert's slice for the quantizer (the mean square
// of what that channel carries: calib/expert_calibration.h), or an empty span for none. Only
// Q2_0 has a weighted quantizer (quantize_row_q2_0_weighted). A non-empty span holds one
// non-negative value per element of a row.
using ExpertImportance =
    std::function<std::span<const float>(int layer, ExpertMatrix matrix, int expert)>;

struct RequantizeOptions {
  QuantType expert_type = QuantType::kQ8_0;
  ExpertImportance importance;      // REQUIRES: empty unless expert_type is Q2_0
  int n_threads = 0;                // 0: one per core
  bool overwrite = false;           // replace an existing output file (never the input)
  ProgressBar* progress = nullptr;  // advanced by the bytes of each tensor written; may be null
};

struct RequantizeSummary {
  int n_expert_tensors = 0;
  uint64_t expert_bytes_in = 0;   // the routed experts in the input
  uint64_t expert_bytes_out = 0;  // and in the output
  uint64_t tensor_bytes_out = 0;  // every tensor of the output
  std::string provenance;         // the value written under kRequantizeProvenanceKey
};

// Declares `input`'s metadata and tensors in `writer` (experts in options.expert_type), then
// begins it and writes every tensor. The caller calls writer.finish(). Errors name the input
// (a tensor the target cannot hold, an unbindable model) or the output (I/O).
// REQUIRES: nothing was added to `writer` yet.
Result<RequantizeSummary> requantize_experts(std::shared_ptr<const gguf::GgufFile> input,
                                             const RequantizeOptions& options,
                                             gguf::GgufWriter& writer);

// File to file, by the rule of base/output_path.h: never over a file of the input (even with
// overwrite), over an existing `output_path` only with options.overwrite; `output_path`
// appears complete or not at all.
Result<RequantizeSummary> requantize_model_file(const std::string& input_path,
                                                const std::string& output_path,
                                                const RequantizeOptions& options);

}  // namespace strata

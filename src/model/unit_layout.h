// Rewriting a model file in the unit layout (`strata repack`): the same tensors' bytes, with
// each layer's routed experts stored as one tensor per expert and slice,
// blk.N.ffn_{gate,up,down}.E.weight, written unit after unit (gate, up, down of expert 0, then
// of expert 1, ...), so that the expert store reads a unit with one request instead of three
// far-apart ones (experts/expert_layout.h). Nothing is converted: every slice's bytes, every
// dense tensor and every metadata key are copied unchanged, and the model computes the same
// logits, bit for bit, from either file. The one exception is asked for: --grouped stores Q4_0
// rows in the order the AVX-512 kernel reads (RepackOptions::grouped_rows), still the same
// weights and logits.
//
// Small units gain the most: strata-tiny-moe's 40.5 KiB units are three 13.5 KiB reads in a
// stacked file, and reads that small are bound by the disk's reads per second, not its
// bandwidth. The unit layout is Strata's: llama.cpp binds a qwen3moe or qwen2moe model's
// experts only as stacks, so keep the original file for other tools.
//
// The way back, for other tools, is the stacked layout: each layer's experts as the three
// tensors blk.N.ffn_{gate,up,down}_exps.weight again.
//
// Dense tensors come first, in the input's order, then the experts layer by layer. The output
// is written tensor by tensor (GgufWriter: temporary file, fsync, rename).
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <memory>
#include <string>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"

namespace strata {

class ProgressBar;

enum class ExpertFileLayout {
  kUnits,    // one tensor per expert and slice, unit after unit
  kStacked,  // three tensors per layer, as llama.cpp writes them
};

struct RepackOptions {
  ExpertFileLayout layout = ExpertFileLayout::kUnits;
  // Store Q4_0 matrices in row groups (cpu/kernels/q4_0_groups.h, model/tensor_data.h), the order
  // the AVX-512 kernel reads: nothing to group when loading or after each read of an expert.
  // Only Strata reads such a file; without it, rows are written in the GGUF order.
  bool grouped_rows = false;
  bool overwrite = false;  // replace an existing output (never the input)
};

struct RepackSummary {
  int n_units = 0;
  uint64_t unit_bytes = 0;    // bytes of one unit of layer 0
  uint64_t expert_bytes = 0;  // all units
  uint64_t tensor_bytes = 0;  // every tensor of the output
};

// Declares `input`'s metadata and tensors in `writer` with the experts in `options.layout`,
// begins it and writes every tensor; the caller calls writer.finish(). `progress` (may be null)
// advances by the bytes of each tensor written. REQUIRES: nothing was added to `writer` yet.
Result<RepackSummary> write_expert_layout(std::shared_ptr<const gguf::GgufFile> input,
                                          const RepackOptions& options, gguf::GgufWriter& writer,
                                          ProgressBar* progress);

// Opens `input_path`, writes `output_path` as `options` say, by the rule of base/output_path.h:
// never over a file of the input, over an existing output only with `options.overwrite`.
Result<RepackSummary> repack_model_file(const std::string& input_path,
                                        const std::string& output_path,
                                        const RepackOptions& options, ProgressBar* progress);

}  // namespace strata

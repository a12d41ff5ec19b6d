#include "model/requantize.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <span>
#include <vector>

#include "base/check.h"
#include "base/interrupt.h"
#include "base/output_path.h"
#include "base/progress.h"
#include "cpu/kernels/format_kernels.h"
#include "cpu/kernels/q4_0_groups.h"
#include "cpu/thread_pool.h"
#include "gguf/tensor_types.h"
#include "model/model.h"
#include "model/tensor_data.h"
#include "quant/q2_0.h"

namespace strata {
namespace {

// Output bytes requantized per write: 8 MiB keeps memory flat on a 100 GB model and still
// gives each thread hundreds of rows per parallel_for (a row of 2048 Q4_0 weights is 1152 B).
constexpr uint64_t kChunkBytes = uint64_t(8) << 20;

std::string_view type_name(uint32_t type_id) {
  const gguf::TensorTypeInfo* info = gguf::find_tensor_type(type_id);
  return info ? info->name : std::string_view("?");
}

// "Q4_0 from Q8_0", "Q4_0 from Q5_0+Q8_0" for mixed sources, and what an earlier run recorded.
Result<std::string> provenance(const gguf::GgufFile& input, QuantType target,
                               const std::vector<uint32_t>& source_types) {
  std::string sources;
  for (const uint32_t id : source_types)
    sources += fmt::format("{}{}", sources.empty() ? "" : "+", type_name(id));
  std::string text = fmt::format("{} from {}", type_name(uint32_t(target)), sources);
  if (input.has(kRequantizeProvenanceKey)) {
    STRATA_ASSIGN_OR_RETURN(const std::string earlier, input.get_string(kRequantizeProvenanceKey));
    text += "; before: " + earlier;
  }
  return text;
}

// Where an expert tensor's rows belong: its layer and matrix, and the expert of its first row
// (0 for a stack of every expert, the expert itself in the unit layout).
struct ExpertSlices {
  int layer = 0;
  ExpertMatrix matrix = ExpertMatrix::kGate;
  int first_expert = 0;
  int64_t rows_per_expert = 1;
};

std::map<uint64_t, ExpertSlices> expert_slices(const ExpertLayout& layout) {
  std::map<uint64_t, ExpertSlices> slices;
  for (int l = 0; l < layout.n_layer(); ++l) {
    const LayerExpertLayout& layer = layout.layers[size_t(l)];
    const std::pair<const ExpertTensorLayout*, ExpertMatrix> matrices[] = {
        {&layer.gate, ExpertMatrix::kGate},
        {&layer.up, ExpertMatrix::kUp},
        {&layer.down, ExpertMatrix::kDown}};
    for (const auto& [t, matrix] : matrices)
      for (int e = int(t->file_offsets.size()) - 1; e >= 0; --e)
        slices[t->file_offsets[size_t(e)]] = {l, matrix, e, t->n_out};
  }
  return slices;
}

struct Requantizer {
  const gguf::GgufFile& input;
  const QuantTraits& target;
  ThreadPool& pool;
  gguf::GgufWriter& writer;
  ProgressBar* progress;
  std::vector<std::vector<float>> scratch;  // one dequantized row per thread
  std::vector<uint8_t> buffer;              // one chunk of output rows
  std::vector<uint8_t> ungrouped;           // one chunk of input rows, where the file groups them

  // Rows are independent, so any thread may take any row and the bytes never depend on the
  // thread count.
  Status write(const gguf::TensorInfo& tensor, const ExpertSlices& slices,
               const ExpertImportance& importance) {
    const QuantTraits& source = quant_traits(QuantType(tensor.type_id));
    const int64_t row_length = tensor.shape[0];
    const int64_t n_rows = tensor.n_elements() / row_length;
    const size_t source_row_bytes = source.row_bytes(row_length);
    const size_t target_row_bytes = target.row_bytes(row_length);
    // Whole row groups per chunk, so that grouped input ungroups chunk by chunk.
    const int64_t chunk_rows =
        std::max<int64_t>(1, int64_t(kChunkBytes / target_row_bytes) / kQ4_0GroupRows) *
        kQ4_0GroupRows;
    const bool grouped = grouped_in_file(input, tensor);
    const QuantizeRowFn quantize_row = format_kernels(target.type).quantize_row;
    for (auto& row : scratch) row.resize(size_t(row_length));
    for (int64_t first = 0; first < n_rows; first += chunk_rows) {
      const int64_t n = std::min(chunk_rows, n_rows - first);
      const uint8_t* source_rows = input.tensor_data(tensor) + size_t(first) * source_row_bytes;
      if (grouped) {
        ungrouped.assign(source_rows, source_rows + size_t(n) * source_row_bytes);
        ungroup_q4_0_rows(ungrouped.data(), row_length, n);
        source_rows = ungrouped.data();
      }
      buffer.resize(size_t(n) * target_row_bytes);
      pool.parallel_for(n, [&](int64_t row, int thread) {
        // The workers stop too: the chunk is then dropped (write_tensor_data fails).
        if (interrupted()) return;
        float* values = scratch[size_t(thread)].data();
        source.dequantize_row(source_rows + size_t(row) * source_row_bytes, values, row_length);
        uint8_t* out = buffer.data() + size_t(row) * target_row_bytes;
        const std::span<const float> weights =
            importance
                ? importance(slices.layer, slices.matrix,
                             slices.first_expert + int((first + row) / slices.rows_per_expert))
                : std::span<const float>();
        STRATA_CHECK(weights.empty() || int64_t(weights.size()) == row_length);
        if (weights.empty())
          quantize_row(values, out, row_length);
        else
          quantize_row_q2_0_weighted(values, weights.data(), out, row_length);
      });
      STRATA_RETURN_IF_ERROR(writer.write_tensor_data(buffer));
      if (progress) progress->advance(buffer.size());
    }
    return Status();
  }
};

}  // namespace

Result<RequantizeSummary> requantize_experts(std::shared_ptr<const gguf::GgufFile> input,
                                             const RequantizeOptions& options,
                                             gguf::GgufWriter& writer) {
  const gguf::GgufFile& file = *input;
  const QuantTraits& target = quant_traits(options.expert_type);
  STRATA_ASSIGN_OR_RETURN(const auto model, Model::describe(input));
  if (options.importance && options.expert_type != QuantType::kQ2_0)
    return Status::errorf("importance weights apply to Q2_0 experts only, not {}",
                          type_name(uint32_t(options.expert_type)));
  const std::set<uint64_t> expert_offsets = model->weights().experts.slice_offsets();
  const std::map<uint64_t, ExpertSlices> slices = expert_slices(model->weights().experts);
  std::vector<bool> is_expert;
  std::vector<uint32_t> source_types;
  RequantizeSummary summary;
  for (const gguf::TensorInfo& tensor : file.tensors()) {
    is_expert.push_back(tensor.n_bytes > 0 && expert_offsets.contains(tensor.offset));
    if (!is_expert.back()) continue;
    if (tensor.shape[0] % target.block_size != 0)
      return Status::errorf(
          "{}: tensor {}: row length {} is not a multiple of {}'s block size {}; choose a format "
          "with a smaller block",
          file.name(), tensor.name, tensor.shape[0], type_name(uint32_t(target.type)),
          target.block_size);
    if (std::find(source_types.begin(), source_types.end(), tensor.type_id) == source_types.end())
      source_types.push_back(tensor.type_id);
    summary.n_expert_tensors++;
    summary.expert_bytes_in += tensor.n_bytes;
  }
  STRATA_ASSIGN_OR_RETURN(summary.provenance, provenance(file, options.expert_type, source_types));

  // The output keeps every row in the GGUF order (strata repack --grouped groups them again).
  for (const std::string& key : file.keys())
    if (key != kQ4_0RowGroupsKey) STRATA_RETURN_IF_ERROR(writer.copy_metadata(file, key));
  writer.set_string(kRequantizeProvenanceKey, summary.provenance);
  for (size_t i = 0; i < file.tensors().size(); ++i) {
    const gguf::TensorInfo& tensor = file.tensors()[i];
    const uint32_t type_id = is_expert[i] ? uint32_t(options.expert_type) : tensor.type_id;
    STRATA_ASSIGN_OR_RETURN(const uint64_t n_bytes,
                            writer.add_tensor(tensor.name, tensor.shape, type_id));
    if (is_expert[i]) summary.expert_bytes_out += n_bytes;
    summary.tensor_bytes_out += n_bytes;
  }

  STRATA_RETURN_IF_ERROR(writer.begin());
  const int n_threads = options.n_threads > 0 ? options.n_threads : ThreadPool::default_threads();
  STRATA_ASSIGN_OR_RETURN(const std::unique_ptr<ThreadPool> pool, ThreadPool::start(n_threads));
  Requantizer requantizer{file, target, *pool, writer, options.progress, {}, {}};
  requantizer.scratch.resize(size_t(pool->size()));
  for (size_t i = 0; i < file.tensors().size(); ++i) {
    const gguf::TensorInfo& tensor = file.tensors()[i];
    if (is_expert[i]) {
      STRATA_RETURN_IF_ERROR(
          requantizer.write(tensor, slices.at(tensor.offset), options.importance));
      continue;
    }
    std::span<const uint8_t> bytes{file.tensor_data(tensor), tensor.n_bytes};
    std::vector<uint8_t> ungrouped;
    if (grouped_in_file(file, tensor)) {
      ungrouped.assign(bytes.begin(), bytes.end());
      ungroup_q4_0_rows(ungrouped.data(), tensor.shape[0], tensor.n_elements() / tensor.shape[0]);
      bytes = ungrouped;
    }
    STRATA_RETURN_IF_ERROR(writer.write_tensor_data(bytes));
    if (options.progress) options.progress->advance(tensor.n_bytes);
  }
  return summary;
}

Result<RequantizeSummary> requantize_model_file(const std::string& input_path,
                                                const std::string& output_path,
                                                const RequantizeOptions& options) {
  STRATA_ASSIGN_OR_RETURN(const auto input, gguf::GgufFile::open(input_path));
  STRATA_RETURN_IF_ERROR(check_output_path(output_path, gguf::model_inputs(*input),
                                           existing_output(options.overwrite)));
  gguf::GgufWriter writer(output_path);
  STRATA_ASSIGN_OR_RETURN(RequantizeSummary summary, requantize_experts(input, options, writer));
  STRATA_RETURN_IF_ERROR(writer.finish());
  return summary;
}

}  // namespace strata

#include "model/unit_layout.h"

#include <fmt/format.h>

#include <set>
#include <span>
#include <string_view>
#include <vector>

#include "base/output_path.h"
#include "base/progress.h"
#include "cpu/kernels/q4_0_groups.h"
#include "model/model.h"
#include "model/tensor_binder.h"
#include "model/tensor_data.h"

namespace strata {

namespace {

constexpr std::string_view kStems[] = {"ffn_gate", "ffn_up", "ffn_down"};

// The input's tensors that hold experts: those at the data offsets of the model's expert layout.
class ExpertTensors {
 public:
  explicit ExpertTensors(const ExpertLayout& experts) : offsets_(experts.slice_offsets()) {}
  bool contains(const gguf::TensorInfo& tensor) const {
    return tensor.n_bytes > 0 && offsets_.contains(tensor.offset);
  }

 private:
  std::set<uint64_t> offsets_;
};

// Declares the input's metadata and its tensors in `writer`: the dense ones in the input's
// order, then each layer's experts in `options.layout`.
Result<RepackSummary> declare_tensors(const gguf::GgufFile& file, const ExpertLayout& experts,
                                      const RepackOptions& options, gguf::GgufWriter& writer) {
  const ExpertTensors expert_tensors(experts);
  for (const std::string& key : file.keys())
    if (key != kQ4_0RowGroupsKey) STRATA_RETURN_IF_ERROR(writer.copy_metadata(file, key));
  if (options.grouped_rows) writer.set_uint32(kQ4_0RowGroupsKey, uint32_t(kQ4_0GroupRows));
  RepackSummary summary;
  auto declare = [&](std::string name, std::vector<int64_t> shape, QuantType type) -> Status {
    STRATA_ASSIGN_OR_RETURN(const uint64_t n_bytes,
                            writer.add_tensor(std::move(name), std::move(shape), uint32_t(type)));
    summary.tensor_bytes += n_bytes;
    return Status();
  };
  for (const gguf::TensorInfo& tensor : file.tensors())
    if (!expert_tensors.contains(tensor))
      STRATA_RETURN_IF_ERROR(declare(tensor.name, tensor.shape, QuantType(tensor.type_id)));
  for (int layer = 0; layer < experts.n_layer(); ++layer) {
    const LayerExpertLayout& l = experts.layers[size_t(layer)];
    const ExpertTensorLayout* parts[] = {&l.gate, &l.up, &l.down};
    if (options.layout == ExpertFileLayout::kStacked) {
      for (int s = 0; s < 3; ++s)
        STRATA_RETURN_IF_ERROR(
            declare(layer_tensor(layer, fmt::format("{}_exps.weight", kStems[s])),
                    {parts[s]->n_in, parts[s]->n_out, experts.n_expert}, parts[s]->type));
    } else {
      for (int expert = 0; expert < experts.n_expert; ++expert)
        for (int s = 0; s < 3; ++s)
          STRATA_RETURN_IF_ERROR(declare(expert_tensor(layer, kStems[s], expert),
                                         {parts[s]->n_in, parts[s]->n_out}, parts[s]->type));
    }
    summary.n_units += experts.n_expert;
    summary.expert_bytes += l.unit_bytes() * uint64_t(experts.n_expert);
  }
  if (!experts.layers.empty()) summary.unit_bytes = experts.layers[0].unit_bytes();
  return summary;
}

// Writes the bytes of the tensors declare_tensors declared, in the same order.
Status write_tensors(const gguf::GgufFile& file, const ExpertLayout& experts,
                     const RepackOptions& options, gguf::GgufWriter& writer,
                     ProgressBar* progress) {
  // Bytes are copied as they are, except Q4_0 rows whose order (grouped or not) changes.
  std::vector<uint8_t> reordered;
  auto copy = [&](uint64_t offset, uint64_t n_bytes, int64_t n_in, bool from_groups,
                  bool to_groups) -> Status {
    std::span<const uint8_t> bytes = file.bytes().subspan(offset, n_bytes);
    if (from_groups != to_groups) {
      reordered.assign(bytes.begin(), bytes.end());
      const int64_t n_rows = int64_t(n_bytes / quant_traits(QuantType::kQ4_0).row_bytes(n_in));
      reorder_rows(reordered.data(), n_in, n_rows, from_groups, to_groups);
      bytes = reordered;
    }
    STRATA_RETURN_IF_ERROR(writer.write_tensor_data(bytes));
    if (progress) progress->advance(n_bytes);
    return Status();
  };
  const ExpertTensors expert_tensors(experts);
  for (const gguf::TensorInfo& tensor : file.tensors()) {
    if (expert_tensors.contains(tensor)) continue;
    STRATA_RETURN_IF_ERROR(copy(tensor.offset, tensor.n_bytes, tensor.shape[0],
                                grouped_in_file(file, tensor),
                                options.grouped_rows && groupable(tensor)));
  }
  const size_t n_expert = size_t(experts.n_expert);
  auto copy_slice = [&](const ExpertTensorLayout& part, size_t expert) {
    return copy(part.file_offsets[expert], part.expert_bytes, part.n_in, part.grouped_in_file,
                options.grouped_rows && has_row_groups(part.type, part.n_out));
  };
  for (const LayerExpertLayout& l : experts.layers) {
    const ExpertTensorLayout* parts[] = {&l.gate, &l.up, &l.down};
    if (options.layout == ExpertFileLayout::kStacked) {
      for (const ExpertTensorLayout* part : parts)
        for (size_t expert = 0; expert < n_expert; ++expert)
          STRATA_RETURN_IF_ERROR(copy_slice(*part, expert));
    } else {
      for (size_t expert = 0; expert < n_expert; ++expert)
        for (const ExpertTensorLayout* part : parts)
          STRATA_RETURN_IF_ERROR(copy_slice(*part, expert));
    }
  }
  return Status();
}

}  // namespace

Result<RepackSummary> write_expert_layout(std::shared_ptr<const gguf::GgufFile> input,
                                          const RepackOptions& options, gguf::GgufWriter& writer,
                                          ProgressBar* progress) {
  STRATA_ASSIGN_OR_RETURN(const auto model, Model::describe(input));
  const ExpertLayout& experts = model->weights().experts;
  STRATA_ASSIGN_OR_RETURN(const RepackSummary summary,
                          declare_tensors(*input, experts, options, writer));
  STRATA_RETURN_IF_ERROR(writer.begin());
  STRATA_RETURN_IF_ERROR(write_tensors(*input, experts, options, writer, progress));
  return summary;
}

Result<RepackSummary> repack_model_file(const std::string& input_path,
                                        const std::string& output_path,
                                        const RepackOptions& options, ProgressBar* progress) {
  STRATA_ASSIGN_OR_RETURN(const auto input, gguf::GgufFile::open(input_path));
  STRATA_RETURN_IF_ERROR(check_output_path(output_path, gguf::model_inputs(*input),
                                           existing_output(options.overwrite)));
  gguf::GgufWriter writer(output_path);
  STRATA_ASSIGN_OR_RETURN(RepackSummary summary,
                          write_expert_layout(input, options, writer, progress));
  STRATA_RETURN_IF_ERROR(writer.finish());
  return summary;
}

}  // namespace strata

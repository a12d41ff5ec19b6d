#include "model/unit_layout.h"

#include <fmt/format.h>

#include <set>

#include "base/progress.h"
#include "model/model.h"
#include "model/tensor_binder.h"

namespace strata {

Result<RepackSummary> write_expert_layout(std::shared_ptr<const gguf::GgufFile> input,
                                          ExpertFileLayout layout, gguf::GgufWriter& writer,
                                          ProgressBar* progress) {
  const gguf::GgufFile& file = *input;
  STRATA_ASSIGN_OR_RETURN(const auto model, Model::describe(input));
  const ExpertLayout& experts = model->weights().experts;
  const std::set<uint64_t> expert_offsets = experts.slice_offsets();
  auto is_expert = [&](const gguf::TensorInfo& tensor) {
    return tensor.n_bytes > 0 && expert_offsets.contains(tensor.offset);
  };

  for (const std::string& key : file.keys())
    STRATA_RETURN_IF_ERROR(writer.copy_metadata(file, key));
  RepackSummary summary;
  auto declare = [&](std::string name, std::vector<int64_t> shape, QuantType type) -> Status {
    STRATA_ASSIGN_OR_RETURN(const uint64_t n_bytes,
                            writer.add_tensor(std::move(name), std::move(shape), uint32_t(type)));
    summary.tensor_bytes += n_bytes;
    return Status();
  };
  for (const gguf::TensorInfo& tensor : file.tensors())
    if (!is_expert(tensor))
      STRATA_RETURN_IF_ERROR(declare(tensor.name, tensor.shape, QuantType(tensor.type_id)));
  static constexpr std::string_view kStems[] = {"ffn_gate", "ffn_up", "ffn_down"};
  for (int layer = 0; layer < experts.n_layer(); ++layer) {
    const LayerExpertLayout& l = experts.layers[size_t(layer)];
    const ExpertTensorLayout* parts[] = {&l.gate, &l.up, &l.down};
    if (layout == ExpertFileLayout::kStacked) {
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

  STRATA_RETURN_IF_ERROR(writer.begin());
  auto copy = [&](uint64_t offset, uint64_t n_bytes) -> Status {
    STRATA_RETURN_IF_ERROR(writer.write_tensor_data({file.bytes().data() + offset, n_bytes}));
    if (progress) progress->advance(n_bytes);
    return Status();
  };
  for (const gguf::TensorInfo& tensor : file.tensors())
    if (!is_expert(tensor)) STRATA_RETURN_IF_ERROR(copy(tensor.offset, tensor.n_bytes));
  const size_t n_expert = size_t(experts.n_expert);
  for (const LayerExpertLayout& l : experts.layers) {
    const ExpertTensorLayout* parts[] = {&l.gate, &l.up, &l.down};
    if (layout == ExpertFileLayout::kStacked) {
      for (const ExpertTensorLayout* part : parts)
        for (size_t expert = 0; expert < n_expert; ++expert)
          STRATA_RETURN_IF_ERROR(copy(part->file_offsets[expert], part->expert_bytes));
    } else {
      for (size_t expert = 0; expert < n_expert; ++expert)
        for (const ExpertTensorLayout* part : parts)
          STRATA_RETURN_IF_ERROR(copy(part->file_offsets[expert], part->expert_bytes));
    }
  }
  return summary;
}

Result<RepackSummary> repack_model_file(const std::string& input_path,
                                        const std::string& output_path, ExpertFileLayout layout,
                                        bool overwrite, ProgressBar* progress) {
  STRATA_ASSIGN_OR_RETURN(const auto input, gguf::GgufFile::open(input_path));
  STRATA_RETURN_IF_ERROR(gguf::check_derived_output(input_path, output_path, overwrite));
  gguf::GgufWriter writer(output_path);
  STRATA_ASSIGN_OR_RETURN(RepackSummary summary,
                          write_expert_layout(input, layout, writer, progress));
  STRATA_RETURN_IF_ERROR(writer.finish());
  return summary;
}

}  // namespace strata

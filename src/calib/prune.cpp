#include "calib/prune.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "base/output_path.h"
#include "calib/calibration_file.h"
#include "gguf/gguf_writer.h"
#include "model/model.h"

namespace strata {
namespace {

constexpr std::string_view kPruneKey = "strata.prune";

std::string_view saliency_name(Saliency s) {
  return s == Saliency::kReap ? "reap" : s == Saliency::kUsage ? "usage" : "total";
}

// How a tensor of the input changes: a stack of every expert's slices, or a router with a row
// per expert; its layer's kept experts.
struct Pruned {
  bool router = false;
  int layer = 0;
};

// The expert count under the same value type the input stores it in.
void set_count(gguf::GgufWriter& writer, const gguf::GgufFile& file, const std::string& key,
               int64_t value) {
  const auto type = file.type_of(key);
  switch (type.ok() ? type.value() : gguf::ValueType::kUint32) {
    case gguf::ValueType::kInt32:
      return writer.set_int32(key, int32_t(value));
    case gguf::ValueType::kUint64:
      return writer.set_uint64(key, uint64_t(value));
    case gguf::ValueType::kInt64:
      return writer.set_int64(key, value);
    default:
      return writer.set_uint32(key, uint32_t(value));
  }
}

}  // namespace

std::vector<std::vector<int32_t>> experts_to_keep(const ExpertCalibration& c, int64_t keep,
                                                  Saliency saliency) {
  std::vector<std::vector<int32_t>> kept;
  for (const LayerCalibration& layer : c.layers) {
    std::vector<double> score(size_t(c.model.n_expert));
    for (int64_t e = 0; e < c.model.n_expert; ++e) {
      const double tokens = double(layer.tokens[size_t(e)]);
      const double reap = layer.weighted_output_norm[size_t(e)];
      score[size_t(e)] = saliency == Saliency::kReap    ? reap
                         : saliency == Saliency::kUsage ? tokens
                                                        : reap * tokens;
    }
    std::vector<int32_t> order(size_t(c.model.n_expert));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return score[size_t(a)] > score[size_t(b)]; });
    order.resize(size_t(keep));
    std::sort(order.begin(), order.end());
    kept.push_back(std::move(order));
  }
  return kept;
}

Result<PruneSummary> prune_model_file(const std::string& input_path,
                                      const ExpertCalibration& calibration,
                                      const std::string& calibration_name,
                                      const std::string& output_path, const PruneOptions& options) {
  STRATA_ASSIGN_OR_RETURN(auto file, gguf::GgufFile::open(input_path));
  STRATA_RETURN_IF_ERROR(check_output_path(output_path, gguf::model_inputs(*file),
                                           existing_output(options.overwrite)));
  STRATA_ASSIGN_OR_RETURN(auto model, Model::load(file));
  STRATA_RETURN_IF_ERROR(check_calibration_matches(calibration, calibration_name,
                                                   calibrated_model(*model), input_path));
  const ModelConfig& c = model->config();
  if (options.keep > c.n_expert || options.keep < c.n_expert_used)
    return Status::errorf(
        "{}: --keep {} is outside {}..{} (the experts each token uses .. the layer's experts)",
        input_path, options.keep, c.n_expert_used, c.n_expert);

  // The tensors that change, by their data's place in the file.
  std::map<const uint8_t*, Pruned> pruned;
  const ExpertLayout& experts = model->weights().experts;
  for (int l = 0; l < experts.n_layer(); ++l) {
    const LayerExpertLayout& layer = experts.layers[size_t(l)];
    for (const ExpertTensorLayout* t : {&layer.gate, &layer.up, &layer.down}) {
      const uint8_t* first = t->resident.front();
      if (t->resident.size() > 1 && t->resident[1] != first + t->expert_bytes)
        return Status::errorf(
            "{}: prune reads stacked expert tensors; this file is in the unit layout (strata "
            "repack --layout stacked first)",
            input_path);
      pruned[first] = {false, l};
    }
    pruned[model->weights().layers[size_t(l)].router.data] = {true, l};
  }
  size_t matched = 0;
  for (const gguf::TensorInfo& tensor : file->tensors())
    matched += pruned.contains(file->tensor_data(tensor));
  if (matched != pruned.size())
    return Status::errorf("{}: the routers or expert stacks are not tensors of the file as stored",
                          input_path);
  PruneSummary summary;
  summary.kept = experts_to_keep(calibration, options.keep, options.saliency);

  const std::string count_key = c.arch + ".expert_count";
  gguf::GgufWriter writer(output_path);
  for (const std::string& key : file->keys()) {
    if (key == count_key)
      set_count(writer, *file, key, options.keep);
    else if (key != kPruneKey)
      STRATA_RETURN_IF_ERROR(writer.copy_metadata(*file, key));
  }
  writer.set_string(
      kPruneKey,
      fmt::format("kept {} of {} experts per layer by {} saliency; from {}", options.keep,
                  c.n_expert, saliency_name(options.saliency), calibration_name));
  for (const gguf::TensorInfo& tensor : file->tensors()) {
    std::vector<int64_t> shape = tensor.shape;
    if (pruned.contains(file->tensor_data(tensor))) shape.back() = options.keep;
    STRATA_ASSIGN_OR_RETURN(const uint64_t bytes,
                            writer.add_tensor(tensor.name, shape, tensor.type_id));
    summary.bytes_out += bytes;
  }
  STRATA_RETURN_IF_ERROR(writer.begin());
  for (const gguf::TensorInfo& tensor : file->tensors()) {
    const uint8_t* data = file->tensor_data(tensor);
    const auto found = pruned.find(data);
    if (found == pruned.end()) {
      STRATA_RETURN_IF_ERROR(writer.write_tensor_data({data, tensor.n_bytes}));
      continue;
    }
    // A router's rows and an expert stack's slices are both n_expert equal pieces.
    const size_t piece = size_t(tensor.n_bytes / uint64_t(c.n_expert));
    std::vector<uint8_t> kept;
    for (const int32_t e : summary.kept[size_t(found->second.layer)])
      kept.insert(kept.end(), data + size_t(e) * piece, data + size_t(e + 1) * piece);
    STRATA_RETURN_IF_ERROR(writer.write_tensor_data(kept));
  }
  STRATA_RETURN_IF_ERROR(writer.finish());
  return summary;
}

}  // namespace strata

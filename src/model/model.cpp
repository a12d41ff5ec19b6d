#include "model/model.h"

#include <fmt/format.h>

#include "model/architecture.h"

namespace strata {

Result<std::shared_ptr<const Model>> Model::load(std::shared_ptr<const gguf::GgufFile> file) {
  if (!file->has("general.architecture"))
    return Status::errorf("{}: missing key general.architecture (not a model file?)", file->name());
  STRATA_ASSIGN_OR_RETURN(const std::string arch, file->get_string("general.architecture"));
  for (const Architecture& candidate : architectures()) {
    if (candidate.name != arch) continue;
    STRATA_ASSIGN_OR_RETURN(BoundModel bound, candidate.bind(TensorBinder(file, arch)));
    auto model = std::shared_ptr<Model>(new Model());
    model->file_ = std::move(file);
    model->config_ = std::move(bound.config);
    model->weights_ = std::move(bound.weights);
    return std::shared_ptr<const Model>(std::move(model));
  }
  std::string supported;
  for (const Architecture& a : architectures())
    supported += fmt::format("{}{}", supported.empty() ? "" : ", ", a.name);
  return Status::errorf("{}: unknown architecture '{}' (supported: {})", file->name(), arch,
                        supported);
}

uint64_t Model::dense_bytes() const {
  uint64_t tensors = 0;
  for (const auto& tensor : file_->tensors()) tensors += tensor.n_bytes;
  return tensors - weights_.experts.total_bytes();
}

}  // namespace strata

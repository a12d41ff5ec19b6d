#include "gguf/gguf_split_writer.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/interrupt.h"
#include "base/output_path.h"
#include "base/progress.h"
#include "base/temporary_path.h"
#include "gguf/gguf_writer.h"

namespace strata::gguf {
namespace {

// The index of the first tensor of every part that holds tensors.
Result<std::vector<size_t>> part_starts(const GgufFile& source, const SplitOptions& options) {
  const std::vector<TensorInfo>& tensors = source.tensors();
  if ((options.max_part_bytes > 0) == (options.n_parts > 0))
    return Status::error("split: give either a maximum part size or a number of parts");
  std::vector<size_t> starts;
  if (options.n_parts > 0) {
    if (size_t(options.n_parts) > tensors.size()) {
      return Status::errorf("{}: {} parts for {} tensors: a part would hold none", source.name(),
                            options.n_parts, tensors.size());
    }
    for (int part = 0; part < options.n_parts; ++part)
      starts.push_back(tensors.size() * size_t(part) / size_t(options.n_parts));
    return starts;
  }
  uint64_t bytes_in_part = 0;
  for (size_t t = 0; t < tensors.size(); ++t) {
    // Padded as the writer places them: what the part's data section will take.
    const uint64_t padded =
        (tensors[t].n_bytes + source.alignment() - 1) / source.alignment() * source.alignment();
    if (starts.empty() || (bytes_in_part > 0 && bytes_in_part + padded > options.max_part_bytes)) {
      starts.push_back(t);
      bytes_in_part = 0;
    }
    bytes_in_part += padded;
  }
  if (starts.empty()) starts.push_back(0);  // a model without tensors: one part
  return starts;
}

}  // namespace

std::string split_part_path(const std::string& prefix, int number, int count) {
  return prefix + fmt::format("-{:05d}-of-{:05d}.gguf", number, count);
}

Result<std::vector<std::string>> write_split_model(const GgufFile& source,
                                                   const std::string& prefix,
                                                   const SplitOptions& options,
                                                   ProgressBar* progress) {
  STRATA_ASSIGN_OR_RETURN(std::vector<size_t> starts, part_starts(source, options));
  if (options.metadata_only_first_part) starts.insert(starts.begin(), 0);
  const std::vector<TensorInfo>& tensors = source.tensors();
  const int count = int(starts.size());
  if (starts.size() > 99999) {
    return Status::errorf("{}: {} parts, more than gguf-split can name", source.name(),
                          starts.size());
  }
  const std::vector<CommandInput> inputs = model_inputs(source);
  std::vector<std::string> paths;
  for (int part = 0; part < count; ++part) {
    paths.push_back(split_part_path(prefix, part + 1, count));
    STRATA_RETURN_IF_ERROR(
        check_output_path(paths.back(), inputs, existing_output(options.overwrite)));
  }
  std::vector<TemporaryPath> partials;
  for (int part = 0; part < count; ++part) {
    partials.emplace_back(fmt::format("{}.partial-{}", paths[size_t(part)], ::getpid()),
                          TemporaryPath::Kind::kFile);
    GgufWriter writer(partials.back().path());
    if (part == 0) {
      for (const std::string& key : source.keys()) {
        if (!key.starts_with("split.")) STRATA_RETURN_IF_ERROR(writer.copy_metadata(source, key));
      }
    }
    writer.set_uint16(kSplitNoKey, uint16_t(part));
    writer.set_uint16(kSplitCountKey, uint16_t(count));
    writer.set_int32(kSplitTensorsKey, int32_t(tensors.size()));
    const bool holds_tensors = !(options.metadata_only_first_part && part == 0);
    const size_t begin = holds_tensors ? starts[size_t(part)] : 0;
    const size_t end = !holds_tensors     ? 0
                       : part + 1 < count ? starts[size_t(part) + 1]
                                          : tensors.size();
    for (size_t t = begin; t < end; ++t)
      STRATA_RETURN_IF_ERROR(
          writer.add_tensor(tensors[t].name, tensors[t].shape, tensors[t].type_id).status());
    STRATA_RETURN_IF_ERROR(writer.begin());
    for (size_t t = begin; t < end; ++t) {
      STRATA_RETURN_IF_ERROR(
          writer.write_tensor_data({source.tensor_data(tensors[t]), tensors[t].n_bytes}));
      if (progress) progress->advance(tensors[t].n_bytes);
    }
    STRATA_RETURN_IF_ERROR(writer.finish());
  }
  // As GgufWriter::finish: a signal during the last part's sync stops it before any part is
  // in place.
  if (interrupted()) return interrupted_error();
  // Every part in place, or (a failed rename aside) none: one commit bracket for them all.
  CommitScope commit;
  if (!commit.entered()) return interrupted_error();
  for (size_t part = 0; part < paths.size(); ++part) {
    if (std::rename(partials[part].path().c_str(), paths[part].c_str()) != 0)
      return Status::errorf("{}: cannot rename {} into place: {}", paths[part],
                            partials[part].path(), std::strerror(errno));
    commit.in_place();
    partials[part].release();
  }
  return paths;
}

}  // namespace strata::gguf

// GgufFile::open_split: the parts of a split model opened as one GgufFile (gguf_file.h).
#include <fmt/format.h>

#include <unordered_map>

#include "base/mapped_file.h"
#include "gguf/gguf_file.h"
#include "gguf/printable_text.h"

namespace strata::gguf {
namespace {

// gguf-split numbers the files from 1 in five digits: "-00002-of-00003.gguf".
std::string part_suffix(uint64_t number, uint64_t count) {
  return fmt::format("-{:05d}-of-{:05d}.gguf", number, count);
}

// The paths of all `count` parts, from the first one's.
Result<std::vector<std::string>> part_paths(const std::string& first, uint64_t count) {
  const std::string suffix = part_suffix(1, count);
  if (first.size() < suffix.size() ||
      first.compare(first.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return Status::errorf(
        "{}: the first of {} parts of a split model, but its name does not end in {}, so the "
        "other parts cannot be found",
        first, count, suffix);
  }
  const std::string prefix = first.substr(0, first.size() - suffix.size());
  std::vector<std::string> paths;
  for (uint64_t number = 1; number <= count; ++number)
    paths.push_back(prefix + part_suffix(number, count));
  return paths;
}

// Checks a part's split.* keys against its place among the parts.
Status check_part_keys(const GgufFile& part, uint64_t index, uint64_t count) {
  STRATA_ASSIGN_OR_RETURN(const uint64_t number, part.get_uint(kSplitNoKey));
  STRATA_ASSIGN_OR_RETURN(const uint64_t its_count, part.get_uint(kSplitCountKey));
  if (its_count != count) {
    return Status::errorf("{}: key {} is {}, but the first part says {}", part.name(),
                          kSplitCountKey, its_count, count);
  }
  if (number != index) {
    return Status::errorf("{}: key {} is {}, but the file is part {} of {} (expected {})",
                          part.name(), kSplitNoKey, number, index + 1, count, index);
  }
  return Status();
}

}  // namespace

Result<std::shared_ptr<const GgufFile>> GgufFile::open_split(const GgufFile& first,
                                                             uint64_t count) {
  STRATA_ASSIGN_OR_RETURN(const uint64_t number, first.get_uint(kSplitNoKey));
  if (number != 0) {
    return Status::errorf("{}: part {} of a model split in {} files: open the first part",
                          first.name(), number + 1, count);
  }
  if (count > 99999) {
    return Status::errorf("{}: key {} is {}, more parts than gguf-split can name", first.name(),
                          kSplitCountKey, count);
  }
  STRATA_ASSIGN_OR_RETURN(const std::vector<std::string> paths, part_paths(first.name(), count));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> mapped, MappedFile::open_parts(paths));

  auto joined = std::shared_ptr<GgufFile>(new GgufFile());
  joined->name_ = first.name();
  joined->bytes_ = mapped->bytes();
  joined->parts_ = mapped->parts();
  std::unordered_map<std::string, size_t> part_of_tensor;
  for (size_t index = 0; index < joined->parts_.size(); ++index) {
    const FilePart& where = joined->parts_[index];
    GgufFile part;
    STRATA_RETURN_IF_ERROR(
        part.parse_image(joined->bytes_.subspan(where.offset, where.size), where.path));
    STRATA_RETURN_IF_ERROR(check_part_keys(part, index, count));
    if (index == 0) {
      joined->version_ = part.version_;
      joined->alignment_ = part.alignment_;
      joined->data_offset_ = part.data_offset_;
      joined->take_metadata_but_split_keys(part);
    }
    for (TensorInfo& tensor : part.tensors_) {
      const auto [seen, added] = part_of_tensor.emplace(tensor.name, index);
      if (!added) {
        return Status::errorf("{}: tensor {} is in part {} too", where.path, printable(tensor.name),
                              seen->second + 1);
      }
      tensor.offset += where.offset;
      joined->tensors_.push_back(std::move(tensor));
    }
  }
  STRATA_ASSIGN_OR_RETURN(const uint64_t expected, first.get_uint(kSplitTensorsKey));
  if (expected != joined->tensors_.size()) {
    return Status::errorf("{}: key {} is {}, but the {} parts hold {} tensors", first.name(),
                          kSplitTensorsKey, expected, count, joined->tensors_.size());
  }
  // Indexed only now: views into the names stay valid because tensors_ no longer grows.
  for (size_t i = 0; i < joined->tensors_.size(); ++i)
    joined->tensor_index_.emplace(joined->tensors_[i].name, i);
  joined->mapping_ = std::shared_ptr<MappedFile>(std::move(mapped));
  return std::shared_ptr<const GgufFile>(std::move(joined));
}

}  // namespace strata::gguf

// open_file_reader() over a model's parts (file_reader.h): for a split model, one reader per
// part behind one FileReader whose offsets are those of the joined byte space.
#include <algorithm>
#include <vector>

#include "base/check.h"
#include "experts/file_reader.h"

namespace strata {
namespace {

class SplitModelReader final : public FileReader {
 public:
  SplitModelReader(std::vector<std::unique_ptr<FileReader>> readers, std::vector<FilePart> parts)
      : readers_(std::move(readers)), parts_(std::move(parts)) {
    for (const auto& reader : readers_) {
      alignment_ = std::max(alignment_, reader->alignment());
      direct_ = direct_ && reader->direct();
    }
  }

  const std::string& path() const override { return parts_.front().path; }
  uint64_t size() const override { return parts_.back().offset + parts_.back().size; }
  size_t alignment() const override { return alignment_; }
  bool direct() const override { return direct_; }

  // The part's reader checks the range against its file (alignment, past its end) and names
  // the part in errors.
  Status read(void* destination, uint64_t offset, size_t length) override {
    const size_t index = part_index(offset);
    return readers_[index]->read(destination, offset - parts_[index].offset, length);
  }

  Part part_at(uint64_t offset) const override {
    const size_t index = part_index(offset);
    return {readers_[index].get(), parts_[index].offset};
  }

 private:
  // The last part starting at or before `offset`.
  size_t part_index(uint64_t offset) const {
    const auto after =
        std::upper_bound(parts_.begin(), parts_.end(), offset,
                         [](uint64_t value, const FilePart& part) { return value < part.offset; });
    return after == parts_.begin() ? 0 : size_t(after - parts_.begin()) - 1;
  }

  std::vector<std::unique_ptr<FileReader>> readers_;
  std::vector<FilePart> parts_;
  size_t alignment_ = 1;
  bool direct_ = true;
};

}  // namespace

Result<std::unique_ptr<FileReader>> open_file_reader(std::span<const FilePart> parts, bool direct) {
  STRATA_CHECK(!parts.empty());
  if (parts.size() == 1) return open_file_reader(parts.front().path, direct);
  std::vector<std::unique_ptr<FileReader>> readers;
  for (const FilePart& part : parts) {
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<FileReader> reader,
                            open_file_reader(part.path, direct));
    if (reader->size() != part.size) {
      return Status::errorf("{}: changed size since it was opened ({} bytes, now {})", part.path,
                            part.size, reader->size());
    }
    readers.push_back(std::move(reader));
  }
  return std::unique_ptr<FileReader>(
      new SplitModelReader(std::move(readers), std::vector<FilePart>(parts.begin(), parts.end())));
}

}  // namespace strata

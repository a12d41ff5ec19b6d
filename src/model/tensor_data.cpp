#include "model/tensor_data.h"

#include <algorithm>
#include <string>
#include <vector>

#include "base/populate_mapping.h"
#include "base/progress.h"
#include "cpu/kernels/q4_0_groups.h"
#include "cpu/thread_pool.h"

namespace strata {

namespace {

constexpr uint64_t kLoadChunkBytes = uint64_t(64) << 20;  // a multiple of any reader alignment
constexpr int kLoadThreads = 4;

// Consumes the decimal number at the front of `text`; false if there is none.
bool consume_number(std::string_view& text) {
  const size_t digits = text.find_first_not_of("0123456789");
  if (digits == 0 || text.empty()) return false;
  text.remove_prefix(digits == std::string_view::npos ? text.size() : digits);
  return true;
}

bool consume(std::string_view& text, std::string_view prefix) {
  if (!text.starts_with(prefix)) return false;
  text.remove_prefix(prefix.size());
  return true;
}

// blk.N.ffn_{gate,up,down}.E.weight
bool is_unit_layout_expert_name(std::string_view name) {
  if (!consume(name, "blk.") || !consume_number(name) || !consume(name, ".ffn_")) return false;
  if (!consume(name, "gate.") && !consume(name, "up.") && !consume(name, "down.")) return false;
  return consume_number(name) && name == ".weight";
}

// The tensors load() reads, by offset in the file.
std::vector<const gguf::TensorInfo*> tensors_to_load(const gguf::GgufFile& file,
                                                     LoadedTensorData::Contents contents) {
  std::vector<const gguf::TensorInfo*> wanted;
  for (const auto& tensor : file.tensors())
    if (contents == LoadedTensorData::Contents::kAll || !is_routed_expert_tensor(tensor))
      wanted.push_back(&tensor);
  std::sort(wanted.begin(), wanted.end(),
            [](const auto* a, const auto* b) { return a->offset < b->offset; });
  return wanted;
}

// Tensors are read in runs: a run is the aligned range covering tensors that follow each
// other in the file, read into a slot of its own; the widening costs at most two alignment
// units per run. The reader fills what lies past the end of the file (up to the next
// alignment unit) with zeros, so the tensor that ends the file needs no special case.
struct Run {
  uint64_t file_begin, file_end, slot;
};
struct Runs {
  std::vector<Run> runs;
  std::vector<size_t> run_of;  // per wanted tensor
  uint64_t total = 0;          // bytes of all runs
};

Runs plan_runs(const std::vector<const gguf::TensorInfo*>& wanted, uint64_t alignment) {
  auto align_down = [&](uint64_t offset) { return offset / alignment * alignment; };
  auto align_up = [&](uint64_t offset) { return align_down(offset + alignment - 1); };
  Runs plan;
  plan.run_of.resize(wanted.size());
  for (size_t t = 0; t < wanted.size(); ++t) {
    const uint64_t begin = align_down(wanted[t]->offset);
    const uint64_t end = align_up(wanted[t]->offset + wanted[t]->n_bytes);
    if (plan.runs.empty() || begin > plan.runs.back().file_end) {
      plan.runs.push_back({begin, end, plan.total});
    } else {
      plan.total -= plan.runs.back().file_end - plan.runs.back().file_begin;
      plan.runs.back().file_end = std::max(plan.runs.back().file_end, end);
    }
    plan.total += plan.runs.back().file_end - plan.runs.back().file_begin;
    plan.run_of[t] = plan.runs.size() - 1;
  }
  return plan;
}

}  // namespace

uint64_t LoadedTensorData::bytes_to_load(const gguf::GgufFile& file, size_t alignment,
                                         Contents contents) {
  return plan_runs(tensors_to_load(file, contents), alignment).total;
}

bool is_routed_expert_tensor(const gguf::TensorInfo& tensor) {
  return tensor.shape.size() == 3 || is_unit_layout_expert_name(tensor.name);
}

uint64_t dense_tensor_bytes(const gguf::GgufFile& file) {
  uint64_t bytes = 0;
  for (const auto& tensor : file.tensors())
    if (!is_routed_expert_tensor(tensor)) bytes += tensor.n_bytes;
  return bytes;
}

Status check_row_groups_key(const gguf::GgufFile& file) {
  if (!file.has(kQ4_0RowGroupsKey)) return Status();
  const Result<uint64_t> rows = file.get_uint(kQ4_0RowGroupsKey);
  if (rows.ok() && rows.value() == uint64_t(kQ4_0GroupRows)) return Status();
  return Status::errorf(
      "{}: {} says Q4_0 rows are stored in groups of {}; this build of Strata reads groups of {} "
      "only (write the file again with strata repack)",
      file.name(), kQ4_0RowGroupsKey, rows.ok() ? std::to_string(rows.value()) : "(not a number)",
      kQ4_0GroupRows);
}

bool groupable(const gguf::TensorInfo& tensor) {
  return tensor.shape.size() >= 2 && tensor.name != "token_embd.weight" &&
         has_row_groups(QuantType(tensor.type_id), tensor.shape[1]);
}

bool grouped_when_copied(const gguf::TensorInfo& tensor) {
  return groupable(tensor) && groups_rows(QuantType(tensor.type_id), tensor.shape[1]);
}

bool grouped_in_file(const gguf::GgufFile& file, const gguf::TensorInfo& tensor) {
  return groupable(tensor) && file.has(kQ4_0RowGroupsKey);
}

bool copied_when_resident(const gguf::GgufFile& file) {
  for (const auto& tensor : file.tensors())
    if (grouped_when_copied(tensor) || grouped_in_file(file, tensor)) return true;
  return false;
}

void reorder_rows(uint8_t* rows, int64_t n, int64_t n_rows, bool from_groups, bool to_groups) {
  if (to_groups && !from_groups) group_q4_0_rows(rows, n, n_rows);
  if (from_groups && !to_groups) ungroup_q4_0_rows(rows, n, n_rows);
}

Result<std::unique_ptr<LoadedTensorData>> LoadedTensorData::load(const gguf::GgufFile& file,
                                                                 FileReader& reader,
                                                                 Contents contents,
                                                                 ProgressBar* progress) {
  // Before anything is read: with groups of another size, the copies would be reordered wrong.
  STRATA_RETURN_IF_ERROR(check_row_groups_key(file));
  const uint64_t alignment = reader.alignment();
  auto align_down = [&](uint64_t offset) { return offset / alignment * alignment; };
  const std::vector<const gguf::TensorInfo*> wanted = tensors_to_load(file, contents);
  const Runs plan = plan_runs(wanted, alignment);
  const std::vector<Run>& runs = plan.runs;
  const std::vector<size_t>& run_of = plan.run_of;
  const uint64_t total = plan.total;
  auto loaded = std::unique_ptr<LoadedTensorData>(new LoadedTensorData());
  if (total > 0) {
    // On huge pages, as the mapped path's page cache is: these are the weights every token
    // streams (attention, routers, shared experts, the output matrix, resident experts).
    loaded->memory_ = allocate_on_huge_pages(total, alignment);
    if (!loaded->memory_)
      return Status::errorf("{}: cannot allocate {} bytes for the weights", file.name(), total);
  }
  loaded->bytes_ = total;
  auto memory_at = [&](size_t run, uint64_t file_offset) {
    return loaded->memory_.get() + runs[run].slot + (file_offset - runs[run].file_begin);
  };

  // Read in chunks by a few threads at once: while one thread's pages are faulted in (the kernel
  // zeroes each before the read lands in it), the others' reads keep the disk busy, and a few
  // reads in flight is what disks read fastest with. The resident 30B-A3B shape (16 GiB) loaded
  // in 19 s read piece by piece on one thread. A chunk lies within one tensor's range, from the
  // alignment unit where the tensor starts (or the previous chunk ends) to where the next
  // tensor starts, so that a failed read names its tensor.
  struct Chunk {
    size_t tensor;
    uint64_t file_begin, length;
  };
  std::vector<Chunk> chunks;
  uint64_t covered = 0;  // where the previous chunk ended
  for (size_t t = 0; t < wanted.size(); ++t) {
    const bool last_of_run = t + 1 == wanted.size() || run_of[t + 1] != run_of[t];
    const uint64_t begin = std::max(align_down(wanted[t]->offset), covered);
    const uint64_t end = last_of_run ? runs[run_of[t]].file_end : align_down(wanted[t + 1]->offset);
    for (uint64_t offset = begin; offset < end; offset += kLoadChunkBytes)
      chunks.push_back({t, offset, std::min(kLoadChunkBytes, end - offset)});
    covered = std::max(covered, end);
  }
  std::vector<Status> failures(chunks.size());
  STRATA_ASSIGN_OR_RETURN(const std::unique_ptr<ThreadPool> pool, ThreadPool::start(kLoadThreads));
  pool->parallel_for(int64_t(chunks.size()), [&](int64_t c, int) {
    const Chunk& chunk = chunks[size_t(c)];
    failures[size_t(c)] = reader.read(memory_at(run_of[chunk.tensor], chunk.file_begin),
                                      chunk.file_begin, chunk.length);
    if (progress) progress->advance(chunk.length);
  });
  for (size_t c = 0; c < chunks.size(); ++c)
    if (!failures[c].ok())
      return failures[c].with_prefix(
          fmt::format("loading tensor {}", wanted[chunks[c].tensor]->name));

  pool->parallel_for(int64_t(wanted.size()), [&](int64_t t, int) {
    const gguf::TensorInfo& tensor = *wanted[size_t(t)];
    // An expert stack [n_expert][rows][n_in] groups as n_expert * rows rows: rows is a
    // multiple of the group, so no group straddles two experts.
    reorder_rows(memory_at(run_of[size_t(t)], tensor.offset), tensor.shape[0],
                 tensor.n_elements() / tensor.shape[0], grouped_in_file(file, tensor),
                 grouped_when_copied(tensor));
  });
  for (size_t t = 0; t < wanted.size(); ++t)
    loaded->tensors_[wanted[t]->name] = memory_at(run_of[t], wanted[t]->offset);
  return loaded;
}

const uint8_t* LoadedTensorData::data(const gguf::TensorInfo& tensor) const {
  const auto found = tensors_.find(tensor.name);
  return found == tensors_.end() ? nullptr : found->second;
}

Result<std::shared_ptr<const TensorData>> load_resident_tensor_data(const gguf::GgufFile& file,
                                                                    ProgressBar* progress) {
  if (!copied_when_resident(file)) {
    // Part by part: the gaps between a split model's parts are not readable.
    for (const FilePart& part : file.parts())
      populate_mapping(file.bytes().subspan(part.offset, part.size), progress);
    return std::shared_ptr<const TensorData>(std::make_shared<MappedTensorData>(file));
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<FileReader> reader, open_file_reader(file.parts()));
  STRATA_ASSIGN_OR_RETURN(
      auto loaded,
      LoadedTensorData::load(file, *reader, LoadedTensorData::Contents::kAll, progress));
  return std::shared_ptr<const TensorData>(std::move(loaded));
}

}  // namespace strata

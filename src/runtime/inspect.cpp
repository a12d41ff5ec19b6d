#include <strata/inspect.h>

#include <fmt/format.h>

#include <map>

#include "cpu/cpu_kv_cache.h"
#include "gguf/tensor_types.h"
#include "model/model.h"
#include "model/tensor_data.h"
#include "runtime/byte_size.h"
#include "runtime/memory_plan.h"

namespace strata {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text;
  for (size_t i = 0; i < shape.size(); ++i) text += fmt::format("{}{}", i ? " x " : "", shape[i]);
  return text;
}

void append_config(const ModelConfig& c, std::string& out) {
  out += fmt::format("architecture      {}\n", c.arch);
  out += fmt::format("layers            {}\n", c.n_layer);
  out += fmt::format("hidden            {}\n", c.n_embd);
  out += fmt::format("heads             {} query / {} key-value, head dim {}\n", c.n_head,
                     c.n_head_kv, c.head_dim);
  out += fmt::format("experts           {} routed, {} per token, expert FFN {}{}\n", c.n_expert,
                     c.n_expert_used, c.n_ff_expert,
                     c.n_ff_shared ? fmt::format(", shared expert FFN {}", c.n_ff_shared) : "");
  out += fmt::format("vocabulary        {}\n", c.n_vocab);
  out += fmt::format("trained context   {}\n", c.n_ctx_train);
  out += fmt::format("rope base         {}, rms eps {}\n", c.rope_freq_base, c.rms_eps);
  out += fmt::format("router            softmax, top-{}{}\n", c.n_expert_used,
                     c.renormalize_top_k ? ", weights renormalised" : "");
}

// Tensors in Strata's own formats make a file that llama.cpp refuses; the user should know
// before sharing it.
void append_strata_types(const gguf::GgufFile& file, std::string& out) {
  std::map<std::string_view, int64_t> counts;
  for (const auto& tensor : file.tensors())
    if (gguf::is_strata_type(tensor.type_id))
      if (const auto* type = gguf::find_tensor_type(tensor.type_id)) ++counts[type->name];
  if (counts.empty()) return;
  std::string types;
  for (const auto& [name, count] : counts)
    types += fmt::format("{}{} x{}", types.empty() ? "" : ", ", name, count);
  out += fmt::format(
      "llama.cpp         cannot read this file: it holds tensors in Strata's own formats [{}]\n",
      types);
}

}  // namespace

Result<std::string> inspect_model(const std::string& path, const InspectOptions& options) {
  STRATA_ASSIGN_OR_RETURN(auto file, gguf::GgufFile::open(path));
  const size_t n_parts = file->parts().size();
  std::string out = fmt::format("file              {} ({}{}, GGUF v{}, {} tensors)\n", path,
                                format_bytes(file->file_size()),
                                n_parts > 1 ? fmt::format(" in {} parts", n_parts) : "",
                                file->version(), file->tensors().size());
  if (n_parts > 1) {
    for (size_t p = 0; p < n_parts; ++p)
      out += fmt::format("  part {}/{}        {} ({})\n", p + 1, n_parts, file->parts()[p].path,
                         format_bytes(file->parts()[p].size));
  }
  if (options.list_metadata) {
    for (const std::string& key : file->keys())
      out += fmt::format("  {} = {}\n", key, file->describe(key));
  }
  STRATA_ASSIGN_OR_RETURN(auto model, Model::describe(file));
  append_config(model->config(), out);

  if (options.list_tensors) {
    out += "tensors\n";
    for (const auto& tensor : file->tensors()) {
      const auto* type = gguf::find_tensor_type(tensor.type_id);
      out += fmt::format("  {:<34} {:<7} {:<22} {:>10}\n", tensor.name, type ? type->name : "?",
                         shape_text(tensor.shape), format_bytes(tensor.n_bytes));
    }
  }
  std::map<std::string, int64_t> type_counts;
  const ExpertLayout& experts = model->weights().experts;
  for (const auto& layer : experts.layers)
    for (const auto* t : {&layer.gate, &layer.up, &layer.down})
      ++type_counts[std::string(quant_traits(t->type).name)];
  std::string types;
  for (const auto& [name, count] : type_counts)
    types += fmt::format("{}{} x{}", types.empty() ? "" : ", ", name, count);
  const size_t unit = experts.layers.empty() ? 0 : experts.layers[0].unit_bytes();
  out +=
      fmt::format("expert units      {} layers x {} experts, {} each (layer 0), {} in all [{}]\n",
                  experts.n_layer(), experts.n_expert, format_bytes(unit),
                  format_bytes(experts.total_bytes()), types);
  append_strata_types(*file, out);
  // O_DIRECT's usual alignment; the store asks the file's reader for the real one.
  constexpr size_t kPageBytes = 4096;
  out += experts.most_reads_per_unit(kPageBytes) == 1
             ? "expert layout     unit layout: each unit one read"
             : "expert layout     stacked: each unit three reads (strata repack writes the unit "
               "layout: one)";
  out += model->file().has(kQ4_0RowGroupsKey) ? "; Q4_0 rows grouped (strata repack --grouped)\n"
                                              : "\n";
  // The memory plan's line: the same tensors, read into memory in runs widened to pages.
  out += fmt::format(
      "dense weights     {} of tensors ({} in memory when experts stream: read {}-aligned)\n",
      format_bytes(dense_tensor_bytes(model->file())),
      format_bytes(LoadedTensorData::bytes_to_load(model->file(), kPageBytes,
                                                   LoadedTensorData::Contents::kDense)),
      alignment_text(kPageBytes));
  const int64_t n_ctx = std::min<int64_t>(model->config().n_ctx_train, 4096);
  out += fmt::format("KV cache          {} at {} tokens (F32)\n",
                     format_bytes(CpuKvCache::bytes_for(model->config(), n_ctx)), n_ctx);
  out += fmt::format(
      "bytes per token   {} read in decode with every expert resident (dense + {} "
      "experts per layer; the embedding table contributes one row)\n",
      format_bytes(model->decode_bytes_per_token()), model->config().n_expert_used);
  return out;
}

}  // namespace strata

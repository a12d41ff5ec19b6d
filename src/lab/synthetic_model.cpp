#include <strata/synthetic_model.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include "base/interrupt.h"
#include "base/progress.h"
#include "base/temporary_path.h"
#include "cpu/cpu_backend.h"
#include "cpu/kernels/format_kernels.h"
#include "cpu/thread_pool.h"
#include "experts/resident_expert_store.h"
#include "gguf/gguf_writer.h"
#include "lab/router_calibration.h"
#include "lab/synthetic_presets.h"
#include "lab/synthetic_weights.h"
#include "model/transformer.h"
#include "runtime/unicode_bytes.h"

namespace strata {
namespace {

constexpr int32_t kTokenNormal = 1, kTokenControl = 3, kTokenUnused = 5;

Result<const SyntheticShape*> find_shape(const SyntheticModelOptions& options) {
  for (const auto& shape : synthetic_shapes())
    if (shape.arch == options.arch && shape.preset == options.preset) return &shape;
  std::string known;
  for (const auto& shape : synthetic_shapes())
    known += fmt::format(" {}/{}", shape.arch, shape.preset);
  return Status::errorf("make-model: no preset '{}' for architecture '{}' (known:{})",
                        options.preset, options.arch, known);
}

void set_hyper_parameters(gguf::GgufWriter& writer, const SyntheticShape& s) {
  const std::string arch(s.arch);
  auto key = [&](const char* suffix) { return arch + "." + suffix; };
  writer.set_uint32(key("block_count"), uint32_t(s.n_layer));
  writer.set_uint32(key("context_length"), uint32_t(s.n_ctx_train));
  writer.set_uint32(key("embedding_length"), uint32_t(s.n_embd));
  writer.set_uint32(key("feed_forward_length"), uint32_t(s.n_ff_expert));
  writer.set_uint32(key("expert_feed_forward_length"), uint32_t(s.n_ff_expert));
  if (s.n_ff_shared > 0)
    writer.set_uint32(key("expert_shared_feed_forward_length"), uint32_t(s.n_ff_shared));
  writer.set_uint32(key("attention.head_count"), uint32_t(s.n_head));
  writer.set_uint32(key("attention.head_count_kv"), uint32_t(s.n_head_kv));
  writer.set_uint32(key("attention.key_length"), uint32_t(s.head_dim));
  writer.set_uint32(key("attention.value_length"), uint32_t(s.head_dim));
  writer.set_float32(key("rope.freq_base"), s.rope_freq_base);
  writer.set_float32(key("attention.layer_norm_rms_epsilon"), 1e-6f);
  writer.set_uint32(key("expert_count"), uint32_t(s.n_expert));
  writer.set_uint32(key("expert_used_count"), uint32_t(s.n_expert_used));
}

// Byte-level vocabulary: the 256 GPT-2 byte symbols, <|endoftext|>, <|im_start|>, <|im_end|>,
// then unused padding tokens up to the embedding's size (as converted Qwen models have).
struct VocabData {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<std::string> merges;
  int32_t bos = -1, eos = -1;
};

VocabData byte_vocab() {
  VocabData v;
  for (int b = 0; b < 256; ++b) {
    v.tokens.emplace_back(runtime::byte_to_utf8(uint8_t(b)));
    v.types.push_back(kTokenNormal);
  }
  for (const char* special : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
    v.tokens.emplace_back(special);
    v.types.push_back(kTokenControl);
  }
  v.bos = 256;
  v.eos = 258;
  return v;
}

Result<VocabData> copied_vocab(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(auto file, gguf::GgufFile::open(path));
  VocabData v;
  STRATA_ASSIGN_OR_RETURN(v.tokens, file->get_string_array("tokenizer.ggml.tokens"));
  STRATA_ASSIGN_OR_RETURN(const auto types, file->get_int_array("tokenizer.ggml.token_type"));
  for (int64_t t : types) v.types.push_back(int32_t(t));
  if (file->has("tokenizer.ggml.merges")) {
    STRATA_ASSIGN_OR_RETURN(v.merges, file->get_string_array("tokenizer.ggml.merges"));
  }
  for (auto [key, id] : {std::pair{"tokenizer.ggml.bos_token_id", &v.bos},
                         std::pair{"tokenizer.ggml.eos_token_id", &v.eos}}) {
    if (!file->has(key)) continue;
    STRATA_ASSIGN_OR_RETURN(const int64_t value, file->get_int(key));
    *id = int32_t(value);
  }
  return v;
}

Status set_vocab(gguf::GgufWriter& writer, VocabData v, int64_t n_vocab,
                 const std::string& source) {
  if (int64_t(v.tokens.size()) > n_vocab)
    return Status::errorf("{}: {} tokens do not fit the preset's vocabulary of {}", source,
                          v.tokens.size(), n_vocab);
  while (int64_t(v.tokens.size()) < n_vocab) {
    v.tokens.push_back(fmt::format("[PAD{}]", v.tokens.size()));
    v.types.push_back(kTokenUnused);
  }
  writer.set_string("tokenizer.ggml.model", "gpt2");
  writer.set_string("tokenizer.ggml.pre", "qwen2");
  writer.set_string_array("tokenizer.ggml.tokens", v.tokens);
  writer.set_int32_array("tokenizer.ggml.token_type", v.types);
  writer.set_string_array("tokenizer.ggml.merges", v.merges);
  if (v.bos >= 0) writer.set_uint32("tokenizer.ggml.bos_token_id", uint32_t(v.bos));
  if (v.eos >= 0) writer.set_uint32("tokenizer.ggml.eos_token_id", uint32_t(v.eos));
  if (v.bos >= 0) writer.set_uint32("tokenizer.ggml.padding_token_id", uint32_t(v.bos));
  writer.set_bool("tokenizer.ggml.add_bos_token", false);
  writer.set_string("tokenizer.chat_template",
                    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
                    "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if "
                    "add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}");
  return Status();
}

Status check_format(const SyntheticShape& shape, QuantType type) {
  const QuantTraits& traits = quant_traits(type);
  for (int64_t n : {shape.n_embd, shape.n_ff_expert, shape.n_head * shape.head_dim})
    if (n % traits.block_size != 0)
      return Status::errorf(
          "make-model: preset {} has rows of {} weights, which {} (blocks of {}) "
          "cannot hold; pick a larger preset or another type",
          shape.preset, n, traits.name, traits.block_size);
  return Status();
}

// Rows of one tensor, produced in parallel chunks and appended in order.
Status write_tensor(gguf::GgufWriter& writer, ThreadPool& pool, const SyntheticWeights& weights,
                    const SyntheticTensor& tensor, ProgressBar& progress) {
  const QuantTraits& traits = quant_traits(tensor.type);
  const QuantizeRowFn quantize_row = format_kernels(tensor.type).quantize_row;
  const int64_t n = tensor.shape[0], n_rows = tensor.n_rows();
  const size_t row_bytes = traits.row_bytes(n);
  const bool direct = SyntheticWeights::has_direct_blocks(tensor);
  const int64_t rows_per_chunk = std::max<int64_t>(1, int64_t((32u << 20) / row_bytes));
  constexpr int64_t kRowsPerTask = 16;
  std::vector<uint8_t> chunk;
  std::vector<std::vector<float>> scratch(static_cast<size_t>(pool.size()),
                                          std::vector<float>(size_t(n)));
  for (int64_t first = 0; first < n_rows; first += rows_per_chunk) {
    const int64_t rows = std::min(rows_per_chunk, n_rows - first);
    chunk.resize(size_t(rows) * row_bytes);
    pool.parallel_for((rows + kRowsPerTask - 1) / kRowsPerTask, [&](int64_t task, int thread) {
      // The workers stop too: the chunk is then dropped (write_tensor_data fails).
      if (interrupted()) return;
      for (int64_t r = task * kRowsPerTask; r < std::min(rows, (task + 1) * kRowsPerTask); ++r) {
        uint8_t* out = chunk.data() + size_t(r) * row_bytes;
        if (direct) {
          weights.fill_row_blocks(tensor, first + r, out);
        } else {
          float* values = scratch[size_t(thread)].data();
          weights.fill_row(tensor, first + r, values);
          quantize_row(values, out, n);
        }
      }
    });
    STRATA_RETURN_IF_ERROR(writer.write_tensor_data(chunk));
    progress.advance(chunk.size());
  }
  return Status();
}

}  // namespace

std::vector<std::string> synthetic_presets() {
  std::vector<std::string> lines;
  for (const auto& s : synthetic_shapes())
    lines.push_back(
        fmt::format("{}/{}: {} layers, hidden {}, {}/{} heads x {}, {} experts top-{}, "
                    "expert FFN {}{}, vocabulary {}{}",
                    s.arch, s.preset, s.n_layer, s.n_embd, s.n_head, s.n_head_kv, s.head_dim,
                    s.n_expert, s.n_expert_used, s.n_ff_expert,
                    s.n_ff_shared ? fmt::format(", shared FFN {}", s.n_ff_shared) : "", s.n_vocab,
                    s.like.empty() ? "" : fmt::format(" ({})", s.like)));
  return lines;
}

Status make_synthetic_model(const SyntheticModelOptions& options) {
  // The model is read back (its routers calibrated) before it is renamed over the output, so
  // it cannot be sent to a device or a FIFO as other outputs can.
  std::error_code error;
  if (std::filesystem::exists(options.output_path, error) &&
      !std::filesystem::is_regular_file(options.output_path, error))
    return Status::errorf("{}: not a regular file; make-model writes a model file",
                          options.output_path);
  STRATA_ASSIGN_OR_RETURN(const SyntheticShape* shape, find_shape(options));
  STRATA_ASSIGN_OR_RETURN(const QuantType type, parse_quant_type(options.type));
  STRATA_RETURN_IF_ERROR(check_format(*shape, type));
  STRATA_ASSIGN_OR_RETURN(
      const QuantType expert_type,
      parse_quant_type(options.expert_type.empty() ? options.type : options.expert_type));
  STRATA_RETURN_IF_ERROR(check_format(*shape, expert_type));
  VocabData vocab = byte_vocab();
  if (!options.vocab_path.empty()) {
    STRATA_ASSIGN_OR_RETURN(vocab, copied_vocab(options.vocab_path));
  }

  SyntheticWeights weights(*shape, options.seed);
  // Written under a temporary name, calibrated, then renamed: the output path only ever holds a
  // finished model, and a failure or an interruption leaves no partial file.
  TemporaryPath partial(fmt::format("{}.partial-{}", options.output_path, getpid()),
                        TemporaryPath::Kind::kFile);
  gguf::GgufWriter writer(partial.path());
  writer.set_string("general.architecture", std::string(shape->arch));
  writer.set_string("general.name",
                    fmt::format("strata-synthetic-{}-{}", shape->arch, shape->preset));
  writer.set_string(
      "general.description",
      nlohmann::json{
          {"generator", "strata make-model"},
          {"arch", options.arch},
          {"preset", options.preset},
          {"type", options.type},
          {"expert_type", options.expert_type.empty() ? options.type : options.expert_type},
          {"seed", options.seed},
          {"vocab", options.vocab_path.empty() ? "byte-level" : options.vocab_path}}
          .dump());
  set_hyper_parameters(writer, *shape);
  STRATA_RETURN_IF_ERROR(set_vocab(writer, std::move(vocab), shape->n_vocab,
                                   options.vocab_path.empty() ? "byte-level" : options.vocab_path));

  const auto tensors = weights.tensors(type, expert_type);
  uint64_t total_bytes = 0;
  for (const auto& tensor : tensors) {
    STRATA_ASSIGN_OR_RETURN(const uint64_t bytes,
                            writer.add_tensor(tensor.name, tensor.shape, uint32_t(tensor.type)));
    total_bytes += bytes;
  }
  STRATA_RETURN_IF_ERROR(writer.begin());
  const int n_threads = options.n_threads > 0 ? options.n_threads : ThreadPool::default_threads();
  {
    STRATA_ASSIGN_OR_RETURN(const std::unique_ptr<ThreadPool> pool, ThreadPool::start(n_threads));
    ProgressBar progress("writing " + options.output_path, total_bytes);
    for (const auto& tensor : tensors)
      STRATA_RETURN_IF_ERROR(write_tensor(writer, *pool, weights, tensor, progress));
    progress.finish();
  }
  STRATA_RETURN_IF_ERROR(writer.finish());
  STRATA_RETURN_IF_ERROR(calibrate_routers(partial.path(), weights,
                                           {.target_repeat = 0.35,
                                            .n_tokens = 256,
                                            .seed = options.seed ^ 0x5eed,
                                            .n_threads = n_threads}));
  if (interrupted()) return interrupted_error();
  CommitScope commit;
  if (!commit.entered()) return interrupted_error();
  if (std::rename(partial.path().c_str(), options.output_path.c_str()) != 0)
    return Status::errorf("{}: cannot rename the finished model: {}", options.output_path,
                          std::strerror(errno));
  commit.in_place();
  partial.release();
  return Status();
}

Result<RoutingReport> measure_routing(const std::string& model_path, int64_t n_tokens,
                                      uint64_t seed, int n_threads) {
  STRATA_ASSIGN_OR_RETURN(auto file, gguf::GgufFile::open(model_path));
  STRATA_ASSIGN_OR_RETURN(auto model, Model::load(file));
  const ModelConfig& config = model->config();
  ResidentExpertStore store(model->weights().experts);
  STRATA_ASSIGN_OR_RETURN(
      const std::unique_ptr<Backend> backend,
      make_cpu_backend(config, model->weight_formats(),
                       n_threads > 0 ? n_threads : ThreadPool::default_threads()));
  Transformer transformer(model, store, *backend);
  const int64_t k = config.n_expert_used, n_layer = config.n_layer;
  std::vector<int32_t> routes(static_cast<size_t>(n_layer * n_tokens * k));  // [layer][token][k]
  transformer.set_route_observer(
      [&](int layer, int64_t t, std::span<const int32_t> experts, std::span<const float>) {
        std::copy(experts.begin(), experts.end(), routes.begin() + (layer * n_tokens + t) * k);
      });
  const std::vector<int32_t> tokens = seeded_tokens(n_tokens, config.n_vocab, seed);
  STRATA_ASSIGN_OR_RETURN(const auto cache, backend->make_kv_cache(n_tokens));
  std::vector<float> logits;
  STRATA_RETURN_IF_ERROR(transformer.forward(tokens, 0, *cache, false, logits));

  RoutingReport report;
  report.n_tokens = n_tokens;
  auto picks = [&](int64_t layer, int64_t t) {
    const auto begin = routes.begin() + (layer * n_tokens + t) * k;
    return std::set<int32_t>(begin, begin + k);
  };
  auto overlap = [&](const std::set<int32_t>& a, const std::set<int32_t>& b) {
    int64_t shared = 0;
    for (int32_t e : a) shared += b.count(e);
    return double(shared) / double(k);
  };
  for (int64_t layer = 0; layer < n_layer; ++layer) {
    LayerRoutingStats stats;
    std::vector<int64_t> load(static_cast<size_t>(config.n_expert), 0);
    for (int64_t t = 0; t < n_tokens; ++t) {
      const auto current = picks(layer, t);
      for (int32_t e : current) ++load[size_t(e)];
      if (t > 0)
        stats.repeat_fraction += overlap(current, picks(layer, t - 1)) / double(n_tokens - 1);
      if (layer > 0)
        stats.previous_layer_overlap += overlap(current, picks(layer - 1, t)) / double(n_tokens);
    }
    const double mean = double(n_tokens * k) / double(config.n_expert);
    stats.max_over_mean_load = double(*std::max_element(load.begin(), load.end())) / mean;
    stats.unused_experts = int(std::count(load.begin(), load.end(), 0));
    report.layers.push_back(stats);
  }
  return report;
}

std::string RoutingReport::to_text() const {
  std::string text = fmt::format(
      "routing over {} random tokens\nlayer  repeat  max/mean load  unused  overlap with layer "
      "above\n",
      n_tokens);
  double min_repeat = 1, max_repeat = 0, max_load = 0;
  for (size_t l = 0; l < layers.size(); ++l) {
    const auto& s = layers[l];
    text += fmt::format("{:>5}  {:>6.2f}  {:>13.2f}  {:>6}  {:>6.2f}\n", l, s.repeat_fraction,
                        s.max_over_mean_load, s.unused_experts, s.previous_layer_overlap);
    min_repeat = std::min(min_repeat, s.repeat_fraction);
    max_repeat = std::max(max_repeat, s.repeat_fraction);
    max_load = std::max(max_load, s.max_over_mean_load);
  }
  text += fmt::format(
      "repeat from the previous token {:.2f}-{:.2f}, busiest expert {:.2f}x the mean load\n",
      min_repeat, max_repeat, max_load);
  return text;
}

}  // namespace strata

// The seam between the model's layer loop and the hardware that runs its math.
//
// How a backend plugs in (DESIGN.md §1, "a new backend is one folder"):
//   * The model layer (model/transformer.h) owns every decision: the layer loop, routing policy
//     (the MoCE bonus and its protected picks), read-ahead, and the ExpertStore protocol. It
//     calls the ops below in one fixed order per batch.
//   * A backend (src/cpu/, later src/cuda/) implements the ops over activations in its own
//     memory, keeps its kernels in its own tables (one per format, beside the reference
//     formats of quant/), and makes the KV cache its attention reads. It knows nothing of
//     files, policies or architectures: the weights reach it as the structs of
//     backend/layer_weights.h, in host memory that the model layer has placed (place()) in
//     the backend's own.
//   * Every op is deterministic: work is split by shape, never by timing or thread count, and
//     no reduction uses atomics, so logits are a function of the inputs alone.
//   * What the host needs (router picks, read-ahead rankings, logits, what observers record)
//     comes back in host memory; all else stays in the backend between ops.
//   * A backend that is not part of a build is a stub whose factory refuses with one line, so
//     callers never test for it (runtime/backend_factory.h).
//
// Thread-compatibility: one thread at a time (the engine's compute thread); a backend may run
// its ops on threads of its own.
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/expert_slot_memory.h"
#include "backend/kv_cache.h"
#include "backend/layer_weights.h"
#include "backend/model_shape.h"

namespace strata {

// Rows of float activations in a backend's memory: [n_rows][width].
struct Activations {
  float* data = nullptr;
  int64_t n_rows = 0;
  int64_t width = 0;
};

// The activations the layer loop hands from op to op for one batch of tokens.
struct BatchActivations {
  Activations hidden;     // [n_tokens][n_embd]: the residual stream h
  Activations normed;     // [n_tokens][n_embd]: rms_norm(h) before the FFN (router, experts)
  Activations lookahead;  // [n_tokens][n_embd]: a later layer's norm of h (read-ahead)
  Activations moe_out;    // [n_tokens][n_embd]: the FFN's output before the residual add
};

// The largest batch scratch must serve, for Backend::scratch_bytes.
struct ScratchShape {
  int64_t max_tokens = 1;  // prompt tokens per forward batch
  int64_t n_ctx = 0;
  bool all_logits = false;  // teacher forcing: a row of logits per token
  // Scores of the next-expert predictor per layer (0: none), NextExpertPredictor::n_scores.
  int64_t next_visit_scores = 0;
};

// How route() chooses k experts per token (DESIGN.md §3). The model layer fills it.
struct RouteRequest {
  int k = 0;
  bool renormalize = false;  // the k weights rescaled to sum to 1 (qwen3moe)
  // Cache-aware routing: +moce_bonus on the logits of experts with resident[e] set, except
  // that the top `moce_protect` picks come from the exact logits. Weights always do.
  float moce_bonus = 0.0f;
  int moce_protect = 0;
  std::span<const uint8_t> resident;  // [n_expert], read when moce_bonus != 0
  // With lookahead_count > 0, the read-ahead's ranking in the same op: what rank_experts(
  // *lookahead_router, lookahead, lookahead_count) returns, read back with the picks at once.
  const Matrix* lookahead_router = nullptr;
  Activations lookahead;
  int lookahead_count = 0;
  // x itself in host memory too, read back with the picks (experts the host computes).
  bool input_to_host = false;
};

// Host memory, valid until the next route(); the ranking until the next rank_experts() too.
struct RouteResult {
  std::span<const int32_t> picks;   // [n_tokens][k], best first
  std::span<const float> weights;   // [n_tokens][k], the mixture weights of the picks
  std::span<const int32_t> ranked;  // [n_tokens][lookahead_count]: the request's ranking
  std::span<const float> input;     // [n_tokens][width]: x, when the request asked for it
};

// One claimed expert in compute_experts: its three slices and its rows of the gathered input
// (tokens routed to it, grouped by expert by the model layer).
struct ExpertJob {
  Matrix gate, up, down;
  int64_t first_row = 0;
  int64_t n_rows = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  // One line: "cpu: 2 threads, avx512 kernels".
  virtual std::string describe() const = 0;
  virtual int n_threads() const = 0;

  // Whether the weights are copied into memory of the backend's own (a GPU's) rather than
  // computed on where the host holds them. An expert arena there is filled from a host tier
  // (experts/host_tier_reader.h) instead of reads from the file.
  virtual bool computes_from_own_memory() const { return false; }
  // Makes the weights at [host, host + bytes) (a matrix, a 1-D weight, resident experts) the
  // backend's to compute with: a Matrix::data or Vector::data() inside a placed range then
  // reaches the backend's copy of it. The CPU computes on host memory and copies nothing; a GPU
  // uploads the range. Placing a range an earlier one holds (tied weights) does nothing.
  // REQUIRES: the host bytes stay as they are while the backend computes with them.
  virtual Status place(const void* host, size_t bytes) = 0;
  // The first failure of an op since the backend was made (a GPU's failed launch or copy, device
  // memory it could not get), naming the op. After one, ops compute nothing and route() returns
  // valid but meaningless picks, so that a forward pass runs to its end and returns it.
  virtual Status failure() const { return Status(); }

  // The keys and values of a sequence of up to n_ctx positions.
  virtual Result<std::unique_ptr<KvCache>> make_kv_cache(int64_t n_ctx) = 0;
  virtual uint64_t kv_cache_bytes(int64_t n_ctx) const = 0;
  // Keys and values of every layer for one position: what attention reads per position.
  virtual uint64_t kv_cache_bytes_per_position() const = 0;
  // Memory for an expert arena's slots, each slot aligned to `alignment` (an O_DIRECT reader's).
  virtual Result<std::unique_ptr<ExpertSlotMemory>> make_expert_slot_memory(
      std::span<const SlotClassShape> classes, size_t alignment) = 0;
  // Scratch memory for batches up to shape.max_tokens: the memory plan's line, exact.
  virtual uint64_t scratch_bytes(const ScratchShape& shape) const = 0;
  // Frees scratch sized for more than one token (after a prompt).
  virtual void release_scratch() = 0;

  // Shapes the batch's activations for n_tokens (allocating scratch for that many the first
  // time); valid until the next begin_batch() or release_scratch().
  virtual BatchActivations& begin_batch(int64_t n_tokens) = 0;

  // hidden[t] = row tokens[t] of `table`. REQUIRES: ids in range.
  virtual void embed(const Matrix& table, std::span<const int32_t> tokens, Activations hidden) = 0;
  // The attention sublayer of layer `layer` for tokens at positions [pos0, pos0 + n_rows):
  // hidden += o · attention(...) of rms_norm(hidden); their keys and values go to `cache`.
  virtual void attention(const AttentionWeights& weights, int layer, int64_t pos0, KvCache& cache,
                         Activations hidden) = 0;
  // out = rms_norm(x) * weight, row by row.
  virtual void rms_norm(const Vector& weight, Activations x, Activations out) = 0;
  // Router logits of x, softmax and top-k as `request` says (and its ranking).
  virtual RouteResult route(const Matrix& router, Activations x, const RouteRequest& request) = 0;
  // The top `count` experts of each row of router · x, best first (ties by lower id), for the
  // read-ahead: host memory [n_rows][count], valid until the next rank_experts().
  virtual std::span<const int32_t> rank_experts(const Matrix& router, Activations x, int count) = 0;
  // w · x[row] on the host (the next-expert predictor's scores), valid until the next call.
  virtual std::span<const float> product_of_row(const Matrix& w, Activations x, int64_t row) = 0;
  // x in host memory, for observers.
  virtual std::span<const float> host_view(Activations x) = 0;
  // x = `rows` (host memory, [x.n_rows][x.width]), which may change once the call returns.
  virtual void load_rows(std::span<const float> rows, Activations x) = 0;

  // Routed experts, per layer: gather_expert_inputs once, compute_experts for each batch of
  // claimed experts (in any order: each writes only its own rows), then mix_experts.
  // Row r of the gathered input is x[token_of_row[r]], in the formats the slices take.
  virtual void gather_expert_inputs(Activations x, std::span<const int64_t> token_of_row,
                                    QuantType gate_type, QuantType up_type,
                                    QuantType down_type) = 0;
  // down(silu(gate · x_r) ⊙ up · x_r) for each job's rows r, into those rows of the experts'
  // output.
  virtual void compute_experts(std::span<const ExpertJob> jobs) = 0;
  // The experts' output rows of `jobs` (what compute_experts wrote for them), one job's rows
  // after another, in host memory valid until the next call.
  virtual std::span<const float> expert_outputs(std::span<const ExpertJob> jobs) = 0;
  // The experts' output rows of `jobs` = `rows` (laid out as expert_outputs() gives them), for
  // experts computed elsewhere (the host's CPU), as if compute_experts had written them. `rows`
  // may change once the call returns.
  virtual void write_expert_outputs(std::span<const ExpertJob> jobs,
                                    std::span<const float> rows) = 0;
  // moe_out[t] = sum_i weights[t][i] · output row row_of_pick[t * k + i], in pick order.
  virtual void mix_experts(std::span<const int64_t> row_of_pick, std::span<const float> weights,
                           int k, Activations moe_out) = 0;

  // Routing in place: where the backend's memory holds every expert of a layer (a GPU with all
  // weights resident), route(), gather_expert_inputs(), compute_experts() and mix_experts() as
  // one op for a decode batch, the picks staying in the backend's memory until logits() has
  // run, so that the host does not wait for the device once a layer. Each pick's row is
  // computed on its own (two tokens routed to one expert read it twice), which gives the same
  // bits as the rows grouped by expert.
  static constexpr int64_t kMaxTokensRoutedInPlace = 8;
  virtual bool routes_in_place() const { return false; }
  // REQUIRES: routes_in_place(); x.n_rows <= kMaxTokensRoutedInPlace; `experts` [n_expert] the
  // same for a layer at every call.
  virtual void route_and_compute_experts(int layer, const Matrix& router, Activations x,
                                         const RouteRequest& request,
                                         std::span<const ExpertMatrices> experts,
                                         Activations moe_out);
  // After logits(): the picks and weights of route_and_compute_experts(layer, ...) in this
  // forward pass, in host memory valid until the next forward pass.
  virtual RouteResult routed_in_place(int layer);
  // Called after begin_batch(1) for a step whose ops are the same at every call with this cache:
  // one token, its layers routed in place, nothing read back before logits(). The layer loop
  // then calls the ops as always; a backend may record them once (a CUDA graph) and at later
  // such steps launch the recording, with the step's token and position, in their place. The
  // results are the same bits.
  virtual void begin_repeatable_step(const KvCache& cache) { (void)cache; }
  // Called before attention() of `layer` in a one-token step whose routes come back to the host
  // (an expert arena, read-ahead) and whose ops from there to route() are the same at every call
  // for this layer and cache: attention, the FFN norm, the read-ahead's norm and the route with
  // its ranking, no cache-aware routing, nothing read back before the routes. A backend may
  // record those ops once (a CUDA graph a layer) and at later such calls launch the recording,
  // with the step's position, at route() in their place. The results are the same bits.
  virtual void begin_repeatable_layer(const KvCache& cache, int layer) {
    (void)cache;
    (void)layer;
  }
  // moe_out += down(silu(gate · x) ⊙ up · x) [· sigmoid(gate_input · x)].
  virtual void shared_expert(const SharedExpertWeights& weights, Activations x,
                             Activations moe_out) = 0;
  // y += x
  virtual void add(Activations x, Activations y) = 0;
  // logits = output · rms_norm(hidden[first_row..]) * norm, in host memory [rows][n_vocab].
  virtual void logits(const Vector& norm, const Matrix& output, Activations hidden,
                      int64_t first_row, std::vector<float>& logits) = 0;

  // The compute thread is about to block on expert reads: threads of the backend that spin
  // waiting for work should sleep (they would take cores the reads need).
  virtual void idle() {}
  // While `condition()` holds at the start of an op, leave one core of the host free (the
  // expert reads and, on a VM, the virtual disk's emulation share it). Results do not change.
  virtual void spare_a_core_while(std::function<bool()> condition) { (void)condition; }
  // Bytes per second moved (read plus written) by a copy within the memory the weights are
  // computed from, measured now, where that memory is the backend's own (a GPU's); nullopt
  // where it is the host's, which the caller probes itself, or where there is no room to copy.
  virtual std::optional<double> measure_memory_bandwidth() { return std::nullopt; }
  // Bytes per second a copy from page-locked host memory into the backend's own memory moves,
  // measured now: what bounds an arena of its own fed from host memory. nullopt where the
  // backend computes from host memory, or where there is no room to copy.
  virtual std::optional<double> measure_host_to_device_bandwidth() { return std::nullopt; }
  // The most memory of its own (a GPU's) the backend's allocations have held at once; nullopt
  // where it computes from host memory, which the process's peak RSS counts.
  virtual std::optional<uint64_t> peak_own_memory_bytes() const { return std::nullopt; }
  // Milliseconds the calling thread has spent blocked on work the backend queued (reading its
  // results back) since it was made: where a GPU's step time goes beside the host's own. 0
  // where the ops run while they are called (the CPU).
  virtual double device_wait_ms() const { return 0; }
};

}  // namespace strata

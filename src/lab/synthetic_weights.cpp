// How the synthetic weights make routing realistic.
//
// Random weights route degenerately: attention averages the values of past tokens, that
// average becomes a component common to all tokens, it accumulates over layers, and routers
// reading it send every token to the same few experts. Trained models instead show spread
// expert load and strong but partial reuse from one token to the next (20-50 % of a token's
// experts were also its predecessor's). The generator builds that in with four mechanisms:
//
// 1. A context subspace. n_context dimensions of the residual stream carry a drifting
//    "topic". Only the context heads write them (attn_output rows); embeddings and experts
//    never do (their rows/columns there are zero).
// 2. Token-identity dimensions. The next n_embd / 16 dimensions hold the token's own
//    embedding at every depth: nothing but the embedding writes them. Everything else that
//    attention and the experts write goes to the remaining, mixed dimensions, which grow
//    smoother with depth as recency windows compound; a router reading them in deep layers
//    would see a per-sequence bias and send most of a sequence's tokens to a few experts.
// 3. Recency heads. Every head gets a constant query and key (qwen3moe: read from dimension
//    0, an anchor every embedding sets to 1 and nothing else reads or writes; qwen2moe: from
//    the q/k biases). After NEOX RoPE a score depends only on the distance to the attended
//    token, score(d) = g * mean_p cos(d * theta_p) over a few rotary pairs, so each head
//    averages the values of its last few tokens, each KV group over its own window: a moving
//    window drifts but never converges the way a plain average over the whole past does, so
//    no component common to all tokens builds up. The heads of KV group 0 (the context heads)
//    average the token-identity dimensions and write them into the context subspace, which
//    therefore drifts with the last few tokens at every depth.
// 4. Routers read the context subspace (slow, shared with recent tokens) and the
//    token-identity dimensions (fast); the ratio of the two gains sets how many experts
//    repeat. Neither part has a mean or a long memory, so load stays spread in every layer.
#include "lab/synthetic_weights.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "base/fp16.h"
#include "quant/q2_0.h"
#include "quant/q4_0.h"
#include "quant/q4_k.h"

namespace strata {
namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t hash_name(const std::string& name) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return h;
}

class RowRandom {
 public:
  explicit RowRandom(uint64_t seed) : state_(seed) {}
  // Irwin-Hall sum of four uniforms, scaled to unit variance: close enough to a normal for
  // random weights, and four times cheaper than Box-Muller.
  float normal() {
    const uint64_t bits = splitmix64(state_);
    float sum = 0;
    for (int i = 0; i < 4; ++i) sum += float((bits >> (16 * i)) & 0xffff) * (1.0f / 65536.0f);
    return (sum - 2.0f) * 1.7320508f;
  }
  uint64_t bits() { return splitmix64(state_); }

 private:
  uint64_t state_;
};

void fill_normal(RowRandom& random, float* out, int64_t begin, int64_t end, float std) {
  for (int64_t i = begin; i < end; ++i) out[i] = random.normal() * std;
}

// Symmetric 4-bit codes k in [-7, 7], drawn from one byte each: a rounded normal with standard
// deviation kCodeStd, so w = d * k has standard deviation d * kCodeStd.
constexpr float kCodeStd = 2.5f;
const std::array<int8_t, 256>& code_table() {
  static const auto table = [] {
    std::array<int8_t, 256> t{};
    for (int i = 0; i < 256; ++i) {
      // Inverse normal CDF by bisection: slow, runs once.
      const double p = (i + 0.5) / 256.0;
      double lo = -8, hi = 8;
      for (int step = 0; step < 60; ++step) {
        const double mid = (lo + hi) / 2;
        (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
      }
      t[size_t(i)] = int8_t(std::clamp<long>(std::lround(lo * kCodeStd), -7, 7));
    }
    return t;
  }();
  return table;
}

// Codes drawn from the table, 8 bits each from the row's generator; the anchor column's are 0.
struct CodeStream {
  RowRandom& random;
  const std::array<int8_t, 256>& codes;
  int64_t zero_column;
  uint64_t bits = 0;
  int left = 0;

  int next(int64_t column) {
    if (left == 0) {
      bits = random.bits();
      left = 8;
    }
    const int code = codes[bits & 0xff];
    bits >>= 8;
    --left;
    return column == zero_column ? 0 : code;
  }
};

void write_q4_0_blocks(int64_t n, float d, CodeStream& codes, uint8_t* out) {
  auto* blocks = reinterpret_cast<BlockQ4_0*>(out);
  for (int64_t b = 0; b < n / 32; ++b) {
    BlockQ4_0& block = blocks[b];
    block.d = fp32_to_fp16(d);
    for (int j = 0; j < 16; ++j) {
      const int lo = codes.next(b * 32 + j) + 8, hi = codes.next(b * 32 + j + 16) + 8;
      block.qs[j] = uint8_t(lo | (hi << 4));
    }
  }
}

// The Gaussian codes (std kCodeStd) rounded onto {-1, 0, 1, 2} at a step of kCodeStd, the
// scale's sign drawn per block so that the long side of the grid falls either way.
void write_q2_0_blocks(int64_t n, float std, CodeStream& codes, uint8_t* out) {
  auto* blocks = reinterpret_cast<BlockQ2_0*>(out);
  for (int64_t b = 0; b < n / 64; ++b) {
    BlockQ2_0& block = blocks[b];
    const float sign = (codes.random.bits() & 1) ? -1.0f : 1.0f;
    block.d = fp32_to_fp16(sign * std);
    std::memset(block.qs, 0, sizeof block.qs);
    for (int j = 0; j < 64; ++j) {
      const int q = std::clamp(int(std::lround(double(codes.next(b * 64 + j)) / kCodeStd)), -1, 2);
      block.qs[j % 16] = uint8_t(block.qs[j % 16] | (q + 1) << (2 * (j / 16)));
    }
  }
}

// Q4_K: w = d * scale * q - dmin * min with min = scale and dmin = 8 d, so w = d * scale *
// (q - 8): symmetric codes, with a 6-bit scale per 32 weights as real Q4_K files have.
void write_q4_k_blocks(int64_t n, float std, CodeStream& codes, uint8_t* out) {
  auto* blocks = reinterpret_cast<BlockQ4_K*>(out);
  for (int64_t b = 0; b < n / 256; ++b) {
    BlockQ4_K& block = blocks[b];
    uint8_t scales[8];
    double mean_scale = 0;
    for (int s = 0; s < 8; ++s) {
      scales[s] = uint8_t(32 + (codes.random.bits() & 31));
      mean_scale += scales[s] / 8.0;
    }
    const float d = std / float(kCodeStd * mean_scale);
    block.d = fp32_to_fp16(d);
    block.dmin = fp32_to_fp16(8.0f * fp16_to_fp32(block.d));
    // 6-bit packing (ggml get_scale_min_k4): sub-blocks 0-3 in the low 6 bits of bytes 0-3
    // (scale) and 4-7 (min); sub-blocks 4-7 split into low nibbles in bytes 8-11 and their top
    // two bits in the high bits of bytes 0-7.
    for (int s = 0; s < 4; ++s) {
      block.scales[s] = uint8_t(scales[s] | ((scales[s + 4] >> 4) << 6));
      block.scales[s + 4] = uint8_t(scales[s] | ((scales[s + 4] >> 4) << 6));
      block.scales[s + 8] = uint8_t((scales[s + 4] & 15) | ((scales[s + 4] & 15) << 4));
    }
    // Quants: 64-weight groups, the low nibbles of 32 bytes hold weights 0-31 of the group,
    // the high nibbles weights 32-63.
    for (int group = 0; group < 4; ++group)
      for (int j = 0; j < 32; ++j) {
        const int64_t column = b * 256 + group * 64 + j;
        const int lo = codes.next(column) + 8, hi = codes.next(column + 32) + 8;
        block.qs[group * 32 + j] = uint8_t(lo | (hi << 4));
      }
  }
}

// Score of a recency head at distance 0 (the q/k norm weights or biases scale q and k to it).
constexpr double kRecencyGain = 12.0;

// What a recency head's average remembers, for score(d) = gain * mean over pairs of
// cos(d * theta_p) over distances 0..n-1: the correlation of its outputs at neighbouring
// tokens (how much of its window the next token shares) and their integrated
// autocorrelation time (how many tokens its average effectively spans; few rotary pairs
// revive at large distances and make it long).
struct RecencyMemory {
  double neighbour_correlation;
  double span;
};
RecencyMemory recency_memory(const std::vector<double>& thetas, double gain, int n) {
  std::vector<double> weights(static_cast<size_t>(n));
  for (int d = 0; d < n; ++d) {
    double mean_cos = 0;
    for (double theta : thetas) mean_cos += std::cos(d * theta);
    weights[size_t(d)] = std::exp(gain * mean_cos / double(thetas.size()) - gain);
  }
  auto autocorrelation = [&](int lag) {
    double sum = 0;
    for (int d = 0; d + lag < n; ++d) sum += weights[size_t(d)] * weights[size_t(d + lag)];
    return sum;
  };
  const double energy = autocorrelation(0);
  double span = 1;
  for (int lag = 1; lag < n; ++lag) span += 2 * autocorrelation(lag) / energy;
  return {autocorrelation(1) / energy, span};
}

}  // namespace

int64_t SyntheticTensor::n_rows() const {
  int64_t rows = 1;
  for (size_t i = 1; i < shape.size(); ++i) rows *= shape[i];
  return rows;
}

SyntheticWeights::SyntheticWeights(const SyntheticShape& shape, uint64_t seed)
    : shape_(shape),
      seed_(seed),
      router_gains_(static_cast<size_t>(shape.n_layer)),
      anchor_(shape.arch == "qwen3moe") {
  first_context_ = anchor_ ? 1 : 0;
  n_context_ = std::max<int64_t>(4, shape.n_embd / 16);
  first_token_dim_ = first_context_ + n_context_;
  first_mixed_dim_ = first_token_dim_ + std::max<int64_t>(4, shape.n_embd / 16);

  // Every KV group attends by recency, each at its own scale: a head that averaged over the
  // whole past would converge to a component shared by all tokens (the degenerate routing
  // this generator exists to avoid). Each group's target is the correlation of its outputs
  // at neighbouring tokens; among the rotary pairs that come close, the shortest memory wins,
  // because what a router's input remembers from far back is a bias shared by a whole
  // sequence. Group 0 (the context heads) shares ~3/4 of its window with the next token.
  const int64_t half = shape.head_dim / 2;
  const double gain = kRecencyGain;
  qk_norm_gain_ = float(std::sqrt(gain / std::sqrt(double(shape.head_dim))));
  const double targets[] = {0.75, 0.6, 0.86, 0.92, 0.67, 0.89, 0.94, 0.8};
  constexpr double kTolerance = 0.02;
  // Every candidate profile (rotary pairs, constant share) once; each group then picks its own.
  struct Candidate {
    int64_t pairs, first;
    double constant;
    RecencyMemory memory;
  };
  std::vector<Candidate> candidates;
  for (const int64_t pairs : {4, 8, 12, 16}) {
    for (int64_t first = 0; first + pairs < half; ++first) {
      std::vector<double> thetas;
      for (int64_t p = first; p < first + pairs; ++p)
        thetas.push_back(
            std::pow(double(shape.rope_freq_base), -2.0 * double(p) / double(shape.head_dim)));
      for (double constant = 0; constant < 0.95; constant += 0.05)
        candidates.push_back(
            {pairs, first, constant, recency_memory(thetas, gain * (1 - constant), 512)});
    }
  }
  for (int64_t group = 0; group < shape.n_head_kv; ++group) {
    const double target = targets[group % 8];
    double best_error = 1e9, best_span = 1e9, best_constant = 0;
    int64_t best_first = 0, n_pairs = 0;
    for (const Candidate& candidate : candidates) {
      const double error =
          std::max(kTolerance, std::fabs(candidate.memory.neighbour_correlation - target));
      if (error < best_error || (error == best_error && candidate.memory.span < best_span)) {
        best_error = error;
        best_span = candidate.memory.span;
        best_first = candidate.first;
        n_pairs = candidate.pairs;
        best_constant = candidate.constant;
      }
    }
    // A unit-RMS vector: `constant` of the energy on the slowest rotary pair (its angle
    // barely moves, so it only lowers the effective gain), the rest spread over the chosen
    // pairs (dimensions p and p + half of each).
    std::vector<float> query(static_cast<size_t>(shape.head_dim), 0.0f);
    const double energy = double(shape.head_dim);
    const float value = float(std::sqrt(energy * (1 - best_constant) / double(2 * n_pairs)));
    for (int64_t p = best_first; p < best_first + n_pairs; ++p) {
      query[size_t(p)] = value;
      query[size_t(p + half)] = value;
    }
    query[size_t(half - 1)] = query[size_t(2 * half - 1)] =
        float(std::sqrt(energy * best_constant / 2));
    group_query_.push_back(std::move(query));
  }
}

std::vector<SyntheticTensor> SyntheticWeights::tensors(QuantType type,
                                                       QuantType expert_type) const {
  using K = SyntheticTensorKind;
  const auto& s = shape_;
  const int64_t q_dim = s.n_head * s.head_dim, kv_dim = s.n_head_kv * s.head_dim;
  std::vector<SyntheticTensor> list;
  auto add = [&](std::string name, K kind, int64_t layer, std::vector<int64_t> shape, QuantType t) {
    list.push_back({std::move(name), kind, layer, std::move(shape), t});
  };
  add("token_embd.weight", K::kEmbedding, -1, {s.n_embd, s.n_vocab}, type);
  for (int64_t l = 0; l < s.n_layer; ++l) {
    auto name = [&](const char* suffix) { return "blk." + std::to_string(l) + "." + suffix; };
    add(name("attn_norm.weight"), K::kNorm, l, {s.n_embd}, QuantType::kF32);
    add(name("attn_q.weight"), K::kAttnQ, l, {s.n_embd, q_dim}, type);
    add(name("attn_k.weight"), K::kAttnK, l, {s.n_embd, kv_dim}, type);
    add(name("attn_v.weight"), K::kAttnV, l, {s.n_embd, kv_dim}, type);
    if (anchor_) {
      add(name("attn_q_norm.weight"), K::kQNorm, l, {s.head_dim}, QuantType::kF32);
      add(name("attn_k_norm.weight"), K::kKNorm, l, {s.head_dim}, QuantType::kF32);
    } else {
      add(name("attn_q.bias"), K::kQBias, l, {q_dim}, QuantType::kF32);
      add(name("attn_k.bias"), K::kKBias, l, {kv_dim}, QuantType::kF32);
      add(name("attn_v.bias"), K::kVBias, l, {kv_dim}, QuantType::kF32);
    }
    add(name("attn_output.weight"), K::kAttnOutput, l, {q_dim, s.n_embd}, type);
    add(name("ffn_norm.weight"), K::kNorm, l, {s.n_embd}, QuantType::kF32);
    add(name("ffn_gate_inp.weight"), K::kRouter, l, {s.n_embd, s.n_expert}, QuantType::kF32);
    add(name("ffn_gate_exps.weight"), K::kExpertGateUp, l, {s.n_embd, s.n_ff_expert, s.n_expert},
        expert_type);
    add(name("ffn_up_exps.weight"), K::kExpertGateUp, l, {s.n_embd, s.n_ff_expert, s.n_expert},
        expert_type);
    add(name("ffn_down_exps.weight"), K::kExpertDown, l, {s.n_ff_expert, s.n_embd, s.n_expert},
        expert_type);
    if (s.n_ff_shared > 0) {
      add(name("ffn_gate_inp_shexp.weight"), K::kSharedGateInput, l, {s.n_embd}, QuantType::kF32);
      add(name("ffn_gate_shexp.weight"), K::kExpertGateUp, l, {s.n_embd, s.n_ff_shared}, type);
      add(name("ffn_up_shexp.weight"), K::kExpertGateUp, l, {s.n_embd, s.n_ff_shared}, type);
      add(name("ffn_down_shexp.weight"), K::kExpertDown, l, {s.n_ff_shared, s.n_embd}, type);
    }
  }
  add("output_norm.weight", K::kNorm, -1, {s.n_embd}, QuantType::kF32);
  add("output.weight", K::kOutput, -1, {s.n_embd, s.n_vocab}, type);
  return list;
}

uint64_t SyntheticWeights::row_seed(const SyntheticTensor& tensor, int64_t row) const {
  uint64_t state = seed_ ^ hash_name(tensor.name);
  splitmix64(state);
  return splitmix64(state) + uint64_t(row) * 0xd1b54a32d192ed03ull;
}

void SyntheticWeights::fill_row(const SyntheticTensor& tensor, int64_t row, float* out) const {
  using K = SyntheticTensorKind;
  const int64_t n = tensor.shape[0];
  const int64_t D = shape_.n_embd, head_dim = shape_.head_dim;
  const int64_t group = shape_.n_head / shape_.n_head_kv;
  const int64_t unit =
      tensor.shape.size() > 1 ? row % tensor.shape[1] : row;  // row within one matrix
  RowRandom random(row_seed(tensor, row));
  std::fill(out, out + n, 0.0f);
  const float bias_scale = qk_norm_gain_;  // qwen2moe: the recency q/k come from the biases
  switch (tensor.kind) {
    case K::kNorm:
      std::fill(out, out + n, 1.0f);
      break;
    case K::kQNorm:
    case K::kKNorm:
      std::fill(out, out + n, qk_norm_gain_);
      break;
    case K::kEmbedding:
      if (anchor_) out[0] = 1.0f;
      fill_normal(random, out, first_token_dim_, n, 1.0f);
      break;
    case K::kOutput:
      fill_normal(random, out, first_context_, n, 2.0f / std::sqrt(float(D)));
      break;
    case K::kAttnQ:
    case K::kAttnK:
      // Constant queries and keys: read from the anchor (qwen3moe) or the biases (qwen2moe).
      if (anchor_) {
        const int64_t kv_head =
            tensor.kind == K::kAttnQ ? unit / head_dim / group : unit / head_dim;
        out[0] = group_query_[size_t(kv_head)][size_t(unit % head_dim)];
      }
      break;
    case K::kQBias:
    case K::kKBias:
      for (int64_t i = 0; i < n; ++i) {
        const int64_t kv_head = tensor.kind == K::kQBias ? i / head_dim / group : i / head_dim;
        out[i] = group_query_[size_t(kv_head)][size_t(i % head_dim)] * bias_scale;
      }
      break;
    case K::kVBias:
      break;
    case K::kAttnV:
      // The context heads' values carry token identity only; the others read everything.
      if (unit / head_dim == 0) {
        fill_normal(random, out, first_token_dim_, first_mixed_dim_,
                    1.0f / std::sqrt(float(first_mixed_dim_ - first_token_dim_)));
      } else {
        fill_normal(random, out, first_context_, n, 1.0f / std::sqrt(float(D)));
      }
      break;
    case K::kAttnOutput: {
      const int64_t recency_columns = group * head_dim;
      if (unit >= first_context_ && unit < first_token_dim_) {
        fill_normal(random, out, 0, recency_columns, 1.0f / std::sqrt(float(recency_columns)));
      } else if (unit >= first_mixed_dim_) {
        fill_normal(random, out, recency_columns, n, 0.5f / std::sqrt(float(n - recency_columns)));
      }
      break;
    }
    case K::kRouter: {
      const RouterGains gains = router_gains_[size_t(tensor.layer)];
      fill_normal(random, out, first_context_, first_token_dim_,
                  gains.context / std::sqrt(float(n_context_)));
      fill_normal(random, out, first_token_dim_, first_mixed_dim_,
                  gains.token / std::sqrt(float(first_mixed_dim_ - first_token_dim_)));
      break;
    }
    case K::kExpertGateUp:
      fill_normal(random, out, first_context_, n, 1.0f / std::sqrt(float(D)));
      break;
    case K::kExpertDown:
      if (unit >= first_mixed_dim_) fill_normal(random, out, 0, n, 0.5f / std::sqrt(float(n)));
      break;
    case K::kSharedGateInput:
      fill_normal(random, out, first_context_, n, 1.0f / std::sqrt(float(D)));
      break;
  }
}

bool SyntheticWeights::has_direct_blocks(const SyntheticTensor& tensor) {
  const bool expert = tensor.kind == SyntheticTensorKind::kExpertGateUp ||
                      tensor.kind == SyntheticTensorKind::kExpertDown;
  return expert && (tensor.type == QuantType::kQ4_0 || tensor.type == QuantType::kQ4_K ||
                    tensor.type == QuantType::kQ2_0);
}

void SyntheticWeights::fill_row_blocks(const SyntheticTensor& tensor, int64_t row,
                                       uint8_t* out) const {
  STRATA_CHECK(has_direct_blocks(tensor));
  const int64_t n = tensor.shape[0];
  const int64_t unit = row % tensor.shape[1];
  RowRandom random(row_seed(tensor, row));
  // The same statistics as fill_row: gate/up read every column but the anchor; down rows of
  // the anchor, context and token-identity dimensions are zero.
  const bool down = tensor.kind == SyntheticTensorKind::kExpertDown;
  const bool zero_row = down && unit < first_mixed_dim_;
  const float std = down ? 0.5f / std::sqrt(float(n)) : 1.0f / std::sqrt(float(shape_.n_embd));
  CodeStream codes{random, code_table(), (!down && anchor_) ? 0 : -1};
  switch (tensor.type) {
    case QuantType::kQ4_0:
      return write_q4_0_blocks(n, zero_row ? 0.0f : std / kCodeStd, codes, out);
    case QuantType::kQ2_0:
      return write_q2_0_blocks(n, zero_row ? 0.0f : std, codes, out);
    default:
      return write_q4_k_blocks(n, zero_row ? 0.0f : std, codes, out);
  }
}

}  // namespace strata

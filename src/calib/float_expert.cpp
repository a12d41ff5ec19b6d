#include "calib/float_expert.h"

#include <cmath>

#include "model/model.h"

namespace strata {
namespace {

// Eight partial sums: the compiler keeps them in vector lanes (a single sum is one long chain).
float dot(const float* a, const float* b, int64_t n) {
  float partial[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) partial[j] += a[i + j] * b[i + j];
  float sum = 0.0f;
  for (; i < n; ++i) sum += a[i] * b[i];
  for (float p : partial) sum += p;
  return sum;
}

void dequantize_slice(const ExpertTensorLayout& t, int expert, std::vector<float>& out) {
  const QuantTraits& traits = quant_traits(t.type);
  out.resize(size_t(t.n_in * t.n_out));
  const uint8_t* rows = t.resident[size_t(expert)];
  for (int64_t r = 0; r < t.n_out; ++r)
    traits.dequantize_row(rows + size_t(r) * traits.row_bytes(t.n_in), out.data() + r * t.n_in,
                          t.n_in);
}

}  // namespace

Status check_experts_readable(const Model& model) {
  for (const LayerExpertLayout& layer : model.weights().experts.layers)
    for (const ExpertTensorLayout* t : {&layer.gate, &layer.up, &layer.down})
      if (t->grouped_in_file || t->resident.empty())
        return Status::errorf(
            "{}: expert rows are read in GGUF order; this file stores them in row groups "
            "(strata repack --grouped): use the file it was made from",
            model.file().name());
  return Status();
}

void FloatExpert::load(const LayerExpertLayout& layer, int expert) {
  dequantize_slice(layer.gate, expert, gate_);
  dequantize_slice(layer.up, expert, up_);
  dequantize_slice(layer.down, expert, down_);
  n_embd_ = layer.gate.n_in;
  n_ff_ = layer.gate.n_out;
}

void FloatExpert::compute(const float* x, float* hidden, float* y) const {
  for (int64_t f = 0; f < n_ff_; ++f) {
    const float g = dot(gate_.data() + f * n_embd_, x, n_embd_);
    const float u = dot(up_.data() + f * n_embd_, x, n_embd_);
    hidden[f] = g / (1.0f + std::exp(-g)) * u;
  }
  for (int64_t o = 0; o < n_embd_; ++o) y[o] = dot(down_.data() + o * n_ff_, hidden, n_ff_);
}

}  // namespace strata

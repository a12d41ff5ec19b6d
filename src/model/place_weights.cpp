#include "model/place_weights.h"

#include <vector>

namespace strata {
namespace {

struct Range {
  const uint8_t* begin;
  size_t bytes;
};

void add_matrix(const Matrix& m, std::vector<Range>& ranges) {
  if (m.data) ranges.push_back({m.data, size_t(m.n_out) * m.row_bytes()});
}

void add_vector(const Vector& v, std::vector<Range>& ranges) {
  if (!v.empty())
    ranges.push_back({reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)});
}

void add_layer(const LayerWeights& l, std::vector<Range>& ranges) {
  const AttentionWeights& a = l.attention;
  for (const Matrix* m :
       {&a.q, &a.k, &a.v, &a.o, &l.router, &l.shared.gate, &l.shared.up, &l.shared.down})
    add_matrix(*m, ranges);
  for (const Vector* v : {&a.norm, &a.q_bias, &a.k_bias, &a.v_bias, &a.q_norm, &a.k_norm,
                          &l.ffn_norm, &l.shared.gate_input})
    add_vector(*v, ranges);
}

void add_experts(const ExpertTensorLayout& slice, std::vector<Range>& ranges) {
  for (const uint8_t* expert : slice.resident) {
    if (!ranges.empty() && ranges.back().begin + ranges.back().bytes == expert) {
      ranges.back().bytes += slice.expert_bytes;
    } else {
      ranges.push_back({expert, slice.expert_bytes});
    }
  }
}

}  // namespace

Status place_weights(const Model& model, Backend& backend, PlacedExperts experts) {
  const ModelWeights& w = model.weights();
  std::vector<Range> ranges;
  add_matrix(w.token_embedding, ranges);
  add_vector(w.output_norm, ranges);
  add_matrix(w.output, ranges);
  for (const LayerWeights& layer : w.layers) add_layer(layer, ranges);
  if (experts == PlacedExperts::kResident)
    for (const LayerExpertLayout& layer : w.experts.layers)
      for (const ExpertTensorLayout* slice : {&layer.gate, &layer.up, &layer.down})
        add_experts(*slice, ranges);
  for (const Range& range : ranges)
    STRATA_RETURN_IF_ERROR(
        backend.place(range.begin, range.bytes).with_prefix(model.file().name()));
  return Status();
}

}  // namespace strata

// The attention sublayer on the GPU: norm, the q/k/v projections (one launch, biases in their
// epilogue), per-head norms, RoPE and the cache write (one kernel), attention over the cache,
// and the output projection added into the residual stream.
#include <cmath>

#include "cuda/cuda_backend.h"

namespace strata::cuda {

void CudaBackend::attention(const AttentionWeights& w, int layer, int64_t pos0, KvCache& cache,
                            Activations hidden) {
  if (!failure_.ok()) return;
  const int64_t* position = device_position(pos0);
  if (replaying()) return;
  const int64_t n = hidden.n_rows, n_embd = shape_.n_embd, head_dim = shape_.head_dim;
  const int64_t q_dim = shape_.n_head * head_dim, kv_dim = shape_.n_head_kv * head_dim;
  const Activations input{scratch_.attention_input.as<float>(), n, n_embd};
  const ActivationRows q_input = normed_and_converted(w.norm, hidden, input, w.q.type);
  float *q = scratch_.q.as<float>(), *k = scratch_.k.as<float>(), *v = scratch_.v.as<float>();
  Product products[] = {{&w.q, q_input, task_for(w.q, 0, n, q, q_dim)},
                        {&w.k, converted(input, w.k.type), task_for(w.k, 0, n, k, kv_dim)},
                        {&w.v, converted(input, w.v.type), task_for(w.v, 0, n, v, kv_dim)}};
  products[0].task.bias = device_vector(w.q_bias);
  products[1].task.bias = device_vector(w.k_bias);
  products[2].task.bias = device_vector(w.v_bias);
  run(products);

  // Made by make_kv_cache(), so it is this backend's.
  const CudaKvCache& kv = static_cast<const CudaKvCache&>(cache);
  const LayerCache layer_cache = kv.layer(layer);
  const AttentionShape shape{shape_.n_head, shape_.n_head_kv, head_dim,
                             1.0f / std::sqrt(float(head_dim)), shape_.rms_eps};
  const AttentionInputs inputs{
      q, k, v, device_vector(w.q_norm), device_vector(w.k_norm), kv.rope_cos(), kv.rope_sin()};
  if (!ok(launch_prepare_attention(shape, inputs, n, position, layer_cache, stream_),
          "preparing attention"))
    return;
  float* out = scratch_.attention_out.as<float>();
  // A recording runs at every position: its scores take room for the whole cache.
  const int64_t positions_bound = step_mode_ == StepMode::kRecord ? kv.n_ctx() : pos0 + n;
  if (!ok(launch_attention(shape, q, n, position, positions_bound, layer_cache, out, stream_),
          "attention"))
    return;
  written(out);
  const Activations attended{out, n, q_dim};
  Product output{&w.o, converted(attended, w.o.type), task_for(w.o, 0, n, hidden.data, n_embd)};
  output.task.epilogue = Epilogue::kAccumulate;
  run({&output, 1});
  written(hidden.data);
  written(input.data);
}

}  // namespace strata::cuda

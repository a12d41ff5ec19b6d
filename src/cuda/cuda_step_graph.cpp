// Recorded decode steps: a CUDA graph of one step's kernels, so that a decode step costs the host
// one launch instead of a thousand and the device runs the kernels without gaps between them.
//
// A step is repeatable when the layer loop says so (Backend::begin_repeatable_step): one token,
// every layer routed in place, nothing read back before the logits. Its ops then launch the same
// kernels with the same arguments at every step for the same cache and scratch, except what
// comes from the host: the token id and the position, which the kernels read from device memory
// that copies from page-locked staging fill (embed(), device_position()); the copies are part of
// the recording and read the staging when the graph runs. The first repeatable step for a cache
// runs as always (it writes the expert tables, which a recording may not copy from pageable
// memory); the second is recorded with stream capture and launched at logits(); the later ones
// only write the staging and launch the recording.
#include "cuda/cuda_backend.h"

namespace strata::cuda {

void CudaBackend::begin_repeatable_step(const KvCache& cache) {
  if (!failure_.ok()) return;
  // Made by make_kv_cache(), so it is this backend's.
  const uint64_t cache_id = static_cast<const CudaKvCache&>(cache).id();
  if (recorded_.graph && recorded_.cache_id == cache_id &&
      recorded_.allocated_tokens == allocated_tokens_) {
    step_mode_ = StepMode::kReplay;
    return;
  }
  if (unrecorded_cache_id_ != cache_id || unrecorded_tokens_ != allocated_tokens_) {
    unrecorded_cache_id_ = cache_id;
    unrecorded_tokens_ = allocated_tokens_;
    return;
  }
  forget_recorded_step();
  if (!ok(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal),
          "recording a decode step"))
    return;
  step_mode_ = StepMode::kRecord;
  recorded_.cache_id = cache_id;
  recorded_.allocated_tokens = allocated_tokens_;
}

const int64_t* CudaBackend::device_position(int64_t pos0) {
  int64_t* staging = scratch_.position_staging.as<int64_t>();
  if (replaying()) {
    staging[recorded_.position_slot] = pos0;
    return nullptr;  // the recording's kernels read their slot
  }
  // A slot per distinct position of the batch (the rows of several sequences have several).
  for (int64_t slot = batch_first_position_slot_; slot < next_position_slot_; ++slot)
    if (staging[slot] == pos0) return scratch_.positions.as<int64_t>() + slot;
  const int64_t slot = next_position_slot_++;
  STRATA_CHECK(slot < CudaScratch::kPositionSlots);  // begin_batch leaves room for every row
  staging[slot] = pos0;
  if (step_mode_ == StepMode::kRecord) recorded_.position_slot = slot;
  int64_t* device = scratch_.positions.as<int64_t>() + slot;
  ok(cudaMemcpyAsync(device, staging + slot, sizeof(int64_t), cudaMemcpyHostToDevice, stream_),
     "copying a position to the device");
  return device;
}

void CudaBackend::launch_recorded_step() {
  if (step_mode_ == StepMode::kRecord) {
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream_, &graph);
    step_mode_ = StepMode::kLaunch;
    if (ok(ended, "recording a decode step"))
      ok(cudaGraphInstantiate(&recorded_.graph, graph, 0), "recording a decode step");
    if (graph) cudaGraphDestroy(graph);
    if (!failure_.ok()) {
      forget_recorded_step();
      return;
    }
  }
  step_mode_ = StepMode::kLaunch;
  if (failure_.ok())
    ok(cudaGraphLaunch(recorded_.graph, stream_), "launching a recorded decode step");
}

void CudaBackend::forget_recorded_step() {
  if (recorded_.graph) cudaGraphExecDestroy(recorded_.graph);
  recorded_ = RecordedStep();
}

void CudaBackend::forget_steps() {
  forget_recorded_step();
  // Scratch allocated anew holds no expert tables or logits buffer yet: the next repeatable step
  // runs unrecorded again.
  unrecorded_cache_id_ = 0;
  unrecorded_tokens_ = 0;
}

}  // namespace strata::cuda

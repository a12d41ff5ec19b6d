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
//
// Recorded layers: where the routes come back to the host at every layer (an expert arena, the
// read-ahead), each layer's ops from its attention to its routes' copy into page-locked memory
// are recorded the first time (begin_repeatable_layer) and replayed after that, one launch at
// route() instead of a dozen; the experts, whose slots change from token to token, are launched
// as always. The position is the step's, in a slot of its own. The host does not know which
// converted sets a replay writes, so none is taken as holding anything after a recorded layer
// (every buffer the layer converts it writes first, so its recording needs none from before).
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

void CudaBackend::begin_repeatable_layer(const KvCache& cache, int layer) {
  if (!failure_.ok() || step_mode_ != StepMode::kLaunch) return;
  const uint64_t cache_id = static_cast<const CudaKvCache&>(cache).id();
  if (recorded_layers_.cache_id != cache_id ||
      recorded_layers_.allocated_tokens != allocated_tokens_) {
    forget_recorded_layers();
    recorded_layers_.cache_id = cache_id;
    recorded_layers_.allocated_tokens = allocated_tokens_;
    recorded_layers_.graphs.assign(size_t(shape_.n_layer), nullptr);
  }
  repeatable_layer_ = layer;
  if (recorded_layers_.graphs[size_t(layer)]) {
    step_mode_ = StepMode::kReplay;
    return;
  }
  if (ok(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "recording a layer"))
    step_mode_ = StepMode::kRecord;
}

void CudaBackend::launch_recorded_layer() {
  cudaGraphExec_t& recording = recorded_layers_.graphs[size_t(repeatable_layer_)];
  if (step_mode_ == StepMode::kRecord) {
    cudaGraph_t graph = nullptr;
    // Ended whether or not an op failed, so that the stream takes launches again.
    const cudaError_t ended = cudaStreamEndCapture(stream_, &graph);
    if (ok(ended, "recording a layer"))
      ok(cudaGraphInstantiate(&recording, graph, 0), "recording a layer");
    if (graph) cudaGraphDestroy(graph);
  }
  step_mode_ = StepMode::kLaunch;
  repeatable_layer_ = -1;
  forget_conversions();
  if (!failure_.ok()) {
    forget_recorded_layers();
    return;
  }
  ok(cudaGraphLaunch(recording, stream_), "launching a recorded layer");
}

void CudaBackend::forget_recorded_layers() {
  for (cudaGraphExec_t graph : recorded_layers_.graphs)
    if (graph) cudaGraphExecDestroy(graph);
  recorded_layers_ = RecordedLayers();
}

void CudaBackend::forget_conversions() {
  for (ConvertedRows& set : scratch_.general) set.source = nullptr;
}

const int64_t* CudaBackend::device_position(int64_t pos0) {
  int64_t* staging = scratch_.position_staging.as<int64_t>();
  if (repeatable_layer_ >= 0) {
    // The recorded layers' slot, past the ring: the copy from it is recorded, and a replay
    // reads what the step wrote there (the host waits for every layer's routes, so no copy
    // of an earlier step is still to run).
    const int64_t slot = CudaScratch::kPositionSlots;
    staging[slot] = pos0;
    if (replaying()) return nullptr;
    int64_t* device = scratch_.positions.as<int64_t>() + slot;
    ok(cudaMemcpyAsync(device, staging + slot, sizeof(int64_t), cudaMemcpyHostToDevice, stream_),
       "copying a position to the device");
    return device;
  }
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
  forget_recorded_layers();
  // Scratch allocated anew holds no expert tables or logits buffer yet: the next repeatable step
  // runs unrecorded again.
  unrecorded_cache_id_ = 0;
  unrecorded_tokens_ = 0;
}

}  // namespace strata::cuda

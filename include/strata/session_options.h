// The options of an engine (engine.h) and the sessions on it: which model, where it computes,
// its memory budget and how experts stream.
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace strata {

// What a note of the engine says: a line of the memory plan, or a warning about the options or
// the model file (a context past the trained one, a layout that would stream faster).
enum class NoteKind { kPlan, kWarning };

struct SessionOptions {
  std::string model_path;
  // Where the model computes: "cpu", "cuda" (device `gpu`), or "auto": CUDA where this build
  // has it and a device answers, else the CPU.
  std::string device = "auto";
  int gpu = 0;
  // Device memory budget in bytes (`--gpu-mem`, with device "cuda"): dense weights, KV cache,
  // scratch and an expert arena in what they leave, the experts copied into it from host
  // memory. 0: every expert in device memory (or an arena of arena_share).
  uint64_t gpu_memory_budget = 0;
  int n_threads = 0;  // 0: one per core
  int64_t n_ctx = 0;  // 0: min(trained context, 4096)
  int64_t prefill_chunk = 256;

  // Memory budget of the whole process in bytes (`--mem`). 0: no budget; the file is
  // memory-mapped and every expert stays resident. Otherwise dense weights are read into
  // memory, experts stream from the file into an arena of what the budget leaves.
  uint64_t memory_budget = 0;
  std::string memory_budget_basis;  // how `--mem auto` chose it, printed with the plan
  // Streaming with an arena sized to hold this share (0..1] of all expert units, whatever the
  // rest of the process takes: for experiments and benchmarks that compare arena sizes.
  // Ignored when memory_budget is set.
  double arena_share = 0;
  bool teacher_forced = false;  // the plan keeps room for the logits of every batch row
  // Expert arena replacement policy. Empty: "predicted" with a next-expert predictor, else
  // "successor" (best measured: experts/next_use_policy.h).
  std::string cache_policy;
  // A next-expert predictor (`strata fit-predictor`): after each layer it estimates which of the
  // layer's experts the next token uses, for the "predicted" policy
  // (model/next_expert_predictor.h).
  std::string next_expert_predictor_path;
  int io_threads = 2;
  // Of a decode layer's experts missing from a device's arena fed from host memory, how many the
  // host's CPU computes from there instead of their copies (`--cpu-experts`): 0 none, N at most
  // N, kCpuExpertsAuto as many as finish sooner by the bus's and the CPU's rates measured at
  // the start (for formats whose products on the CPU are the device's bits).
  static constexpr int kCpuExpertsAuto = -1;
  int cpu_experts = 0;
  // "auto": io_uring where the kernel allows it, else pread; or "pread", "uring".
  std::string io_backend = "auto";
  // Expert reads io_uring keeps running at once; 0: one for expert units of 1 MiB or more,
  // else 2 * io_threads.
  int io_depth = 0;
  int readahead = -1;  // experts per layer predicted for the next layer; -1: the top-k
  // How many layers ahead the read-ahead predicts; 0: two for expert units under 1 MiB, else one.
  int readahead_layers = 0;
  // Of each layer beyond the next, only the top `readahead_far` predictions are read: the
  // farther guess is less certain, and on small expert units the disk is bound by reads per
  // second. -1: two (or --readahead, if fewer).
  int readahead_far = -1;
  // Bytes of read-ahead reads one forward step (a token, in decode) may start, spread evenly
  // over the layers; predictions past a layer's share start no read. 0: no byte limit.
  uint64_t readahead_budget = 0;
  // Cache-aware routing: +moce_bonus on the router logits of resident experts, the top
  // moce_protect picks always exact. 0: exact routing.
  float moce_bonus = 0.0f;
  int moce_protect = 3;
  // Expert usage counts: the hottest experts are preloaded from this file at start (when it
  // exists) and Engine::save_expert_usage() adds the engine's counts to it.
  std::string warm_path;
  // KV caches the memory plan holds room for: the sessions (conversations) that may be open on
  // the engine at once.
  int sessions = 1;
  // Where the engine's notes go, a line at a time. None when empty.
  std::function<void(NoteKind kind, std::string_view line)> on_note;
  // A progress bar on stderr (when it is a terminal) while weights load.
  bool show_progress = false;
};

// `options` with the memory plan left out of its notes: for commands that open many engines of
// one model (bench, eval), whose plans would repeat; warnings still reach on_note.
SessionOptions without_plan_notes(SessionOptions options);

// Whether a session with these options streams its experts into an arena (a memory budget or
// an arena share) instead of keeping every expert resident.
bool streams_experts(const SessionOptions& options);

// A memory budget and, for "auto", how it was chosen ("--mem auto: 80 % of 2.00 GiB left below
// the memory cgroup's limit").
struct MemoryBudget {
  uint64_t bytes = 0;
  std::string basis;
};
// "512M", "4G", "4GiB", "1.5G" (binary units), or "auto": 80 % of the memory this process can
// still take (the machine's available memory, or less below a cgroup limit).
Result<MemoryBudget> parse_memory_budget(std::string_view text);
// --cpu-experts: "auto", "off" or a count of 1 or more, as SessionOptions::cpu_experts holds it.
Result<int> parse_cpu_experts(std::string_view text);
// "8M", "64M", ... for --readahead-budget; "0" for no limit.
Result<uint64_t> parse_readahead_budget(std::string_view text);

}  // namespace strata

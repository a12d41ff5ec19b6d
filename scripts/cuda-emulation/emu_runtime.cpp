// Host emulation of CUDA launches: a block's threads are fibers on stacks of their own, run round
// robin; __syncthreads and warp exchanges are barriers where a fiber yields until every live
// thread of its block (or warp) has arrived. Blocks run one after another, so a block's
// __shared__ variables can be statics. A barrier nobody can pass aborts ("deadlock"), as a
// missing thread would hang the GPU. The context switch is a few instructions of assembly:
// swapcontext's signal-mask system call made emulated runs 30 times slower.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "cuda_runtime_api.h"
#include "emu_cuda.h"

// Switches stacks: saves the callee-saved registers and the stack pointer in *save, resumes
// the stack `next` (x86-64 System V).
asm(R"(
.text
.globl emu_switch
.type emu_switch,@function
emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
)");
extern "C" void emu_switch(void** save, void* next);

namespace strata_emu {
namespace {

constexpr size_t kStackBytes = 256 << 10;

struct Barrier {
  int expected = 0, arrived = 0;
  uint64_t generation = 0;
};

struct Fiber {
  void* sp = nullptr;
  emu_uint3 index;
  bool done = false;
  std::unique_ptr<char[]> stack;
};

struct BlockState {
  std::vector<Fiber> fibers;
  Barrier block;
  std::vector<Barrier> warps;
  std::vector<unsigned char> slots;  // 32 x 8 per warp
  std::vector<unsigned char> shared;
  emu_uint3 index;
  dim3 dims;
  std::function<void()>* body = nullptr;
  void* scheduler = nullptr;
  Fiber* current = nullptr;
  uint64_t progress = 0;
};

BlockState* g_block = nullptr;
const emu_uint3 kZero{0, 0, 0};
const dim3 kOne{1, 1, 1};

void yield() { emu_switch(&g_block->current->sp, g_block->scheduler); }

void wait(Barrier& b) {
  const uint64_t generation = b.generation;
  if (++b.arrived == b.expected) {
    b.arrived = 0;
    ++b.generation;
    ++g_block->progress;
    return;
  }
  while (b.generation == generation) yield();
  ++g_block->progress;
}

void trampoline() {
  (*g_block->body)();
  Fiber* f = g_block->current;
  f->done = true;
  ++g_block->progress;
  // An exited thread no longer takes part in barriers.
  --g_block->block.expected;
  --g_block->warps[f->index.x / 32].expected;
  emu_switch(&f->sp, g_block->scheduler);
}

}  // namespace

const emu_uint3& thread_index() {
  return g_block && g_block->current ? g_block->current->index : kZero;
}
const emu_uint3& block_index() { return g_block ? g_block->index : kZero; }
const dim3& block_dim() { return g_block ? g_block->dims : kOne; }
void sync_block() { wait(g_block->block); }
void sync_warp() { wait(g_block->warps[g_block->current->index.x / 32]); }
void* warp_slots() { return g_block->slots.data() + 256 * (g_block->current->index.x / 32); }
void* dynamic_shared() { return g_block->shared.data(); }

// The work a stream capture has recorded, run by the graph made of it.
std::vector<std::function<void()>>* g_recording = nullptr;

void run_blocks(dim3 grid, dim3 block, size_t shared_bytes, std::function<void()> body);

void launch(dim3 grid, dim3 block, size_t shared_bytes, std::function<void()> body) {
  if (g_recording) {
    g_recording->push_back([=] { run_blocks(grid, block, shared_bytes, body); });
    return;
  }
  run_blocks(grid, block, shared_bytes, std::move(body));
}

void run_blocks(dim3 grid, dim3 block, size_t shared_bytes, std::function<void()> body) {
  if (block.y != 1 || block.z != 1) {
    std::fprintf(stderr, "emu: 1-D blocks only\n");
    std::abort();
  }
  const unsigned n = block.x;
  static std::vector<std::unique_ptr<char[]>> stacks;
  while (stacks.size() < n) stacks.push_back(std::make_unique<char[]>(kStackBytes));
  for (unsigned by = 0; by < grid.y; ++by)
    for (unsigned bx = 0; bx < grid.x; ++bx) {
      BlockState state;
      state.index = {bx, by, 0};
      state.dims = block;
      state.body = &body;
      state.shared.assign(shared_bytes + 16, 0xcd);
      state.block.expected = int(n);
      state.warps.resize((n + 31) / 32);
      for (unsigned w = 0; w < state.warps.size(); ++w)
        state.warps[w].expected = int(std::min(32u, n - 32 * w));
      state.slots.assign(state.warps.size() * 256, 0);
      state.fibers.resize(n);
      g_block = &state;
      for (unsigned t = 0; t < n; ++t) {
        Fiber& f = state.fibers[t];
        f.index = {t, 0, 0};
        auto top = (reinterpret_cast<uintptr_t>(stacks[t].get()) + kStackBytes) / 16 * 16;
        void** sp = reinterpret_cast<void**>(top - 64);
        for (int i = 0; i < 6; ++i) sp[i] = nullptr;
        sp[6] = reinterpret_cast<void*>(&trampoline);
        sp[7] = nullptr;
        f.sp = sp;
      }
      for (;;) {
        bool all_done = true;
        const uint64_t before = state.progress;
        for (Fiber& f : state.fibers) {
          if (f.done) continue;
          all_done = false;
          state.current = &f;
          emu_switch(&state.scheduler, f.sp);
        }
        state.current = nullptr;
        if (all_done) break;
        if (state.progress == before) {
          std::fprintf(stderr, "emu: deadlock in block %u,%u\n", bx, by);
          std::abort();
        }
      }
      g_block = nullptr;
    }
}

}  // namespace strata_emu

// The runtime API, over host memory. EMU_NO_DEVICE=1 makes it report no device.
static cudaError_t g_last = cudaSuccess;
cudaError_t cudaGetDeviceCount(int* count) {
  *count = std::getenv("EMU_NO_DEVICE") ? 0 : 1;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int) {
  std::memset(p, 0, sizeof(*p));
  std::strcpy(p->name, "emulated H200");
  p->totalGlobalMem = size_t(141) << 30;
  p->major = 9;
  p->minor = 0;
  p->sharedMemPerBlockOptin = 232448;
  p->multiProcessorCount = 132;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int) { return cudaSuccess; }
cudaError_t cudaSetDeviceFlags(unsigned) { return cudaSuccess; }
cudaError_t cudaDriverGetVersion(int* v) {
  *v = 13000;
  return cudaSuccess;
}
cudaError_t cudaGetLastError() {
  cudaError_t e = g_last;
  g_last = cudaSuccess;
  return e;
}
const char* cudaGetErrorString(cudaError_t e) {
  return e == cudaSuccess ? "no error" : "emulated error";
}
cudaError_t cudaMalloc(void** p, size_t bytes) {
  *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (*p) std::memset(*p, 0xab, bytes);  // not zero: kernels must not rely on fresh memory
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFree(void* p) {
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaMallocHost(void** p, size_t bytes) { return cudaMalloc(p, bytes); }
cudaError_t cudaFreeHost(void* p) {
  std::free(p);
  return cudaSuccess;
}
// Host memory registered with cudaHostRegister, by first byte. As the runtime does (it looks the
// host side up by its first byte), a copy that starts in registered memory and runs past its end
// is refused.
static std::mutex g_registered_mutex;
static std::map<uintptr_t, size_t> g_registered;
static bool partly_registered(const void* host, size_t bytes) {
  const uintptr_t begin = uintptr_t(host), end = begin + bytes;
  std::lock_guard lock(g_registered_mutex);
  auto after = g_registered.upper_bound(begin);
  if (after == g_registered.begin()) return false;
  const auto& [first, size] = *std::prev(after);
  return begin < first + size && end > first + size;
}
static bool copy_refused(const void* to, const void* from, size_t bytes, cudaMemcpyKind kind) {
  if (kind == cudaMemcpyHostToDevice) return partly_registered(from, bytes);
  if (kind == cudaMemcpyDeviceToHost) return partly_registered(to, bytes);
  return false;
}
cudaError_t cudaMemcpy(void* to, const void* from, size_t bytes, cudaMemcpyKind kind) {
  if (copy_refused(to, from, bytes, kind)) return cudaErrorInvalidValue;
  std::memmove(to, from, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* to, const void* from, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t) {
  if (copy_refused(to, from, bytes, kind)) return cudaErrorInvalidValue;
  if (strata_emu::g_recording) {
    strata_emu::g_recording->push_back([=] { std::memmove(to, from, bytes); });
    return cudaSuccess;
  }
  std::memmove(to, from, bytes);
  return cudaSuccess;
}
struct CUgraph_st {
  std::vector<std::function<void()>> work;
};
struct CUgraphExec_st {
  std::vector<std::function<void()>> work;
};
cudaError_t cudaStreamBeginCapture(cudaStream_t, cudaStreamCaptureMode) {
  if (strata_emu::g_recording) return cudaErrorInvalidValue;
  strata_emu::g_recording = new std::vector<std::function<void()>>();
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t* graph) {
  if (!strata_emu::g_recording) return cudaErrorInvalidValue;
  *graph = new CUgraph_st{std::move(*strata_emu::g_recording)};
  delete strata_emu::g_recording;
  strata_emu::g_recording = nullptr;
  return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  *exec = new CUgraphExec_st{graph->work};
  return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t) {
  for (const auto& work : exec->work) work();
  return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) {
  *s = reinterpret_cast<cudaStream_t>(new char);
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  delete reinterpret_cast<char*>(s);
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
// Work runs when it is queued, so an event records the host's clock.
struct CUevent_st {
  std::chrono::steady_clock::time_point at;
};
cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t) {
  std::memset(p, value, bytes);
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* event) {
  *event = new CUevent_st;
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned) {
  return cudaEventCreate(event);
}
// Every operation has finished when its call returns, so waiting and pinning have nothing to do.
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned) { return cudaSuccess; }
cudaError_t cudaHostRegister(void* host, size_t bytes, unsigned) {
  std::lock_guard lock(g_registered_mutex);
  g_registered[uintptr_t(host)] = bytes;
  return cudaSuccess;
}
cudaError_t cudaHostUnregister(void* host) {
  std::lock_guard lock(g_registered_mutex);
  g_registered.erase(uintptr_t(host));
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete event;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t) {
  event->at = std::chrono::steady_clock::now();
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t stop) {
  *ms = std::chrono::duration<float, std::milli>(stop->at - start->at).count();
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }

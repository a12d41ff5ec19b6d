#include "lab/disk_bandwidth.h"

#include <chrono>
#include <deque>
#include <random>
#include <vector>

#include "base/huge_page_memory.h"

namespace strata {

Result<double> measure_read_bandwidth(std::shared_ptr<FileReader> reader, int io_threads,
                                      IoBackend backend, size_t chunk_bytes, int in_flight,
                                      double seconds, uint64_t seed) {
  const size_t alignment = reader->alignment();
  const size_t chunk = std::max(alignment, chunk_bytes / alignment * alignment);
  if (reader->size() < 2 * chunk) return Status::errorf("{}: too small to measure", reader->path());
  const uint64_t positions = (reader->size() - chunk) / alignment;
  STRATA_ASSIGN_OR_RETURN(auto engine, IoEngine::create(reader, io_threads, backend, in_flight));
  // Each read in flight has its own buffer. The buffers are the arena's kind of memory: under a
  // virtual disk that serves each page of a request's scatter list as its own read, O_DIRECT
  // into 4 KiB pages ran at a third of the speed of 2 MiB pages (docs/streaming.md).
  const HugePageMemory buffers = allocate_on_huge_pages(chunk * size_t(in_flight), alignment);
  if (buffers == nullptr) return Status::error("cannot allocate the disk probe's buffers");
  std::mt19937_64 random(seed);
  std::deque<std::pair<IoEngine::Ticket, int>> running;
  auto submit = [&](int buffer) {
    const uint64_t offset = (random() % positions) * alignment;
    const ReadRange range{buffers.get() + size_t(buffer) * chunk, offset, chunk};
    running.push_back({engine->submit({&range, 1}, 0), buffer});
  };
  const auto start = std::chrono::steady_clock::now();
  for (int b = 0; b < in_flight; ++b) submit(b);
  uint64_t bytes = 0;
  double elapsed = 0;
  while (elapsed < seconds) {
    const auto [ticket, buffer] = running.front();
    running.pop_front();
    STRATA_RETURN_IF_ERROR(engine->wait(ticket));
    bytes += chunk;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    submit(buffer);
  }
  for (const auto& [ticket, buffer] : running) (void)engine->wait(ticket);
  return double(bytes) / elapsed;
}

}  // namespace strata

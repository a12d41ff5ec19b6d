#include "experts/disk_bandwidth.h"

#include <chrono>
#include <deque>
#include <random>
#include <vector>

#include "base/huge_page_memory.h"

namespace strata {

Result<double> measure_read_bandwidth(std::shared_ptr<FileReader> reader, int io_threads,
                                      IoBackend backend, size_t chunk_bytes, double seconds,
                                      uint64_t seed) {
  const size_t alignment = reader->alignment();
  const size_t chunk = std::max(alignment, chunk_bytes / alignment * alignment);
  if (reader->size() < 2 * chunk) return Status::errorf("{}: too small to measure", reader->path());
  const uint64_t positions = (reader->size() - chunk) / alignment;
  STRATA_ASSIGN_OR_RETURN(auto engine, IoEngine::create(reader, io_threads, backend));
  // Two reads per thread in flight, each into its own buffer. The buffers are the arena's kind of
  // memory: under a virtual disk that serves each page of a request's scatter list as its own
  // read, O_DIRECT into 4 KiB pages ran at a third of the speed of 2 MiB pages (README).
  const int depth = 2 * io_threads;
  const HugePageMemory buffers = allocate_on_huge_pages(chunk * size_t(depth), alignment);
  if (buffers == nullptr) return Status::error("cannot allocate the disk probe's buffers");
  std::mt19937_64 random(seed);
  std::deque<std::pair<IoEngine::Ticket, int>> in_flight;
  auto submit = [&](int buffer) {
    const uint64_t offset = (random() % positions) * alignment;
    const ReadRange range{buffers.get() + size_t(buffer) * chunk, offset, chunk};
    in_flight.push_back({engine->submit({&range, 1}, 0), buffer});
  };
  const auto start = std::chrono::steady_clock::now();
  for (int b = 0; b < depth; ++b) submit(b);
  uint64_t bytes = 0;
  double elapsed = 0;
  while (elapsed < seconds) {
    const auto [ticket, buffer] = in_flight.front();
    in_flight.pop_front();
    STRATA_RETURN_IF_ERROR(engine->wait(ticket));
    bytes += chunk;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    submit(buffer);
  }
  for (const auto& [ticket, buffer] : in_flight) (void)engine->wait(ticket);
  return double(bytes) / elapsed;
}

}  // namespace strata

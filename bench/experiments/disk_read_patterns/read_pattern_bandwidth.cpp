// O_DIRECT random-read bandwidth of a file for several (read size, reads in flight) patterns,
// through io_uring: how a disk serves the expert store's 2.6 MB unit reads against the bench's
// probe (1 MiB, 4 in flight). Offsets are random multiples of 4 KiB (seed 1).
//
//   g++ -O2 -std=c++20 -o read_pattern_bandwidth read_pattern_bandwidth.cpp -luring
//   ./read_pattern_bandwidth FILE SECONDS KIB DEPTH [KIB DEPTH ...]
//
// With TIMELINE set in the environment, each pattern also prints its rate second by second.
#include <fcntl.h>
#include <liburing.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace {

struct Pattern {
  size_t read_bytes;
  int in_flight;
};

// Keeps `pattern.in_flight` reads running for `seconds`; bytes per second, or -1 on an error.
double measure(int fd, uint64_t file_size, Pattern pattern, double seconds, bool timeline,
               std::mt19937_64& random) {
  io_uring ring;
  if (int result = io_uring_queue_init(unsigned(pattern.in_flight), &ring, 0); result < 0) {
    std::fprintf(stderr, "io_uring_queue_init: %s\n", std::strerror(-result));
    return -1;
  }
  std::vector<void*> buffers(size_t(pattern.in_flight));
  for (void*& buffer : buffers) {
    if (posix_memalign(&buffer, 2 << 20, pattern.read_bytes) != 0) return -1;
  }
  const uint64_t positions = (file_size - pattern.read_bytes) / 4096;
  auto queue_read = [&](size_t index) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    io_uring_prep_read(sqe, fd, buffers[index], unsigned(pattern.read_bytes),
                       random() % positions * 4096);
    io_uring_sqe_set_data64(sqe, index);
  };
  for (size_t i = 0; i < buffers.size(); ++i) queue_read(i);
  io_uring_submit(&ring);

  const auto start = std::chrono::steady_clock::now();
  double bytes = 0, elapsed = 0, mark_bytes = 0, mark_time = 0;
  int running = pattern.in_flight;
  bool failed = false;
  while (running > 0) {
    io_uring_cqe* cqe;
    if (io_uring_wait_cqe(&ring, &cqe) < 0) break;
    const size_t index = size_t(io_uring_cqe_get_data64(cqe));
    const int result = cqe->res;
    io_uring_cqe_seen(&ring, cqe);
    --running;
    if (result < 0) {
      std::fprintf(stderr, "read: %s\n", std::strerror(-result));
      failed = true;
    }
    if (failed) continue;
    bytes += result;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (timeline && elapsed - mark_time >= 1.0) {
      std::printf("    t=%5.1f s: %.2f GB/s\n", elapsed,
                  (bytes - mark_bytes) / (elapsed - mark_time) / 1e9);
      mark_bytes = bytes;
      mark_time = elapsed;
    }
    if (elapsed < seconds) {
      queue_read(index);
      io_uring_submit(&ring);
      ++running;
    }
  }
  io_uring_queue_exit(&ring);
  for (void* buffer : buffers) std::free(buffer);
  return failed ? -1 : bytes / elapsed;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5 || argc % 2 == 0) {
    std::fprintf(stderr, "usage: %s FILE SECONDS KIB DEPTH [KIB DEPTH ...]\n", argv[0]);
    return 2;
  }
  const int fd = ::open(argv[1], O_RDONLY | O_DIRECT);
  struct stat status;
  if (fd < 0 || ::fstat(fd, &status) != 0) {
    std::fprintf(stderr, "%s: %s\n", argv[1], std::strerror(errno));
    return 1;
  }
  const double seconds = std::atof(argv[2]);
  const bool timeline = std::getenv("TIMELINE") != nullptr;
  std::mt19937_64 random(1);
  for (int a = 3; a + 1 < argc; a += 2) {
    const Pattern pattern{size_t(std::atol(argv[a])) * 1024, std::atoi(argv[a + 1])};
    if (pattern.read_bytes == 0 || pattern.in_flight < 1 ||
        pattern.read_bytes >= uint64_t(status.st_size)) {
      std::fprintf(stderr, "bad pattern %s x %s\n", argv[a], argv[a + 1]);
      return 2;
    }
    const double rate = measure(fd, uint64_t(status.st_size), pattern, seconds, timeline, random);
    if (rate < 0) return 1;
    std::printf("%6zu KiB x %d in flight: %.2f GB/s\n", pattern.read_bytes / 1024,
                pattern.in_flight, rate / 1e9);
    std::fflush(stdout);
  }
  return 0;
}

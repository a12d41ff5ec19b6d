// Measures how fast the model file can be read: O_DIRECT reads of one size at random aligned
// offsets, a number of them kept in flight through an I/O engine as the expert store's. The
// I/O bound of streaming decode is this rate divided by the bytes a token misses.
#pragma once

#include <strata/status.h>

#include <memory>

#include "experts/file_reader.h"
#include "experts/io_engine.h"

namespace strata {

// Bytes per second over about `seconds` of reads of `chunk_bytes` each (rounded to the
// reader's alignment), `in_flight` at a time (the pread backend runs at most `io_threads`), at
// random offsets chosen from `seed`.
Result<double> measure_read_bandwidth(std::shared_ptr<FileReader> reader, int io_threads,
                                      IoBackend backend, size_t chunk_bytes, int in_flight,
                                      double seconds, uint64_t seed);

}  // namespace strata

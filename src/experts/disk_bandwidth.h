// Measures how fast the model file can be read the way the expert store reads it: O_DIRECT,
// random aligned ranges of an expert slice's size, with the store's I/O threads keeping reads
// in flight. The I/O bound of streaming decode is this rate divided by the bytes a token
// reads.
#pragma once

#include <strata/status.h>

#include <memory>

#include "experts/file_reader.h"
#include "experts/io_engine.h"

namespace strata {

// Bytes per second over about `seconds` of reads of `chunk_bytes` each (rounded to the
// reader's alignment), at random offsets chosen from `seed`.
Result<double> measure_read_bandwidth(std::shared_ptr<FileReader> reader, int io_threads,
                                      IoBackend backend, size_t chunk_bytes, double seconds,
                                      uint64_t seed);

}  // namespace strata

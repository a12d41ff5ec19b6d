// Bringing a mapped file's pages into memory ahead of use.
#pragma once

#include <cstdint>
#include <span>

namespace strata {

class ProgressBar;

// Reads `bytes` (part of a mapping) into memory now, in chunks, reporting each chunk to
// `progress` (may be null): a model that is used whole is loaded once at start-up instead of
// page-faulting during the first tokens.
void populate_mapping(std::span<const uint8_t> bytes, ProgressBar* progress);

}  // namespace strata

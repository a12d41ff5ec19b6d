// The timings `run` and `chat` print on stderr when they end: prompt and decode speed, and with
// experts streaming the expert store's counters and the peak resident memory.
#pragma once

#include <strata/session.h>

#include <cstdint>

namespace strata::tools {

// `prompt_tokens`: the prompt's tokens as the user gave them (a one-token prompt runs as a
// decode step); `generated_tokens`: the tokens generated, the last of which is never fed.
void print_generation_summary(const Session& session, int64_t prompt_tokens,
                              int64_t generated_tokens, bool streaming);

}  // namespace strata::tools

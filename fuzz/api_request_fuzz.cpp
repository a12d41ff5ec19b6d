// libFuzzer target for what clients send `strata serve` (server/api_request.h) and the stop
// sequences cut into its replies (server/stop_sequences.h). A crash, a sanitizer report, an
// error that is not one line, a request accepted outside the server's limits, or a reply whose
// sent text holds a stop sequence is a bug. Run with fuzz/run_fuzz.sh SECONDS.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/check.h"
#include "server/api_request.h"
#include "server/stop_sequences.h"

namespace {

using strata::server::RequestLimits;
using strata::server::Sampling;

void check_error(const std::string& message) {
  STRATA_CHECK(!message.empty());
  STRATA_CHECK(message.find_first_of("\n\r") == std::string::npos);
}

void check_sampling(const Sampling& s, const RequestLimits& limits) {
  STRATA_CHECK(s.max_tokens >= 1 && s.max_tokens <= limits.max_tokens);
  STRATA_CHECK(s.temperature >= 0 && s.temperature <= 2);
  STRATA_CHECK(s.top_p > 0 && s.top_p <= 1);
  STRATA_CHECK(s.stop.size() <= limits.max_stop_sequences);
  for (const std::string& stop : s.stop)
    STRATA_CHECK(!stop.empty() && stop.size() <= limits.max_stop_bytes);
}

// The accepted request's reply text, sent through its stop sequences in pieces cut by the
// input's bytes, never holds one of them.
void check_stops(const Sampling& s, std::string_view text) {
  if (s.stop.empty()) return;
  strata::server::StopSequences stops(s.stop);
  std::string sent;
  for (size_t at = 0; at < text.size();) {
    const size_t piece = 1 + uint8_t(text[at]) % 7;
    sent += stops.push(text.substr(at, piece));
    at += piece;
  }
  sent += stops.finish();
  for (const std::string& stop : s.stop) STRATA_CHECK(sent.find(stop) == std::string::npos);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  RequestLimits limits;
  limits.max_body_bytes = 1 << 16;
  const auto chat = strata::server::parse_chat_request(body, limits);
  if (!chat.ok()) {
    check_error(chat.status().message());
  } else {
    STRATA_CHECK(!chat.value().messages.empty() &&
                 chat.value().messages.size() <= limits.max_messages);
    for (const auto& m : chat.value().messages)
      STRATA_CHECK(m.role == "system" || m.role == "user" || m.role == "assistant" ||
                   m.role == "tool");
    check_sampling(chat.value().sampling, limits);
    for (const auto& m : chat.value().messages) check_stops(chat.value().sampling, m.content);
  }
  const auto completion = strata::server::parse_completion_request(body, limits);
  if (!completion.ok()) {
    check_error(completion.status().message());
  } else {
    STRATA_CHECK(!completion.value().prompt.empty());
    check_sampling(completion.value().sampling, limits);
    check_stops(completion.value().sampling, completion.value().prompt);
  }
  return 0;
}

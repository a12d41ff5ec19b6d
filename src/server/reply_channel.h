// Hands a reply from the scheduler's thread to the HTTP thread that sends it: the text as it is
// generated, then the outcome. The HTTP side marks the channel closed when its client has gone,
// and the scheduler then cancels the generation at its next token.
//
// Thread-safety: one producer (the scheduler) and one consumer (an HTTP thread).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "server/scheduler.h"

namespace strata::server {

class ReplyChannel {
 public:
  ReplyChannel() : received_(std::chrono::steady_clock::now()) {}

  // Producer. False once the consumer has closed the channel.
  bool push_text(std::string_view text);
  void finish(const GenerationOutcome& outcome);

  // Consumer: waits until text or the outcome is there; takes the text pending (empty when only
  // the outcome came). After the outcome, done() holds it.
  std::string take_text();
  const std::optional<GenerationOutcome>& done() const { return done_; }
  void close();
  // Seconds from the request's arrival to its first text (0: none yet) and to now.
  double first_text_seconds() const;
  double seconds() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::string text_;
  std::optional<GenerationOutcome> outcome_;  // under mutex_
  std::optional<GenerationOutcome> done_;     // the consumer's copy
  bool closed_ = false;
  std::chrono::steady_clock::time_point received_;
  std::optional<std::chrono::steady_clock::time_point> first_text_;
};

}  // namespace strata::server

#include "server/reply_channel.h"

namespace strata::server {

bool ReplyChannel::push_text(std::string_view text) {
  {
    std::lock_guard lock(mutex_);
    if (closed_) return false;
    if (!first_text_) first_text_ = std::chrono::steady_clock::now();
    text_ += text;
  }
  changed_.notify_all();
  return true;
}

void ReplyChannel::finish(const GenerationOutcome& outcome) {
  {
    std::lock_guard lock(mutex_);
    outcome_ = outcome;
  }
  changed_.notify_all();
}

std::string ReplyChannel::take_text() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return !text_.empty() || outcome_.has_value(); });
  std::string text;
  text.swap(text_);
  if (text.empty()) done_ = outcome_;  // the outcome follows the last text
  return text;
}

void ReplyChannel::close() {
  std::lock_guard lock(mutex_);
  closed_ = true;
}

double ReplyChannel::first_text_seconds() const {
  std::lock_guard lock(mutex_);
  return first_text_ ? std::chrono::duration<double>(*first_text_ - received_).count() : 0.0;
}

double ReplyChannel::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - received_).count();
}

}  // namespace strata::server

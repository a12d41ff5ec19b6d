#include "server/stop_sequences.h"

#include <algorithm>

namespace strata::server {

StopSequences::StopSequences(std::vector<std::string> stops) : stops_(std::move(stops)) {}

std::string StopSequences::push(std::string_view piece) {
  if (stopped_) return {};
  held_ += piece;
  size_t first_stop = std::string::npos;
  for (const std::string& stop : stops_) first_stop = std::min(first_stop, held_.find(stop));
  if (first_stop != std::string::npos) {
    stopped_ = true;
    std::string sent = held_.substr(0, first_stop);
    held_.clear();
    return sent;
  }
  // The longest tail of held_ that a stop sequence begins with (shorter than that sequence, or
  // find() would have matched it).
  size_t keep = 0;
  for (const std::string& stop : stops_)
    for (size_t n = std::min(stop.size() - 1, held_.size()); n > keep; --n)
      if (std::string_view(held_).substr(held_.size() - n) == std::string_view(stop).substr(0, n)) {
        keep = n;
        break;
      }
  std::string sent = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return sent;
}

std::string StopSequences::finish() {
  std::string rest;
  rest.swap(held_);
  return stopped_ ? std::string() : rest;
}

}  // namespace strata::server

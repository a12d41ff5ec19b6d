// A reply's text as it streams, cut before the first stop sequence (OpenAI's `stop`): what
// push() returns can be sent at once; a tail that could still begin a stop sequence is held
// back until the next piece settles it. Neither a stop sequence nor anything after it is sent.
//
// Thread-compatibility: one reply, one thread at a time.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace strata::server {

class StopSequences {
 public:
  explicit StopSequences(std::vector<std::string> stops);

  // `piece` appended to the reply: the text that is now safe to send. After a stop sequence,
  // always empty.
  std::string push(std::string_view piece);
  // The reply ended without a stop sequence: what was held back.
  std::string finish();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace strata::server

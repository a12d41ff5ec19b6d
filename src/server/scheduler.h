// The compute side of `strata serve`: one engine, `parallel` sessions (the KV caches of that
// many conversations), one thread that runs every forward pass. Requests wait in a bounded
// queue; each free session takes the next one, the session whose cached context shares the
// longest prefix with its prompt first (so a conversation's next turn only computes what is
// new), and the sessions generating decode together, one forward pass per step for all of
// them (Session::feed_together: every routed expert read and computed once per step for all
// the sequences routed to it).
//
// Thread-safety: submit(), gauges() and residency() may be called from any thread; the
// callbacks of a job run on the scheduler's thread.
#pragma once

#include <strata/engine.h>
#include <strata/session.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/server_metrics.h"

namespace strata::server {

struct GenerationOutcome {
  Status status;              // an engine error ends the generation with it
  std::string finish_reason;  // "stop", "length" (max_tokens or the context), "cancelled"
  int64_t prompt_tokens = 0;
  int64_t reused_prompt_tokens = 0;
  int64_t completion_tokens = 0;
};

struct GenerationJob {
  std::vector<int32_t> prompt;
  GenerateOptions options;
  std::vector<std::string> stop;
  // Text of the reply as it is settled; returns false when the client has gone (the
  // generation is then cancelled).
  std::function<bool(std::string_view text)> on_text;
  std::function<void(const GenerationOutcome&)> on_done;
};

class Scheduler {
 public:
  // REQUIRES: the engine's plan holds `parallel` sessions.
  static Result<std::unique_ptr<Scheduler>> start(std::shared_ptr<Engine> engine, int parallel,
                                                  size_t queue_capacity, ServerMetrics& metrics);
  ~Scheduler();  // finishes nothing: queued and running jobs end as "cancelled"

  // False when every session is busy and the queue is full (the job is not taken).
  bool submit(GenerationJob job);
  // Which experts are resident, as the scheduler last saw between steps ([layer][expert]).
  std::vector<uint8_t> residency() const;
  const Engine& engine() const { return *engine_; }

 private:
  struct Running;
  Scheduler(std::shared_ptr<Engine> engine, size_t queue_capacity, ServerMetrics& metrics);
  void loop();
  // Jobs from the queue into free sessions, each prompt prefilled.
  void admit(std::unique_lock<std::mutex>& lock);
  void start_job(GenerationJob job, size_t slot);
  // One token sampled for each running job and, for those that go on, one forward pass.
  void step();
  // The job of session `slot` ended.
  void finish(size_t slot, std::string reason, Status status = Status());
  // Tells the job's client how it ended; it no longer counts against the queue.
  void complete(GenerationJob& job, const GenerationOutcome& outcome);
  void publish_state(bool force);

  std::shared_ptr<Engine> engine_;
  size_t queue_capacity_;
  ServerMetrics& metrics_;
  std::vector<std::unique_ptr<Session>> sessions_;
  std::vector<std::unique_ptr<Running>> running_;  // per session, null when free
  std::vector<uint64_t> last_used_;                // per session, for the choice among equals
  uint64_t ticks_ = 0;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<GenerationJob> queue_;  // under mutex_
  size_t taken_ = 0;                 // under mutex_: jobs queued or running
  bool stopping_ = false;            // under mutex_
  std::vector<uint8_t> residency_;   // under mutex_
  int64_t last_published_ms_ = -1;
  std::thread thread_;
};

}  // namespace strata::server

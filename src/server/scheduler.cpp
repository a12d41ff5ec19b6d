#include "server/scheduler.h"

#include <algorithm>
#include <chrono>

#include "server/stop_sequences.h"

namespace strata::server {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The engine's state is published for /metrics and the page at most this often while
// generating (each time reads every expert's residency).
constexpr int64_t kPublishEveryMs = 250;

}  // namespace

struct Scheduler::Running {
  GenerationJob job;
  StopSequences stops;
  GenerationOutcome outcome;
  bool prefilling = true;  // its prompt is still being fed, a chunk per scheduler step
};

Scheduler::Scheduler(std::shared_ptr<Engine> engine, size_t queue_capacity, int64_t prefill_chunk,
                     ServerMetrics& metrics)
    : engine_(std::move(engine)),
      queue_capacity_(queue_capacity),
      prefill_chunk_(std::max<int64_t>(1, prefill_chunk)),
      metrics_(metrics) {}

Result<std::unique_ptr<Scheduler>> Scheduler::start(std::shared_ptr<Engine> engine, int parallel,
                                                    size_t queue_capacity, int64_t prefill_chunk,
                                                    ServerMetrics& metrics) {
  std::unique_ptr<Scheduler> scheduler(
      new Scheduler(engine, queue_capacity, prefill_chunk, metrics));
  for (int i = 0; i < parallel; ++i) {
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, Session::open(engine));
    scheduler->sessions_.push_back(std::move(session));
  }
  scheduler->running_.resize(size_t(parallel));
  scheduler->last_used_.assign(size_t(parallel), 0);
  scheduler->publish_state(true);
  scheduler->thread_ = std::thread([s = scheduler.get()] { s->loop(); });
  return scheduler;
}

Scheduler::~Scheduler() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

bool Scheduler::submit(GenerationJob job) {
  {
    std::lock_guard lock(mutex_);
    if (taken_ >= sessions_.size() + queue_capacity_) return false;
    ++taken_;
    queue_.push_back(std::move(job));
  }
  wake_.notify_all();
  return true;
}

std::vector<uint8_t> Scheduler::residency() const {
  std::lock_guard lock(mutex_);
  return residency_;
}

void Scheduler::loop() {
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      const auto has_work = [&] {
        const bool running = std::any_of(running_.begin(), running_.end(),
                                         [](const auto& r) { return r != nullptr; });
        const bool free = std::any_of(running_.begin(), running_.end(),
                                      [](const auto& r) { return r == nullptr; });
        return stopping_ || running || (free && !queue_.empty());
      };
      wake_.wait(lock, has_work);
      if (stopping_) break;
      admit(lock);
    }
    prefill_step();
    step();
    publish_state(
        std::none_of(running_.begin(), running_.end(), [](const auto& r) { return r != nullptr; }));
  }
  for (size_t slot = 0; slot < running_.size(); ++slot)
    if (running_[slot]) finish(slot, "cancelled");
  std::unique_lock lock(mutex_);
  std::deque<GenerationJob> queued = std::move(queue_);
  lock.unlock();
  for (GenerationJob& job : queued) complete(job, {.finish_reason = "cancelled"});
}

void Scheduler::complete(GenerationJob& job, const GenerationOutcome& outcome) {
  {
    std::lock_guard lock(mutex_);
    --taken_;
  }
  job.on_done(outcome);
}

void Scheduler::admit(std::unique_lock<std::mutex>& lock) {
  for (;;) {
    if (queue_.empty()) return;
    // The free session whose context shares most with the prompt; among equals, the one used
    // longest ago (its conversation is the least likely to come back).
    const std::vector<int32_t>& prompt = queue_.front().prompt;
    std::optional<size_t> best;
    int64_t best_shared = -1;
    for (size_t slot = 0; slot < sessions_.size(); ++slot) {
      if (running_[slot]) continue;
      const int64_t shared = sessions_[slot]->shared_prefix(prompt);
      if (shared > best_shared || (shared == best_shared && last_used_[slot] < last_used_[*best])) {
        best = slot;
        best_shared = shared;
      }
    }
    if (!best) return;
    GenerationJob job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    start_job(std::move(job), *best);
    lock.lock();
  }
}

void Scheduler::start_job(GenerationJob job, size_t slot) {
  Session& session = *sessions_[slot];
  // At least one prompt token is fed, for fresh logits.
  const int64_t reused =
      std::min(session.shared_prefix(job.prompt), int64_t(job.prompt.size()) - 1);
  session.truncate(reused);
  GenerationOutcome outcome{.prompt_tokens = int64_t(job.prompt.size()),
                            .reused_prompt_tokens = reused};
  std::vector<std::string> stop = job.stop;
  running_[slot] = std::make_unique<Running>(
      Running{.job = std::move(job), .stops = StopSequences(std::move(stop)), .outcome = outcome});
}

void Scheduler::prefill_step() {
  const auto prefilling = std::find_if(running_.begin(), running_.end(),
                                       [](const auto& r) { return r && r->prefilling; });
  if (prefilling == running_.end()) return;
  const size_t slot = size_t(prefilling - running_.begin());
  Running& r = **prefilling;
  Session& session = *sessions_[slot];
  const std::span<const int32_t> prompt = r.job.prompt;
  const int64_t fed = session.n_past(), left = int64_t(prompt.size()) - fed;
  const auto start = Clock::now();
  Status status;
  if (left > prefill_chunk_) {
    status = session.feed(prompt.subspan(size_t(fed), size_t(prefill_chunk_)));
  } else {
    // The last chunk: the generation starts from its logits.
    status = session.begin_generation(prompt, r.job.options).status();
    r.prefilling = false;
  }
  metrics_.record_prefill(session.n_past() - fed, seconds_since(start));
  if (!status.ok()) finish(slot, "error", status);
}

void Scheduler::step() {
  std::vector<Session*> batch;
  std::vector<int32_t> tokens;
  std::vector<size_t> slots;
  for (size_t slot = 0; slot < sessions_.size(); ++slot) {
    if (!running_[slot] || running_[slot]->prefilling) continue;
    Running& r = *running_[slot];
    Session& session = *sessions_[slot];
    const Session::Sampled next = session.sample_next();
    // What the reply holds back is sent when it ends without a stop sequence.
    const auto flush = [&] {
      const std::string rest = r.stops.push(session.finish_text()) + r.stops.finish();
      return rest.empty() || r.job.on_text(rest);
    };
    if (next.end_of_generation) {
      finish(slot, flush() ? "stop" : "cancelled");
      continue;
    }
    ++r.outcome.completion_tokens;
    const std::string text = r.stops.push(next.text);
    if (!text.empty() && !r.job.on_text(text)) {
      finish(slot, "cancelled");
    } else if (r.stops.stopped()) {
      finish(slot, "stop");
    } else if (r.outcome.completion_tokens >= r.job.options.max_tokens ||
               session.n_past() >= session.n_ctx()) {
      finish(slot, flush() ? "length" : "cancelled");
    } else {
      batch.push_back(&session);
      tokens.push_back(next.token);
      slots.push_back(slot);
    }
  }
  if (batch.empty()) return;
  const auto start = Clock::now();
  const ExpertCounters before = engine_->expert_counters();
  const Status status = Session::feed_together(batch, tokens);
  ExpertCounters during = engine_->expert_counters();
  during -= before;
  metrics_.record_decode_step(int64_t(batch.size()), seconds_since(start), during);
  if (!status.ok())
    for (const size_t slot : slots) finish(slot, "error", status);
}

void Scheduler::finish(size_t slot, std::string reason, Status status) {
  std::unique_ptr<Running> r = std::move(running_[slot]);
  r->outcome.finish_reason = std::move(reason);
  r->outcome.status = std::move(status);
  if (r->outcome.finish_reason == "cancelled") metrics_.record_cancelled();
  last_used_[slot] = ++ticks_;
  complete(r->job, r->outcome);
}

void Scheduler::publish_state(bool force) {
  const int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch())
          .count();
  if (!force && last_published_ms_ >= 0 && now_ms - last_published_ms_ < kPublishEveryMs) return;
  last_published_ms_ = now_ms;
  EngineGauges gauges;
  gauges.parallel = int(sessions_.size());
  for (size_t slot = 0; slot < sessions_.size(); ++slot) {
    gauges.active_sequences += running_[slot] ? 1 : 0;
    gauges.kv_tokens += sessions_[slot]->n_past();
    gauges.kv_capacity += sessions_[slot]->n_ctx();
  }
  gauges.experts = engine_->expert_counters();
  std::vector<uint8_t> residency = engine_->expert_residency();
  gauges.total_experts = int64_t(residency.size());
  gauges.resident_experts = std::count(residency.begin(), residency.end(), uint8_t(1));
  {
    std::lock_guard lock(mutex_);
    gauges.queued_requests = int(queue_.size());
    residency_ = std::move(residency);
  }
  metrics_.set_engine(gauges);
}

}  // namespace strata::server

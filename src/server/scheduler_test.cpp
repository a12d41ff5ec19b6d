// The scheduler on the bundled model: replies as Session::generate gives them, the cached
// prefix of a conversation reused, cancellation, a full queue, sequences decoded together.
#include "server/scheduler.h"

#include <gtest/gtest.h>

#include <future>

namespace strata::server {
namespace {

const std::string kModel = std::string(STRATA_SOURCE_DIR) + "/models/strata-tiny-moe-q4_0.gguf";

std::shared_ptr<Engine> open_engine(int sessions, int64_t prefill_chunk = 256) {
  SessionOptions options;
  options.prefill_chunk = prefill_chunk;
  options.model_path = kModel;
  options.n_threads = 2;
  options.n_ctx = 256;
  options.arena_share = 0.25;
  options.sessions = sessions;
  auto engine = Engine::open(options);
  EXPECT_TRUE(engine.ok()) << engine.status().message();
  return engine.value();
}

struct Reply {
  std::string text;
  GenerationOutcome outcome;
};

// Submits a greedy generation of `prompt`; the future holds its reply.
std::future<Reply> submit(Scheduler& scheduler, const std::vector<int32_t>& prompt, int max_tokens,
                          int cancel_after_texts = -1) {
  auto promise = std::make_shared<std::promise<Reply>>();
  auto reply = std::make_shared<Reply>();
  auto texts = std::make_shared<int>(0);
  GenerateOptions options;
  options.max_tokens = max_tokens;
  options.temperature = 0;
  options.stop_at_end_of_generation = false;  // the counts below are the lengths asked for
  GenerationJob job{.prompt = prompt,
                    .options = options,
                    .stop = {},
                    .on_text =
                        [reply, texts, cancel_after_texts](std::string_view text) {
                          reply->text += text;
                          return ++*texts != cancel_after_texts;
                        },
                    .on_done =
                        [promise, reply](const GenerationOutcome& outcome) {
                          reply->outcome = outcome;
                          promise->set_value(*reply);
                        }};
  auto future = promise->get_future();
  EXPECT_TRUE(scheduler.submit(std::move(job)));
  return future;
}

// The greedy continuation of `prompt` by a session of its own.
std::string alone(const std::vector<int32_t>& prompt, int max_tokens, int64_t prefill_chunk) {
  auto session = Session::open(open_engine(1, prefill_chunk));
  EXPECT_TRUE(session.ok());
  GenerateOptions options;
  options.max_tokens = max_tokens;
  options.temperature = 0;
  options.stop_at_end_of_generation = false;
  std::string text;
  EXPECT_TRUE(session.value()
                  ->generate(prompt, options,
                             [&](int32_t, std::string_view t) {
                               text += t;
                               return true;
                             })
                  .ok());
  return text;
}

TEST(Scheduler, RepliesAsASessionGeneratesAndReusesTheCachedPrefix) {
  auto engine = open_engine(2);
  const std::vector<int32_t> prompt = engine->tokenize("def add(a, b):\n    return");
  ServerMetrics metrics;
  auto scheduler = Scheduler::start(engine, 2, 4, 256, metrics);
  ASSERT_TRUE(scheduler.ok()) << scheduler.status().message();
  const Reply first = submit(*scheduler.value(), prompt, 12).get();
  ASSERT_TRUE(first.outcome.status.ok()) << first.outcome.status.message();
  EXPECT_EQ(first.text, alone(prompt, 12, 256));
  EXPECT_EQ(first.outcome.finish_reason, "length");
  EXPECT_EQ(first.outcome.completion_tokens, 12);
  EXPECT_EQ(first.outcome.reused_prompt_tokens, 0);
  // The next turn extends the first: it goes to the session holding it, which reuses it.
  std::vector<int32_t> longer = prompt;
  const std::vector<int32_t> more = engine->tokenize(" a + b\n\nprint(add(1, 2))");
  longer.insert(longer.end(), more.begin(), more.end());
  const Reply second = submit(*scheduler.value(), longer, 4).get();
  EXPECT_EQ(second.outcome.reused_prompt_tokens, int64_t(prompt.size()));
  EXPECT_EQ(second.outcome.prompt_tokens, int64_t(longer.size()));
}

TEST(Scheduler, DecodesSequencesTogetherAndCancelsWhenTheClientGoes) {
  auto engine = open_engine(3);
  ServerMetrics metrics;
  auto scheduler = Scheduler::start(engine, 3, 8, 256, metrics);
  ASSERT_TRUE(scheduler.ok()) << scheduler.status().message();
  auto a = submit(*scheduler.value(), engine->tokenize("The river"), 16);
  auto b = submit(*scheduler.value(), engine->tokenize("SELECT * FROM"), 16);
  auto gone = submit(*scheduler.value(), engine->tokenize("Once upon a time"), 16, 2);
  EXPECT_EQ(a.get().outcome.completion_tokens, 16);
  EXPECT_EQ(b.get().outcome.completion_tokens, 16);
  const Reply cancelled = gone.get();
  EXPECT_EQ(cancelled.outcome.finish_reason, "cancelled");
  EXPECT_EQ(cancelled.outcome.completion_tokens, 2);
  const Throughput totals = metrics.throughput();
  // Fewer forward passes than tokens: the steps of the sequences ran together.
  const std::string text = metrics.render();
  const std::string single_bucket = "strata_decode_batch_sequences_bucket{le=\"1\"} ";
  const size_t at = text.find(single_bucket);
  ASSERT_NE(at, std::string::npos) << text;
  const uint64_t single_steps = std::stoull(text.substr(at + single_bucket.size()));
  EXPECT_LT(single_steps * 2, totals.decode_tokens) << text;
  EXPECT_NE(text.find("strata_cancelled_requests_total 1\n"), std::string::npos);
}

TEST(Scheduler, FeedsALongPromptInChunksBetweenTheOthersDecodeSteps) {
  constexpr int64_t kChunk = 16;
  auto engine = open_engine(2, kChunk);
  ServerMetrics metrics;
  auto scheduler = Scheduler::start(engine, 2, 4, kChunk, metrics);
  ASSERT_TRUE(scheduler.ok()) << scheduler.status().message();
  const std::vector<int32_t> short_prompt = engine->tokenize("The river");
  std::string text;
  for (int i = 0; i < 12; ++i) text += "def f" + std::to_string(i) + "(x):\n    return x + 1\n";
  const std::vector<int32_t> long_prompt = engine->tokenize(text);
  ASSERT_GT(long_prompt.size(), size_t(6 * kChunk));
  auto first = submit(*scheduler.value(), short_prompt, 40);
  auto second = submit(*scheduler.value(), long_prompt, 8);
  const Reply a = first.get(), b = second.get();
  EXPECT_EQ(a.outcome.completion_tokens, 40);
  // Fed a chunk per step, the prompt is what a session computes feeding it in the same chunks.
  EXPECT_EQ(b.text, alone(long_prompt, 8, kChunk));
  EXPECT_EQ(b.outcome.prompt_tokens, int64_t(long_prompt.size()));
}

TEST(Scheduler, RefusesWhenEverySessionIsBusyAndItsQueueIsFull) {
  auto engine = open_engine(1);
  ServerMetrics metrics;
  auto scheduler = Scheduler::start(engine, 1, 1, 256, metrics);
  ASSERT_TRUE(scheduler.ok());
  auto running = submit(*scheduler.value(), engine->tokenize("The river"), 200);
  auto queued = submit(*scheduler.value(), engine->tokenize("The sea"), 2);
  GenerationJob refused{.prompt = {1, 2}, .on_text = {}, .on_done = {}};
  EXPECT_FALSE(scheduler.value()->submit(std::move(refused)));
  EXPECT_EQ(running.get().outcome.completion_tokens, 200);
  EXPECT_EQ(queued.get().outcome.completion_tokens, 2);
  // Both done: there is room again.
  EXPECT_EQ(
      submit(*scheduler.value(), engine->tokenize("The sky"), 1).get().outcome.completion_tokens,
      1);
}

}  // namespace
}  // namespace strata::server

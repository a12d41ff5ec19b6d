// Sessions sharing one engine: each computes what it would alone, bit for bit, whichever order
// their forward passes take, and the engine refuses more sessions than its plan holds.
#include <gtest/gtest.h>

#include <strata/engine.h>
#include <strata/session.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace strata {
namespace {

const std::string kModel = std::string(STRATA_SOURCE_DIR) + "/models/strata-tiny-moe-q4_0.gguf";

SessionOptions options_with(double arena_share, int sessions) {
  SessionOptions options;
  options.model_path = kModel;
  options.n_threads = 2;
  options.n_ctx = 256;
  options.arena_share = arena_share;
  options.sessions = sessions;
  return options;
}

// The logits after each token of `text`, fed token by token (decode steps).
std::vector<float> decode_logits(Session& session, const std::vector<int32_t>& tokens) {
  std::vector<float> all;
  for (const int32_t token : tokens) {
    EXPECT_TRUE(session.feed({&token, 1}).ok());
    all.insert(all.end(), session.logits().begin(), session.logits().end());
  }
  return all;
}

bool bit_identical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class SharedEngine : public ::testing::TestWithParam<double> {};

TEST_P(SharedEngine, SessionsComputeWhatTheyWouldAlone) {
  const auto engine = Engine::open(options_with(GetParam(), 2));
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  const std::vector<int32_t> code = engine.value()->tokenize("def fibonacci(n):\n    return");
  const std::vector<int32_t> prose = engine.value()->tokenize("The river ran past the old mill");
  std::vector<float> alone_code, alone_prose;
  for (auto [tokens, out] : {std::pair{&code, &alone_code}, std::pair{&prose, &alone_prose}}) {
    auto session = Session::open(options_with(GetParam(), 1));
    ASSERT_TRUE(session.ok()) << session.status().message();
    *out = decode_logits(*session.value(), *tokens);
  }
  auto a = Session::open(engine.value());
  auto b = Session::open(engine.value());
  ASSERT_TRUE(a.ok() && b.ok());
  // Both at once, on two threads: their steps interleave as the lock hands them out.
  std::vector<float> shared_code, shared_prose;
  std::thread first([&] { shared_code = decode_logits(*a.value(), code); });
  std::thread second([&] { shared_prose = decode_logits(*b.value(), prose); });
  first.join();
  second.join();
  EXPECT_TRUE(bit_identical(alone_code, shared_code));
  EXPECT_TRUE(bit_identical(alone_prose, shared_prose));
  // Each session's statistics count its own steps only.
  EXPECT_EQ(a.value()->stats().decode_tokens, int64_t(code.size()));
  EXPECT_EQ(b.value()->stats().decode_tokens, int64_t(prose.size()));
}

INSTANTIATE_TEST_SUITE_P(ResidentAndStreamed, SharedEngine, ::testing::Values(0.0, 0.25));

TEST(SharedEngineLimits, RefusesMoreSessionsThanItsPlanHolds) {
  const auto engine = Engine::open(options_with(0.25, 1));
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  {
    auto first = Session::open(engine.value());
    ASSERT_TRUE(first.ok());
    const auto second = Session::open(engine.value());
    ASSERT_FALSE(second.ok());
    EXPECT_NE(second.status().message().find("holds 1 session, all open"), std::string::npos)
        << second.status().message();
  }
  // A closed session gives its place back.
  EXPECT_TRUE(Session::open(engine.value()).ok());
}

TEST(SharedEngineLimits, NotesGoToTheCallbackNotToStderr) {
  SessionOptions options = options_with(0.0, 1);
  options.device = "cpu";  // a memory budget's plan: the CPU's (CUDA takes --gpu-mem)
  options.memory_budget = uint64_t(512) << 20;  // above what the test process already holds
  options.arena_share = 0;
  std::vector<std::pair<NoteKind, std::string>> notes;
  options.on_note = [&](NoteKind kind, std::string_view line) { notes.emplace_back(kind, line); };
  ::testing::internal::CaptureStderr();
  const auto engine = Engine::open(options);
  const std::string printed = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  EXPECT_EQ(printed, "");
  ASSERT_FALSE(notes.empty());
  EXPECT_EQ(notes.front().first, NoteKind::kPlan);
  EXPECT_NE(notes.front().second.find("memory plan for a budget of 512.00 MiB"), std::string::npos)
      << notes.front().second;
}

}  // namespace
}  // namespace strata

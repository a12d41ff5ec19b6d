// Sessions decoded together (Session::feed_together, what `strata serve --parallel` runs): each
// sequence's logits match what it computes alone, the joint steps are deterministic, and each
// routed expert is read once per step for all the sequences routed to it.
#include <gtest/gtest.h>

#include <strata/engine.h>
#include <strata/session.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace strata {
namespace {

const std::string kModel = std::string(STRATA_SOURCE_DIR) + "/models/strata-tiny-moe-q4_0.gguf";
const char* const kTexts[] = {"def fibonacci(n):\n    return", "The river ran past the old mill",
                              "SELECT name FROM users WHERE", "Il était une fois un roi"};
constexpr int kSequences = 4;

SessionOptions options_with(double arena_share) {
  SessionOptions options;
  options.model_path = kModel;
  options.n_threads = 2;
  options.n_ctx = 128;
  options.arena_share = arena_share;
  options.sessions = kSequences;
  return options;
}

// Per sequence, the logits after each of its first `steps` tokens, all sequences fed one token
// each per forward pass (alone: one sequence at a time, a decode step per token).
using Logits = std::vector<std::vector<float>>;
struct Decoded {
  Logits logits;
  ExpertCounters experts;
};
Decoded decode(const std::shared_ptr<Engine>& shared, bool together, size_t steps) {
  Engine& engine = *shared;
  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<std::vector<int32_t>> tokens;
  for (const char* text : kTexts) {
    auto session = Session::open(shared);
    EXPECT_TRUE(session.ok()) << session.status().message();
    sessions.push_back(std::move(session).value());
    tokens.push_back(engine.tokenize(text));
    EXPECT_GE(tokens.back().size(), steps);
  }
  const ExpertCounters before = engine.expert_counters();
  Decoded out{Logits(kSequences), {}};
  for (size_t step = 0; step < steps; ++step) {
    std::vector<Session*> batch;
    std::vector<int32_t> fed;
    for (int s = 0; s < kSequences; ++s) {
      batch.push_back(sessions[size_t(s)].get());
      fed.push_back(tokens[size_t(s)][step]);
    }
    if (together) {
      const Status status = Session::feed_together(batch, fed);
      EXPECT_TRUE(status.ok()) << status.message();
    } else {
      for (int s = 0; s < kSequences; ++s)
        EXPECT_TRUE(batch[size_t(s)]->feed({&fed[size_t(s)], 1}).ok());
    }
    for (int s = 0; s < kSequences; ++s) {
      const auto logits = batch[size_t(s)]->logits();
      out.logits[size_t(s)].insert(out.logits[size_t(s)].end(), logits.begin(), logits.end());
    }
  }
  out.experts = engine.expert_counters();
  out.experts -= before;
  return out;
}

class DecodeTogether : public ::testing::TestWithParam<double> {};

TEST_P(DecodeTogether, MatchesEachSequenceAloneAndReadsEachExpertOnce) {
  constexpr size_t kSteps = 6;
  auto opened = Engine::open(options_with(GetParam()));
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  Engine& engine = *opened.value();
  const Decoded alone = decode(opened.value(), false, kSteps);
  const Decoded together = decode(opened.value(), true, kSteps);
  const Decoded again = decode(opened.value(), true, kSteps);
  const size_t n_vocab = size_t(engine.n_vocab());
  for (int s = 0; s < kSequences; ++s) {
    const std::vector<float>& a = alone.logits[size_t(s)];
    const std::vector<float>& t = together.logits[size_t(s)];
    ASSERT_EQ(a.size(), t.size());
    EXPECT_EQ(std::memcmp(t.data(), again.logits[size_t(s)].data(), t.size() * sizeof(float)), 0)
        << "joint steps are not deterministic, sequence " << s;
    for (size_t step = 0; step < kSteps; ++step) {
      const auto row = [&](const std::vector<float>& v) {
        return std::vector<float>(v.begin() + ptrdiff_t(step * n_vocab),
                                  v.begin() + ptrdiff_t((step + 1) * n_vocab));
      };
      const std::vector<float> ra = row(a), rt = row(t);
      float max_abs = 0, max_diff = 0;
      for (size_t i = 0; i < n_vocab; ++i) {
        max_abs = std::max(max_abs, std::fabs(ra[i]));
        max_diff = std::max(max_diff, std::fabs(ra[i] - rt[i]));
      }
      // The CPU's tolerance for the same model computed two ways (F32 golden parity: 1e-4).
      EXPECT_LE(max_diff, 1e-4f * max_abs) << "sequence " << s << " step " << step;
      EXPECT_EQ(std::max_element(ra.begin(), ra.end()) - ra.begin(),
                std::max_element(rt.begin(), rt.end()) - rt.begin());
    }
  }
  // Together, an expert two sequences route to in a step is claimed once for both (a resident
  // store counts no claims).
  if (GetParam() == 0) return;
  const auto claims = [](const ExpertCounters& c) {
    return c.hits + c.readahead_hits + c.late_readaheads + c.misses;
  };
  EXPECT_LT(claims(together.experts), claims(alone.experts));
}

INSTANTIATE_TEST_SUITE_P(ResidentAndStreamed, DecodeTogether, ::testing::Values(0.0, 0.25));

TEST(DecodeTogetherLimits, RefusesAFullContext) {
  SessionOptions options = options_with(0.0);
  options.n_ctx = 4;
  auto engine = Engine::open(options);
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  auto a = Session::open(engine.value());
  auto b = Session::open(engine.value());
  ASSERT_TRUE(a.ok() && b.ok());
  const std::vector<int32_t> four = {1, 2, 3, 4};
  ASSERT_TRUE(a.value()->feed(four).ok());
  Session* both[] = {a.value().get(), b.value().get()};
  const int32_t next[] = {5, 5};
  const Status status = Session::feed_together(both, next);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("exceeds its size"), std::string::npos) << status.message();
  EXPECT_EQ(b.value()->n_past(), 0);  // nothing fed to the other either
}

}  // namespace
}  // namespace strata

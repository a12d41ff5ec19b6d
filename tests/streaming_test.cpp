// The streaming expert store against the all-resident reference (DESIGN.md §3, Determinism):
// with exact routing, logits are bit-identical whatever the arena size, thread counts,
// I/O threads, read-ahead and batching; with cache-aware routing, repeated runs and different
// I/O thread counts agree bit for bit; failed reads surface as one clear error.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <strata/session.h>

#include "backend/host_slot_memory.h"
#include "cpu/cpu_backend.h"
#include "experts/expert_arena.h"
#include "experts/fault_injecting_reader.h"
#include "experts/streaming_expert_store.h"
#include "gguf/gguf_split_writer.h"
#include "golden_data.h"
#include "model/next_expert_predictor.h"
#include "model/tensor_data.h"
#include "model/unit_layout.h"
#include "model_runner.h"

namespace strata {
namespace {

std::string bundled_model() {
  return std::string(STRATA_SOURCE_DIR) + "/models/strata-tiny-moe-q4_0.gguf";
}
std::string synthetic(const std::string& name) { return golden::synthetic_model(name); }
std::vector<int32_t> sequence(const std::string& folder, const std::string& name) {
  return golden::sequence_ids(folder, name);
}

bool bit_identical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct StreamingSetup {
  double arena_fraction;  // of all expert units (0: the minimum)
  int threads, io_threads, readahead;
  int64_t chunk;
  float moce = 0;
  int readahead_layers = 1;
  int moce_protect = 3;
  int io_depth = 0;                // 0: the engine's default (2 x io_threads)
  int readahead_budget_units = 0;  // per layer; 0: no byte limit
  int readahead_far = 8;           // predictions read for each layer beyond the next
  IoBackend backend = IoBackend::kAuto;
  std::string policy = "successor";
  std::shared_ptr<const NextExpertPredictor> predictor;  // for the "predicted" policy
};

struct StreamingRun {
  std::vector<float> logits;
  ExpertCounters stats;
  int blocking_waits = 0;  // times the compute thread was about to block on a read
};

Result<StreamingRun> run_streaming(const std::string& path, const std::vector<int32_t>& tokens,
                                   const StreamingSetup& setup,
                                   std::shared_ptr<FileReader> reader = nullptr) {
  STRATA_ASSIGN_OR_RETURN(auto file, gguf::GgufFile::open(path));
  // As sessions load it: the dense weights read into memory (grouped where this CPU groups
  // Q4_0 rows), the experts streamed (and grouped as they arrive).
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<FileReader> dense_reader,
                          open_file_reader(file->parts()));
  STRATA_ASSIGN_OR_RETURN(
      std::shared_ptr<const TensorData> dense,
      LoadedTensorData::load(*file, *dense_reader, LoadedTensorData::Contents::kDense, nullptr));
  STRATA_ASSIGN_OR_RETURN(auto model, Model::load(file, dense));
  if (!reader) {
    STRATA_ASSIGN_OR_RETURN(reader, open_file_reader(file->parts()));
  }
  const ExpertLayout& layout = model->weights().experts;
  const int k = int(model->config().n_expert_used);
  const uint64_t minimum = ExpertArena::minimum_bytes(layout, reader->alignment(), k);
  StreamingStoreOptions options;
  options.arena_bytes = std::max<uint64_t>(
      minimum,
      uint64_t(setup.arena_fraction * double(layout.total_bytes())) +
          uint64_t(setup.arena_fraction > 0 ? 3 * 8192 * layout.n_layer() * layout.n_expert : 0));
  options.io_threads = setup.io_threads;
  options.backend = setup.backend;
  options.io_depth = setup.io_depth;
  options.policy = setup.policy;
  STRATA_ASSIGN_OR_RETURN(
      auto store, StreamingExpertStore::create(layout, k, reader, options, make_host_slot_memory));
  STRATA_ASSIGN_OR_RETURN(
      const std::unique_ptr<Backend> backend,
      make_cpu_backend(model->config(), model->weight_formats(), setup.threads));
  StreamingRun run;
  // As sessions do: the pool's workers rest while the compute thread waits for a read.
  store->set_before_blocking([&] {
    ++run.blocking_waits;
    backend->idle();
  });
  Transformer transformer(model, *store, *backend);
  transformer.set_next_expert_predictor(setup.predictor);
  transformer.set_routing({.moce_bonus = setup.moce,
                           .moce_protect = setup.moce_protect,
                           .readahead = setup.readahead,
                           .readahead_layers = setup.readahead_layers,
                           .readahead_far = setup.readahead_far,
                           .readahead_bytes_per_token = uint64_t(setup.readahead_budget_units) *
                                                        layout.layers[0].unit_bytes() *
                                                        uint64_t(layout.n_layer())});
  STRATA_ASSIGN_OR_RETURN(const auto cache, backend->make_kv_cache(int64_t(tokens.size())));
  std::vector<float> part;
  for (size_t begin = 0; begin < tokens.size(); begin += size_t(setup.chunk)) {
    const size_t n = std::min(size_t(setup.chunk), tokens.size() - begin);
    STRATA_RETURN_IF_ERROR(
        transformer.forward({tokens.data() + begin, n}, int64_t(begin), *cache, true, part));
    run.logits.insert(run.logits.end(), part.begin(), part.end());
  }
  run.stats = store->stats();
  return run;
}

class StreamingDeterminism : public ::testing::TestWithParam<std::string> {};

TEST_P(StreamingDeterminism, ExactRoutingMatchesAllResidentBitForBit) {
  const std::string path = GetParam();
  const auto tokens = path == bundled_model() ? sequence("trained", "dev_code")
                                              : sequence("synthetic", "seq64_rand");
  testing::ModelRunner resident(path, 2);
  const auto reference = resident.logits(tokens, 16);
  const StreamingSetup setups[] = {
      {0.0, 2, 2, -1, 1},           // the smallest arena, decode-like batches, read-ahead of top-k
      {0.0, 1, 1, 0, 16},           // smallest arena, prompt-like batches (more units than slots)
      {0.3, 2, 3, -1, 1},           // a 30 % arena
      {0.3, 3, 1, 0, 7},            // ... odd batches, no read-ahead, more threads than cores
      {1.0, 2, 2, -1, 16},          // everything fits
      {0.0, 2, 2, -1, 1, 0, 2},     // the smallest arena, read-ahead two layers ahead
      {0.3, 2, 3, -1, 1, 0, 3},     // a 30 % arena, three layers ahead
      {0.3, 2, 2, -1, 1, 0, 1, 1},  // a 30 % arena, one read in flight
  };
  for (const StreamingSetup& setup : setups) {
    StreamingSetup s = setup;
    if (s.readahead < 0) s.readahead = int(resident.model().config().n_expert_used);
    const auto run = run_streaming(path, tokens, s);
    ASSERT_TRUE(run.ok()) << run.status().message();
    EXPECT_TRUE(bit_identical(reference, run.value().logits))
        << "arena " << s.arena_fraction << ", threads " << s.threads << ", io threads "
        << s.io_threads << ", read-ahead " << s.readahead << ", batches of " << s.chunk;
    const auto& stats = run.value().stats;
    EXPECT_GT(stats.misses, 0u);
    // Every claim that was not a hit had its whole unit to read.
    const auto& layers = resident.model().weights().experts.layers;
    const uint64_t not_hits = stats.misses + stats.readahead_hits + stats.late_readaheads;
    uint64_t smallest = UINT64_MAX, largest = 0;
    for (const auto& layer : layers) {
      smallest = std::min<uint64_t>(smallest, layer.unit_bytes());
      largest = std::max<uint64_t>(largest, layer.unit_bytes());
    }
    EXPECT_GE(stats.missed_bytes, not_hits * smallest);
    EXPECT_LE(stats.missed_bytes, not_hits * largest);
    if (s.arena_fraction < 1.0) {
      EXPECT_GT(stats.bytes_read, resident.model().weights().experts.total_bytes() / 10);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, StreamingDeterminism,
                         ::testing::Values(bundled_model(), synthetic("tiny-qwen2moe-q8_0"),
                                           synthetic("tiny-qwen3moe-k256-q4_k_m")));

// A prompt whose layer needs more units than a quarter arena holds, where units resident when
// the layer began come after ones that wait for a slot (this aborted on a CHECK once).
TEST(StreamingWaves, ResidentUnitsAfterWaitingOnesInAPrompt) {
  const std::string path = synthetic("tiny-qwen3moe-k256-q4_k_m");
  std::vector<int32_t> tokens = sequence("synthetic", "seq200_en");
  tokens.resize(48);
  testing::ModelRunner resident(path, 2);
  const auto reference = resident.logits(tokens, int64_t(tokens.size()));
  SessionOptions options;
  options.model_path = path;
  options.arena_share = 0.25;
  options.n_threads = 2;
  auto session = Session::open(options);
  ASSERT_TRUE(session.ok()) << session.status().message();
  std::vector<float> logits;
  ASSERT_TRUE(session.value()->feed_teacher_forced(tokens, logits).ok());
  EXPECT_TRUE(bit_identical(reference, logits));
}

// The "predicted" policy: the predictor's estimates change which units stay, never the logits,
// and the same run twice keeps the same units.
TEST(StreamingPredictedPolicy, ExactRoutingMatchesAllResidentBitForBit) {
  const std::string path = bundled_model();
  const auto tokens = sequence("trained", "dev_code");
  testing::ModelRunner resident(path, 2);
  const auto reference = resident.logits(tokens, 16);
  const ModelConfig& config = resident.model().config();
  // Random weights: whatever they estimate, the policy must stay exact.
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  const int64_t horizon = NextExpertPredictor::kDefaultHorizon;
  std::vector<float> weights(size_t(config.n_layer * horizon * config.n_expert * config.n_embd));
  std::vector<float> biases(size_t(config.n_layer * horizon * config.n_expert));
  for (float& w : weights) w = normal(rng);
  for (float& b : biases) b = 0.125f + normal(rng);
  StreamingSetup setup{0.3, 2, 2, 0, 1};
  setup.policy = "predicted";
  setup.predictor =
      std::make_shared<const NextExpertPredictor>(config.n_layer, config.n_embd, config.n_expert,
                                                  horizon, std::move(weights), std::move(biases));
  const auto first = run_streaming(path, tokens, setup);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_TRUE(bit_identical(reference, first.value().logits));
  const auto again = run_streaming(path, tokens, setup);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again.value().stats.hits, first.value().stats.hits);
  EXPECT_EQ(again.value().stats.misses, first.value().stats.misses);
  // Without the estimates the same policy keeps other units: they were heard.
  setup.predictor = nullptr;
  const auto without = run_streaming(path, tokens, setup);
  ASSERT_TRUE(without.ok()) << without.status().message();
  EXPECT_NE(without.value().stats.hits, first.value().stats.hits);
}

// The unit layout (`strata repack`): each unit one read, and the same logits, bit for bit, as
// the stacked file all resident; also with Q4_0 rows stored grouped (--grouped), which the
// arena then uses as read where the CPU has the grouped kernel and ungroups where it has not
// (ctest golden_avx2).
TEST(StreamingUnitLayout, MatchesTheStackedFileBitForBit) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("strata-unit-layout-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  for (const auto& [stacked, grouped] :
       {std::pair{bundled_model(), false}, std::pair{bundled_model(), true},
        std::pair{synthetic("tiny-qwen3moe-k256-q4_k_m"), false}}) {
    SCOPED_TRACE(stacked + (grouped ? " --grouped" : ""));
    const std::string units =
        (dir / ((grouped ? "grouped-" : "") + std::filesystem::path(stacked).filename().string()))
            .string();
    const auto repacked = repack_model_file(stacked, units, {.grouped_rows = grouped}, nullptr);
    ASSERT_TRUE(repacked.ok()) << repacked.status().message();
    const auto tokens = stacked == bundled_model() ? sequence("trained", "dev_code")
                                                   : sequence("synthetic", "seq64_rand");
    testing::ModelRunner resident(stacked, 2);
    const auto reference = resident.logits(tokens, 16);
    const int k = int(resident.model().config().n_expert_used);
    const StreamingSetup setups[] = {
        {0.0, 2, 2, k, 1},        // the smallest arena, decode-like batches
        {0.0, 1, 1, 0, 16},       // prompt-like batches, more units than slots
        {0.3, 2, 3, k, 1, 0, 2},  // a 30 % arena, two layers ahead
        {1.0, 2, 2, k, 16},       // everything fits
    };
    for (const StreamingSetup& setup : setups) {
      const auto run = run_streaming(units, tokens, setup);
      ASSERT_TRUE(run.ok()) << run.status().message();
      EXPECT_TRUE(bit_identical(reference, run.value().logits))
          << "arena " << setup.arena_fraction << ", batches of " << setup.chunk;
      EXPECT_GT(run.value().stats.misses, 0u);
    }
  }
  std::filesystem::remove_all(dir);
}

// A model split in parts (gguf-split's layout) runs as the one file it was split from: all
// resident, and streamed through both I/O backends, whose reads go to the parts' descriptors.
// `strata repack` of the parts writes the very file it writes from the one file.
TEST(StreamingSplitModel, MatchesTheOneFileBitForBit) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("strata-split-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto source = gguf::GgufFile::open(bundled_model());
  ASSERT_TRUE(source.ok()) << source.status().message();
  const auto parts =
      gguf::write_split_model(*source.value(), (dir / "tiny").string(),
                              {.n_parts = 2, .metadata_only_first_part = true}, nullptr);
  ASSERT_TRUE(parts.ok()) << parts.status().message();
  const std::string& first = parts.value()[0];

  const auto tokens = sequence("trained", "dev_code");
  testing::ModelRunner one_file(bundled_model(), 2);
  const auto reference = one_file.logits(tokens, 16);
  testing::ModelRunner split(first, 2);
  EXPECT_TRUE(bit_identical(reference, split.logits(tokens, 16)));
  const int k = int(one_file.model().config().n_expert_used);
  for (const IoBackend backend : {IoBackend::kPread, IoBackend::kAuto}) {
    StreamingSetup setup{0.3, 2, 2, k, 1};
    setup.backend = backend;
    const auto run = run_streaming(first, tokens, setup);
    ASSERT_TRUE(run.ok()) << run.status().message();
    EXPECT_TRUE(bit_identical(reference, run.value().logits)) << io_backend_name(backend);
    EXPECT_GT(run.value().stats.misses, 0u);
  }

  const std::string from_parts = (dir / "from-parts.gguf").string();
  const std::string from_file = (dir / "from-file.gguf").string();
  ASSERT_TRUE(repack_model_file(first, from_parts, {}, nullptr).ok());
  ASSERT_TRUE(repack_model_file(bundled_model(), from_file, {}, nullptr).ok());
  std::ifstream a(from_parts, std::ios::binary), b(from_file, std::ios::binary);
  const std::string bytes_a{std::istreambuf_iterator<char>(a), {}};
  const std::string bytes_b{std::istreambuf_iterator<char>(b), {}};
  EXPECT_TRUE(bytes_a == bytes_b) << "repacked files differ";
  std::filesystem::remove_all(dir);
}

TEST(StreamingCacheAwareRouting, RepeatableAcrossRunsAndIoThreads) {
  const auto tokens = sequence("trained", "dev_chat");
  const StreamingSetup base{0.25, 2, 1, 8, 1, 0.85f};
  const auto first = run_streaming(bundled_model(), tokens, base);
  ASSERT_TRUE(first.ok()) << first.status().message();
  for (int io_threads : {1, 4}) {
    for (int io_depth : {0, 1}) {
      StreamingSetup setup = base;
      setup.io_threads = io_threads;
      setup.io_depth = io_depth;
      const auto again = run_streaming(bundled_model(), tokens, setup);
      ASSERT_TRUE(again.ok());
      EXPECT_TRUE(bit_identical(first.value().logits, again.value().logits))
          << io_threads << " I/O threads, depth " << io_depth;
      EXPECT_EQ(first.value().stats.misses, again.value().stats.misses);
    }
  }
  // Read-ahead two layers ahead re-predicts and reorders reads; what routing sees and every
  // count that is not about timing stay the same whatever the I/O threads do.
  StreamingSetup deeper = base;
  deeper.readahead_layers = 2;
  const auto deep = run_streaming(bundled_model(), tokens, deeper);
  ASSERT_TRUE(deep.ok());
  for (int io_threads : {2, 4}) {
    StreamingSetup setup = deeper;
    setup.io_threads = io_threads;
    const auto again = run_streaming(bundled_model(), tokens, setup);
    ASSERT_TRUE(again.ok());
    EXPECT_TRUE(bit_identical(deep.value().logits, again.value().logits)) << io_threads;
    const ExpertCounters& a = deep.value().stats;
    const ExpertCounters& b = again.value().stats;
    EXPECT_EQ(a.hits, b.hits);
    EXPECT_EQ(a.misses, b.misses);
    EXPECT_EQ(a.readahead_hits + a.late_readaheads, b.readahead_hits + b.late_readaheads);
    EXPECT_EQ(a.readaheads_issued, b.readaheads_issued);
    EXPECT_EQ(a.readaheads_wasted, b.readaheads_wasted);
  }
  // The bonus does change routing (so the comparison above can fail), and hits go up.
  StreamingSetup exact = base;
  exact.moce = 0;
  const auto exact_run = run_streaming(bundled_model(), tokens, exact);
  ASSERT_TRUE(exact_run.ok());
  EXPECT_FALSE(bit_identical(first.value().logits, exact_run.value().logits));
  EXPECT_LT(first.value().stats.misses, exact_run.value().stats.misses);
  // Protecting every pick (or more: --moce-protect above k) leaves the bonus nothing to choose:
  // exact routing.
  for (int protect : {8, 100}) {
    StreamingSetup all_protected = base;
    all_protected.moce_protect = protect;
    const auto run = run_streaming(bundled_model(), tokens, all_protected);
    ASSERT_TRUE(run.ok()) << run.status().message();
    EXPECT_TRUE(bit_identical(run.value().logits, exact_run.value().logits)) << protect;
  }
}

// Limits on read-ahead, on the trained model's dev_chat at a 25 % arena, top-8 two layers
// ahead: they change which reads start, never what routing sees.
class StreamingReadaheadLimits : public ::testing::Test {
 protected:
  // A run's counters; its logits must equal the all-resident run's.
  ExpertCounters exact_run(const StreamingSetup& setup) {
    const auto run = run_streaming(bundled_model(), tokens_, setup);
    EXPECT_TRUE(run.ok()) << run.status().message();
    if (!run.ok()) return {};
    EXPECT_TRUE(bit_identical(reference_, run.value().logits));
    return run.value().stats;
  }
  uint64_t readaheads_issued(const StreamingSetup& setup) {
    return exact_run(setup).readaheads_issued;
  }

  const std::vector<int32_t> tokens_ = sequence("trained", "dev_chat");
  testing::ModelRunner resident_{bundled_model(), 2};
  const std::vector<float> reference_ = resident_.logits(tokens_, 1);
  const StreamingSetup unlimited_{0.25, 2, 2, 8, 1, 0, 2};
};

TEST_F(StreamingReadaheadLimits, ByteBudgetCapsReadsPerToken) {
  StreamingSetup capped = unlimited_;
  capped.readahead_budget_units = 3;
  const uint64_t free_reads = readaheads_issued(unlimited_);
  const uint64_t capped_reads = readaheads_issued(capped);
  // Every forward step (one token here) starts at most 3 units' worth per layer.
  const uint64_t n_layer = resident_.model().weights().experts.layers.size();
  EXPECT_LE(capped_reads, 3 * n_layer * tokens_.size());
  EXPECT_LT(capped_reads, free_reads);
  EXPECT_GT(capped_reads, 0u);
}

TEST_F(StreamingReadaheadLimits, FartherLayersReadOnlyTheirTopPredictions) {
  StreamingSetup top_two = unlimited_;
  top_two.readahead_far = 2;
  StreamingSetup next_only = unlimited_;
  next_only.readahead_layers = 1;
  const uint64_t all = readaheads_issued(unlimited_);
  const uint64_t two = readaheads_issued(top_two);
  const uint64_t next = readaheads_issued(next_only);
  EXPECT_LT(two, all);
  EXPECT_GT(two, next);  // the farther layer's top two still start reads of their own
}

// While the arena has never had to evict, an unused prediction stays: no unit is read twice.
TEST_F(StreamingReadaheadLimits, RoomyArenaKeepsUnusedPredictions) {
  StreamingSetup roomy = unlimited_;
  roomy.arena_fraction = 1.0;
  const ExpertCounters stats = exact_run(roomy);
  const ExpertLayout& layout = resident_.model().weights().experts;
  EXPECT_GT(stats.readaheads_issued, 0u);
  EXPECT_EQ(stats.readaheads_wasted, 0u);
  EXPECT_LE(stats.misses + stats.readaheads_issued,
            uint64_t(layout.n_layer()) * uint64_t(layout.n_expert));
}

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), {});
}

// Slow reads: the compute thread blocks on them, and each time it first lets the pool rest.
TEST(StreamingBlocking, RestsThePoolBeforeEveryWaitForARead) {
  const std::string path = bundled_model();
  auto reader = FaultInjectingReader::over_bytes(path, file_bytes(path), 4096);
  reader->add_rule([](uint64_t, size_t) { return true; },
                   ReadFault::delay_by(std::chrono::microseconds(300)));
  const auto tokens = sequence("trained", "dev_code");
  const auto slow = run_streaming(path, tokens, {0.25, 2, 2, 8, 1}, reader);
  ASSERT_TRUE(slow.ok()) << slow.status().message();
  EXPECT_GT(slow.value().stats.host_wait_ms, 0);
  EXPECT_GT(slow.value().blocking_waits, 0);
  testing::ModelRunner resident(path, 2);
  EXPECT_TRUE(bit_identical(resident.logits(tokens, 16), slow.value().logits));
}

TEST(StreamingFaults, ReadErrorIsReportedWhenTheExpertIsClaimed) {
  const std::string path = bundled_model();
  auto file = gguf::GgufFile::open(path).value();
  const auto* up = file->find_tensor("blk.3.ffn_up_exps.weight");
  ASSERT_NE(up, nullptr);
  for (const ReadFault& fault : {ReadFault::error(EIO), ReadFault::short_read(100)}) {
    auto reader = FaultInjectingReader::over_bytes(path, file_bytes(path), 4096);
    reader->add_rule(FaultInjectingReader::overlapping(up->offset, up->offset + up->n_bytes),
                     fault);
    const auto run =
        run_streaming(path, sequence("trained", "dev_code"), {0.0, 2, 2, 0, 1}, reader);
    ASSERT_FALSE(run.ok());
    const std::string& message = run.status().message();
    EXPECT_NE(message.find("layer 3 expert"), std::string::npos) << message;
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find("at offset"), std::string::npos) << message;
    EXPECT_NE(
        message.find(fault.kind == ReadFault::Kind::kError ? "Input/output error" : "short read"),
        std::string::npos)
        << message;
    EXPECT_EQ(message.find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace strata

namespace strata {
namespace {

// Warm start: usage saved by one session preloads the next; the preload is a function of the
// file, so cache-aware routing stays repeatable, and it turns first-use misses into hits.
TEST(StreamingWarmStart, PreloadIsRepeatableAndSavesMisses) {
  const std::string warm = (std::filesystem::temp_directory_path() /
                            ("strata-warm-" + std::to_string(getpid()) + ".json"))
                               .string();
  std::filesystem::remove(warm);
  const auto tokens = sequence("trained", "dev_json");
  auto run = [&](bool save) {
    SessionOptions options;
    options.model_path = bundled_model();
    options.arena_share = 0.5;
    options.moce_bonus = 0.5f;
    options.warm_path = warm;
    options.n_threads = 2;
    auto session = Session::open(options);
    EXPECT_TRUE(session.ok()) << session.status().message();
    std::vector<float> logits;
    EXPECT_TRUE(session.value()->feed_teacher_forced(tokens, logits).ok());
    const uint64_t misses = session.value()->stats().experts.misses;
    if (save) {
      EXPECT_TRUE(session.value()->engine().save_expert_usage().ok());
    }
    return std::pair{logits, misses};
  };
  const auto cold = run(true);
  ASSERT_TRUE(std::filesystem::exists(warm));
  const auto warm_first = run(false);
  const auto warm_second = run(false);
  EXPECT_TRUE(bit_identical(warm_first.first, warm_second.first));
  EXPECT_EQ(warm_first.second, warm_second.second);
  EXPECT_LT(warm_first.second, cold.second);
  std::filesystem::remove(warm);
}

}  // namespace
}  // namespace strata

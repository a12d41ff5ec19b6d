// An expert arena in a device's memory, tested on the CPU: the slots are host memory behind a
// fake device memory whose copies check the protocol a GPU needs (no copy into a slot whose unit
// was claimed and not yet released; a copy from the host tier lands only when its unit is
// claimed) and fail on request. Its two tiers: every expert held in
// host memory and copied from there (experts/host_tier_reader.h), or each expert read from the
// file into a staging buffer and copied from that (experts/staged_file_reader.h, the disk tier).
// With exact routing the logits equal the all-resident run's bit for bit whatever the tier, the
// arena's size and the copy threads; a failed copy or read is one clear error naming the layer
// and expert when that expert is claimed.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <set>

#include "backend/host_slot_memory.h"
#include "base/check.h"
#include "cpu/cpu_backend.h"
#include "experts/expert_arena.h"
#include "experts/fault_injecting_reader.h"
#include "experts/host_tier_reader.h"
#include "experts/staged_file_reader.h"
#include "experts/streaming_expert_store.h"
#include "golden_data.h"
#include "model/tensor_data.h"
#include "model/transformer.h"
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

// Host slots that stand for a device's: written only through write_from_host(), which records
// every copy into a slot still held by a claim, and fails copies from `failing` on request. A
// copy from a host tier (CopySource::kHeld) stands for one still running on the device: the
// slot holds garbage until the store claims its unit, when the bytes land.
class FakeDeviceSlotMemory final : public ExpertSlotMemory {
 public:
  FakeDeviceSlotMemory(std::unique_ptr<HostSlotMemory> slots, std::vector<SlotClassShape> classes)
      : slots_(std::move(slots)), classes_(std::move(classes)) {
    held_.resize(classes_.size());
    queued_.resize(classes_.size());
    for (size_t c = 0; c < classes_.size(); ++c) {
      held_[c].assign(size_t(classes_[c].n_slots), 0);
      queued_[c].resize(size_t(classes_[c].n_slots));
    }
  }
  uint8_t* read_target(int c, int slot) override { return slots_->read_target(c, slot); }
  const uint8_t* compute_address(int c, int slot) const override {
    return slots_->compute_address(c, slot);
  }
  uint64_t bytes() const override { return slots_->bytes(); }
  Status write_from_host(uint8_t* destination, const void* source, size_t bytes,
                         CopySource source_kind) override {
    ++copies_;
    const auto* from = static_cast<const uint8_t*>(source);
    if (from < failing_end_ && from + bytes > failing_begin_)
      return Status::error("cuda: copying an expert to the device: injected failure");
    std::lock_guard lock(mutex_);
    const auto [c, slot] = slot_of(destination);
    if (held_[c][slot]) ++copies_into_held_;
    // A unit's first slice lands within the first 256 bytes of its slot (its offset in the
    // file's alignment), the others a whole slice further.
    if (destination < slots_->read_target(int(c), int(slot)) + 256) ++unit_copies_;
    if (source_kind == CopySource::kReusedAfterReturn) {
      std::memcpy(destination, source, bytes);
    } else {
      std::memset(destination, 0xff, bytes);  // fp16 scales of NaN
      queued_[c][slot].push_back({destination, from, bytes});
    }
    return Status();
  }
  void released(int c, std::span<const int> slots) override {
    std::lock_guard lock(mutex_);
    for (const int slot : slots) {
      held_[size_t(c)][size_t(slot)] = 0;
      ++releases_;
    }
  }
  Status claimed(int c, int slot) override {
    std::lock_guard lock(mutex_);
    held_[size_t(c)][size_t(slot)] = 1;
    for (const QueuedCopy& copy : queued_[size_t(c)][size_t(slot)])
      std::memcpy(copy.destination, copy.source, copy.bytes);
    queued_[size_t(c)][size_t(slot)].clear();
    return Status();
  }

  void fail_copies_from(const uint8_t* begin, const uint8_t* end) {
    failing_begin_ = begin;
    failing_end_ = end;
  }
  int copies() const { return copies_; }
  // Copies of a unit's first slice (or of the unit as one range): one a unit copied.
  int unit_copies() const { return unit_copies_; }
  int copies_into_held() const { return copies_into_held_; }
  int releases() const { return releases_; }

 private:
  std::unique_ptr<HostSlotMemory> slots_;
  std::vector<SlotClassShape> classes_;
  struct QueuedCopy {
    uint8_t* destination;
    const uint8_t* source;
    size_t bytes;
  };
  // The class and slot `address` lies in.
  std::pair<size_t, size_t> slot_of(const uint8_t* address) const {
    for (size_t c = 0; c < classes_.size(); ++c) {
      const uint8_t* first = slots_->read_target(int(c), 0);
      const size_t span = classes_[c].slot_bytes * size_t(classes_[c].n_slots);
      if (address >= first && address < first + span)
        return {c, size_t(address - first) / classes_[c].slot_bytes};
    }
    STRATA_CHECK(false);  // copies go into slots only
    return {0, 0};
  }

  std::mutex mutex_;
  std::vector<std::vector<uint8_t>> held_;                    // [class][slot]
  std::vector<std::vector<std::vector<QueuedCopy>>> queued_;  // [class][slot]
  std::atomic<int> copies_{0}, unit_copies_{0}, copies_into_held_{0}, releases_{0};
  const uint8_t *failing_begin_ = nullptr, *failing_end_ = nullptr;
};

struct HostTierRun {
  std::vector<float> logits;
  ExpertCounters stats;
  int copies = 0, unit_copies = 0, copies_into_held = 0, releases = 0;
  uint64_t file_reads = 0;  // the disk tier's reads of the model file's experts
  HostExpertCache::Counters host_arena;
};

enum class Tier { kHost, kDisk };

// The model and the reader of its experts as load_session makes them for a GPU's arena: every
// tensor in host memory and the host tier over it, or the dense tensors only and the file read
// through staging buffers. `write_into` points the reader at the arena's slots.
struct TierSource {
  std::shared_ptr<const Model> model;
  std::shared_ptr<FileReader> reader;
  std::function<Status(ExpertSlotMemory&, int n_readers)> write_into;
  std::shared_ptr<const TensorData> data;      // kHost: where the copies come from
  std::shared_ptr<FaultInjectingReader> file;  // kDisk: the model file's reads
  uint64_t dense_reads = 0;                    // kDisk: those of the dense weights' load
};

// `host_arena_share`: the disk tier's host arena, as a share of the experts' bytes.
Result<TierSource> open_tier(const std::string& path, Tier tier, double host_arena_share = 0) {
  STRATA_ASSIGN_OR_RETURN(auto file, gguf::GgufFile::open(path));
  TierSource source;
  if (tier == Tier::kHost) {
    STRATA_ASSIGN_OR_RETURN(source.data, load_resident_tensor_data(*file, nullptr));
    STRATA_ASSIGN_OR_RETURN(source.model, Model::load(file, source.data));
    STRATA_ASSIGN_OR_RETURN(
        std::shared_ptr<HostTierReader> host,
        HostTierReader::create(source.model->weights().experts, path, file->file_size()));
    source.write_into = [host](ExpertSlotMemory& memory, int) {
      host->write_into(memory);
      return Status();
    };
    source.reader = host;
    return source;
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<FileReader> reader, open_file_reader(file->parts()));
  source.file = std::make_shared<FaultInjectingReader>(reader);
  STRATA_ASSIGN_OR_RETURN(
      source.data,
      LoadedTensorData::load(*file, *source.file, LoadedTensorData::Contents::kDense, nullptr));
  source.dense_reads = source.file->reads();
  STRATA_ASSIGN_OR_RETURN(source.model, Model::load(file, source.data));
  const ExpertLayout& layout = source.model->weights().experts;
  auto staged = std::make_shared<StagedFileReader>(
      source.file, layout,
      [](uint8_t* slice, const ExpertTensorLayout& t) {
        reorder_rows(slice, t.n_in, t.n_out, t.grouped_in_file, t.grouped_rows);
      },
      uint64_t(host_arena_share * double(layout.total_bytes())));
  source.write_into = [staged](ExpertSlotMemory& memory, int n_readers) {
    return staged->write_into(memory, n_readers);
  };
  source.reader = staged;
  return source;
}

// Decodes `tokens` in batches of `chunk` with the experts in an arena of `arena_share` of them,
// fed by `io_threads` copy threads from `tier`. `failing`: a tensor whose copies (host tier) or
// reads (disk tier) fail. `cpu_experts`: up to that many misses of a decode layer computed by a
// second CPU backend from the host tier instead of copied (--cpu-experts N).
Result<HostTierRun> run_tier(Tier tier, const std::string& path, const std::vector<int32_t>& tokens,
                             double arena_share, int io_threads, int64_t chunk,
                             const std::string& failing = "", double host_arena_share = 0,
                             int cpu_experts = 0) {
  STRATA_ASSIGN_OR_RETURN(TierSource source, open_tier(path, tier, host_arena_share));
  const Model& model = *source.model;
  const ExpertLayout& layout = model.weights().experts;
  const int k = int(model.config().n_expert_used);
  const size_t alignment = source.reader->alignment();
  StreamingStoreOptions options;
  options.arena_bytes =
      std::max(ExpertArena::minimum_bytes(layout, alignment, k),
               uint64_t(arena_share * double(ExpertArena::all_units_bytes(layout, alignment))));
  options.io_threads = io_threads;
  options.backend = IoBackend::kPread;
  options.reads_in_compute_order = true;
  options.misses_on_host.max_per_layer = cpu_experts;
  FakeDeviceSlotMemory* memory = nullptr;
  STRATA_ASSIGN_OR_RETURN(
      auto store,
      StreamingExpertStore::create(
          layout, k, source.reader, options,
          [&](std::span<const SlotClassShape> classes,
              size_t slot_alignment) -> Result<std::unique_ptr<ExpertSlotMemory>> {
            STRATA_ASSIGN_OR_RETURN(auto slots, HostSlotMemory::create(classes, slot_alignment));
            auto fake = std::make_unique<FakeDeviceSlotMemory>(
                std::move(slots), std::vector<SlotClassShape>(classes.begin(), classes.end()));
            memory = fake.get();
            STRATA_RETURN_IF_ERROR(source.write_into(*fake, io_threads));
            return std::unique_ptr<ExpertSlotMemory>(std::move(fake));
          }));
  if (!failing.empty()) {
    const gguf::TensorInfo* tensor = model.file().find_tensor(failing);
    STRATA_CHECK(tensor != nullptr);
    if (tier == Tier::kHost) {
      const uint8_t* begin = source.data->data(*tensor);
      memory->fail_copies_from(begin, begin + tensor->n_bytes);
    } else {
      source.file->add_rule(
          FaultInjectingReader::overlapping(tensor->offset, tensor->offset + tensor->n_bytes),
          ReadFault::error(EIO));
    }
  }
  STRATA_ASSIGN_OR_RETURN(const std::unique_ptr<Backend> backend,
                          make_cpu_backend(model.config(), model.weight_formats(), 2));
  Transformer transformer(source.model, *store, *backend);
  transformer.set_routing({.readahead = k, .readahead_layers = 1, .readahead_far = 2});
  if (cpu_experts > 0) {
    STRATA_ASSIGN_OR_RETURN(auto cpu, make_cpu_backend(model.config(), model.weight_formats(), 2));
    STRATA_ASSIGN_OR_RETURN(auto host, HostExperts::create(std::move(cpu)));
    transformer.set_host_experts(std::move(host));
  }
  STRATA_ASSIGN_OR_RETURN(const auto cache, backend->make_kv_cache(int64_t(tokens.size())));
  HostTierRun run;
  std::vector<float> part;
  for (size_t begin = 0; begin < tokens.size(); begin += size_t(chunk)) {
    const size_t n = std::min(size_t(chunk), tokens.size() - begin);
    STRATA_RETURN_IF_ERROR(
        transformer.forward({tokens.data() + begin, n}, int64_t(begin), *cache, true, part));
    run.logits.insert(run.logits.end(), part.begin(), part.end());
  }
  run.stats = store->stats();
  if (tier == Tier::kDisk) {
    run.file_reads = source.file->reads() - source.dense_reads;
    run.host_arena = static_cast<const StagedFileReader&>(*source.reader).host_arena_counters();
  }
  run.copies = memory->copies();
  run.unit_copies = memory->unit_copies();
  run.copies_into_held = memory->copies_into_held();
  run.releases = memory->releases();
  return run;
}

class DeviceTierDeterminism : public ::testing::TestWithParam<std::string> {};

TEST_P(DeviceTierDeterminism, ExactRoutingMatchesAllResidentBitForBit) {
  const std::string path = GetParam();
  const auto tokens = path == bundled_model() ? sequence("trained", "dev_code")
                                              : sequence("synthetic", "seq64_rand");
  ASSERT_FALSE(tokens.empty());
  testing::ModelRunner resident(path, 2);
  const auto reference = resident.logits(tokens, 16);
  struct Setup {
    Tier tier;
    double share;
    int io_threads;
    int64_t chunk;
    double host_arena_share = 0;
  };
  for (const Setup& s : {Setup{Tier::kHost, 0.0, 1, 1}, Setup{Tier::kHost, 0.25, 2, 1},
                         Setup{Tier::kHost, 0.5, 4, 16}, Setup{Tier::kHost, 1.0, 2, 16},
                         Setup{Tier::kHost, 0.25, 3, 7}, Setup{Tier::kDisk, 0.0, 1, 1},
                         Setup{Tier::kDisk, 0.25, 3, 7}, Setup{Tier::kDisk, 1.0, 2, 16},
                         Setup{Tier::kDisk, 0.1, 2, 1, 0.5}, Setup{Tier::kDisk, 0.25, 3, 7, 1.5}}) {
    const auto run =
        run_tier(s.tier, path, tokens, s.share, s.io_threads, s.chunk, "", s.host_arena_share);
    ASSERT_TRUE(run.ok()) << run.status().message();
    const HostTierRun& r = run.value();
    EXPECT_EQ(r.logits.size(), reference.size());
    EXPECT_EQ(std::memcmp(r.logits.data(), reference.data(), reference.size() * sizeof(float)), 0)
        << (s.tier == Tier::kHost ? "host" : "disk") << " tier, arena " << s.share
        << ", copy threads " << s.io_threads << ", batches of " << s.chunk;
    EXPECT_GT(r.copies, 0);
    EXPECT_GT(r.releases, 0);
    EXPECT_EQ(r.copies_into_held, 0) << "a copy overwrote a unit still claimed";
    // Every byte the store read came through a copy into the slots.
    EXPECT_GT(r.stats.bytes_read, 0u);
    EXPECT_GT(r.stats.misses, 0u);
    if (s.host_arena_share > 0) {
      // Reads the host arena held were copies from it, not reads of the file.
      EXPECT_GT(r.host_arena.hits, 0u);
      EXPECT_LT(r.file_reads, uint64_t(r.copies));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, DeviceTierDeterminism,
                         ::testing::Values(bundled_model(), synthetic("tiny-qwen2moe-q8_0"),
                                           synthetic("tiny-qwen3moe-k256-q4_k_m")));

// Misses of decode layers computed by a second CPU backend from the host tier (--cpu-experts N)
// while the first computes the rest: their rows reach the first backend's mixture where the
// device's own products would have been, so the logits are the all-resident run's bits, and those
// units are never copied nor made resident.
class DeviceTierCpuExperts : public ::testing::TestWithParam<std::string> {};

TEST_P(DeviceTierCpuExperts, MissesComputedByTheCpuMatchAllResidentBitForBit) {
  const std::string path = GetParam();
  const auto tokens = path == bundled_model() ? sequence("trained", "dev_code")
                                              : sequence("synthetic", "seq64_rand");
  ASSERT_FALSE(tokens.empty());
  testing::ModelRunner resident(path, 2);
  const auto reference = resident.logits(tokens, 16);
  struct Setup {
    double share;
    int io_threads;
    int64_t chunk;
    int cpu_experts;
  };
  for (const Setup& s :
       {Setup{0.0, 1, 1, 1}, Setup{0.25, 2, 1, 3}, Setup{0.25, 2, 7, 8}, Setup{0.5, 3, 1, 64}}) {
    const auto copied = run_tier(Tier::kHost, path, tokens, s.share, s.io_threads, s.chunk);
    const auto run =
        run_tier(Tier::kHost, path, tokens, s.share, s.io_threads, s.chunk, "", 0, s.cpu_experts);
    ASSERT_TRUE(copied.ok()) << copied.status().message();
    ASSERT_TRUE(run.ok()) << run.status().message();
    const HostTierRun& r = run.value();
    ASSERT_EQ(r.logits.size(), reference.size());
    EXPECT_EQ(std::memcmp(r.logits.data(), reference.data(), reference.size() * sizeof(float)), 0)
        << "arena " << s.share << ", batches of " << s.chunk << ", up to " << s.cpu_experts
        << " a layer on the CPU";
    EXPECT_GT(r.stats.misses_on_host, 0u);
    EXPECT_LE(r.stats.misses_on_host, r.stats.misses);
    EXPECT_EQ(copied.value().stats.misses_on_host, 0u);
    // What the CPU computed was not copied: each other miss is one copy, each read-ahead at
    // most one (a copy of a computed unit would add one beyond them). Which units miss and
    // which are read ahead depends on the copies' timing, so the bound is within each run.
    for (const HostTierRun* each : {&r, &copied.value()})
      EXPECT_LE(uint64_t(each->unit_copies),
                each->stats.misses - each->stats.misses_on_host + each->stats.readaheads_issued)
          << "arena " << s.share << ", batches of " << s.chunk;
    EXPECT_EQ(r.copies_into_held, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, DeviceTierCpuExperts,
                         ::testing::Values(bundled_model(), synthetic("tiny-qwen2moe-q8_0"),
                                           synthetic("tiny-qwen3moe-k256-q4_k_m")));

// A failed copy (host tier) or read (disk tier) is one line naming the file, the layer and the
// expert, when that expert is claimed.
TEST(DeviceTierFaults, FailureIsReportedWhenTheExpertIsClaimed) {
  struct Case {
    Tier tier;
    std::string tensor, expert, cause;
  };
  const std::string path = bundled_model();
  for (const Case& c :
       {Case{Tier::kHost, "blk.3.ffn_up_exps.weight", "layer 3 expert",
             "copying an expert to the device: injected failure"},
        Case{Tier::kDisk, "blk.5.ffn_down_exps.weight", "layer 5 expert", "Input/output error"}}) {
    const auto run = run_tier(c.tier, path, sequence("trained", "dev_code"), 0.0, 2, 1, c.tensor);
    ASSERT_FALSE(run.ok()) << c.tensor;
    const std::string& message = run.status().message();
    EXPECT_NE(message.find(c.expert), std::string::npos) << message;
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find(c.cause), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos);
  }
}

TEST(HostTierReader, RefusesReadsThatAreNotAnExpertsBytes) {
  auto file = gguf::GgufFile::open(bundled_model()).value();
  auto data = load_resident_tensor_data(*file, nullptr).value();
  auto model = Model::load(file, data).value();
  const ExpertLayout& layout = model->weights().experts;
  auto tier = HostTierReader::create(layout, bundled_model(), file->file_size()).value();
  auto slots = HostSlotMemory::create(std::vector<SlotClassShape>{{1 << 20, 1}}, 64).value();
  tier->write_into(*slots);
  const ExpertTensorLayout& up = layout.layers[2].up;
  uint8_t* into = slots->read_target(0, 0);
  const uint64_t a = tier->alignment(), begin = up.file_offsets[5] / a * a;
  const uint64_t end = (up.file_offsets[5] + up.expert_bytes + a - 1) / a * a;
  ASSERT_TRUE(tier->read(into, begin, end - begin).ok());
  EXPECT_EQ(std::memcmp(into + (up.file_offsets[5] - begin), up.resident[5], up.expert_bytes), 0);
  const Status shorter = tier->read(into, begin, end - begin - a);
  ASSERT_FALSE(shorter.ok());
  EXPECT_NE(shorter.message().find("not an expert's bytes"), std::string::npos)
      << shorter.message();
  EXPECT_FALSE(tier->read(into, begin + a, end - begin).ok());
}

// The disk tier's slot holds the slice as the resident load holds it (rows in this CPU's order),
// at the slice's offset from the read's start; unaligned reads and reads larger than its
// staging buffers are refused.
TEST(StagedFileReader, SlicesLandAsTheResidentLoadHoldsThem) {
  auto file = gguf::GgufFile::open(bundled_model()).value();
  auto resident = Model::load(file, load_resident_tensor_data(*file, nullptr).value()).value();
  auto source = open_tier(bundled_model(), Tier::kDisk).value();
  auto* staged = static_cast<StagedFileReader*>(source.reader.get());
  auto slots = HostSlotMemory::create(std::vector<SlotClassShape>{{1 << 20, 1}}, 256).value();
  ASSERT_TRUE(staged->write_into(*slots, 1).ok());
  uint8_t* into = slots->read_target(0, 0);
  for (const int layer : {0, 7}) {
    const ExpertTensorLayout& down = resident->weights().experts.layers[size_t(layer)].down;
    const uint64_t a = staged->alignment(), begin = down.file_offsets[9] / a * a;
    const uint64_t end = (down.file_offsets[9] + down.expert_bytes + a - 1) / a * a;
    ASSERT_TRUE(staged->read(into, begin, end - begin).ok());
    EXPECT_EQ(
        std::memcmp(into + (down.file_offsets[9] - begin), down.resident[9], down.expert_bytes), 0)
        << "layer " << layer;
  }
  EXPECT_FALSE(staged->read(into, 100, 256).ok());
  const Status larger = staged->read(into, 0, staged->staging_bytes() + 256);
  ASSERT_FALSE(larger.ok());
  EXPECT_NE(larger.message().find("staging buffer"), std::string::npos) << larger.message();
}

}  // namespace
}  // namespace strata

#include <strata/benchmark.h>
#include <strata/session.h>

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>

#include "base/interrupt.h"
#include "base/svg_chart.h"
#include "base/whole_file.h"
#include "cpu/memory_bandwidth.h"
#include "experts/disk_bandwidth.h"
#include "gguf/gguf_file.h"
#include "runtime/byte_size.h"
#include "runtime/provenance.h"
#include "runtime/summary_statistics.h"

namespace strata {
namespace {

// Default prompt text: plain English prose (from the opening of Jerome K. Jerome's "Three Men
// in a Boat", public domain), repeated to the requested length.
constexpr const char* kDefaultPrompt =
    "There were four of us - George, and William Samuel Harris, and myself, and Montmorency. We "
    "were sitting in my room, smoking, and talking about how bad we were - bad from a medical "
    "point of view I mean, of course. We were all feeling seedy, and we were getting quite "
    "nervous about it. Harris said he felt such extraordinary fits of giddiness come over him at "
    "times, that he hardly knew what he was doing; and then George said that he had fits of "
    "giddiness too, and hardly knew what he was doing. With me, it was my liver that was out of "
    "order. I knew it was my liver that was out of order, because I had just been reading a "
    "patent liver-pill circular, in which were detailed the various symptoms by which a man "
    "could tell when his liver was out of order. ";

// Memory bandwidth is probed before every run over 1 GiB, 3 passes: ~0.15 s, and it tracks a
// shared host's drift (measured here between 18 and 25 GB/s within an hour). The buffer is
// over three times this host's 300 MiB L3: over 512 MiB on huge pages, part of each pass came
// from the cache and the probe read 8 % faster than over 2 GiB.
constexpr uint64_t kProbeBytes = 1024ull << 20;
constexpr int kProbePasses = 3;
// The disk probe reads 1 MiB ranges for this long, before and after every streaming run: this
// VM's disk moves between 0.9 and 1.9 GB/s from one 2-second probe to the next, so the bound
// uses the mean of the two around the run.
constexpr double kDiskProbeSeconds = 2.0;

struct Run {
  double prefill_tokens_per_s = 0, decode_tokens_per_s = 0, decode_ms_per_token = 0;
  double memory_bandwidth = 0;  // bytes/s, probed just before the run
  double disk_bandwidth = 0;    // bytes/s, O_DIRECT 1 MiB reads: mean of the probes around the
                                // run (streaming only)
  double disk_before = 0, disk_after = 0;
  // bytes/s of the store's own reads (Session::expert_read_pattern), mean of the probes around
  // the run: what the disk gives for the reads decode issues, beside what it gives the probe.
  double unit_disk_bandwidth = 0;
  double page_cache_share = 0;  // of the model file resident in the page cache at the start
  ExpertCounters decode;        // expert store counters over the decoded tokens
  int64_t decode_tokens = 0;
};

// A variant's memory setting: "none" (every expert resident), a budget ("4G"), or "N%", an
// arena holding N % of the model's expert units.
struct MemorySetting {
  uint64_t budget = 0;
  double arena_share = 0;
  bool streaming() const { return budget > 0 || arena_share > 0; }
};

Result<MemorySetting> parse_memory_setting(const std::string& text) {
  if (text == "none") return MemorySetting{};
  if (text.empty() || text.back() != '%') {
    STRATA_ASSIGN_OR_RETURN(const MemoryBudget budget, parse_memory_budget(text));
    return MemorySetting{budget.bytes, 0};
  }
  const double share = std::atof(text.c_str()) / 100.0;
  if (!(share > 0 && share <= 1)) return Status::errorf("bench: bad arena share '{}'", text);
  return MemorySetting{0, share};
}

struct Variant {
  std::string path, budget_text;
  MemorySetting memory;
  std::unique_ptr<Session> session;
  std::vector<std::vector<Run>> runs;  // per prompt length
  std::vector<FilePart> parts;         // the model's files
  std::shared_ptr<FileReader> reader;  // for the disk probe, when streaming
};

// The reader the disk probe reads from: the model's largest file (a split model's first part
// may hold little more than the metadata).
Result<std::shared_ptr<FileReader>> open_probe_reader(const std::vector<FilePart>& parts) {
  const FilePart& largest =
      *std::max_element(parts.begin(), parts.end(),
                        [](const FilePart& a, const FilePart& b) { return a.size < b.size; });
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<FileReader> reader, open_file_reader(largest.path));
  return reader;
}

// O_DIRECT read bandwidth of the model file with the session's readers: the bound's probe,
// 1 MiB reads at random offsets, two per reader thread in flight. The disk drifts like the
// memory (1.1-1.8 GB/s within minutes here), so it is probed right around every run.
Result<double> probe_disk(const Variant& v, const BenchmarkOptions& options) {
  STRATA_ASSIGN_OR_RETURN(const IoBackend backend, parse_io_backend(options.session.io_backend));
  return measure_read_bandwidth(v.reader, options.session.io_threads, backend, 1 << 20,
                                2 * options.session.io_threads, kDiskProbeSeconds, 1);
}

// The same with the store's own reads: a unit's size, as many in flight as the store keeps.
// Some virtual disks serve these slower than the probe's (README, "Streaming speed"); the
// share of this rate tells the engine's waiting apart from the disk's pattern.
Result<double> probe_unit_reads(const Variant& v, const BenchmarkOptions& options) {
  STRATA_ASSIGN_OR_RETURN(const IoBackend backend, parse_io_backend(options.session.io_backend));
  const ExpertReadPattern& pattern = *v.session->expert_read_pattern();
  return measure_read_bandwidth(v.reader, options.session.io_threads, backend,
                                size_t(pattern.read_bytes), pattern.in_flight, kDiskProbeSeconds,
                                2);
}

Result<std::vector<int32_t>> prompt_tokens(const Session& session, const std::string& text,
                                           int64_t length) {
  const std::vector<int32_t> base = session.tokenize(text);
  if (base.empty()) return Status::error("bench: the prompt text has no tokens");
  std::vector<int32_t> tokens;
  while (int64_t(tokens.size()) < length) tokens.insert(tokens.end(), base.begin(), base.end());
  tokens.resize(size_t(length));
  return tokens;
}

// Share of the model's pages in the page cache (mincore over fresh mappings of its files).
double page_cache_share(const std::vector<FilePart>& parts) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  size_t cached = 0, total = 0;
  for (const FilePart& part : parts) {
    if (part.size == 0) continue;
    const int fd = ::open(part.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    void* map = ::mmap(nullptr, part.size, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED) return -1;
    std::vector<unsigned char> resident((part.size + page - 1) / page);
    const bool counted = mincore(map, part.size, resident.data()) == 0;
    munmap(map, part.size);
    if (!counted) return -1;
    for (unsigned char r : resident) cached += r & 1;
    total += resident.size();
  }
  return total > 0 ? double(cached) / double(total) : -1;
}

Status drop_page_cache() {
  ::sync();
  std::ofstream drop("/proc/sys/vm/drop_caches");
  drop << "3\n";
  if (!drop)
    return Status::error("bench --cold: cannot write /proc/sys/vm/drop_caches (run as root)");
  return Status();
}

Result<std::unique_ptr<Session>> open_variant(const BenchmarkOptions& options, const Variant& v,
                                              int64_t n_ctx) {
  SessionOptions session = options.session;
  session.model_path = v.path;
  session.memory_budget = v.memory.budget;
  session.arena_share = v.memory.arena_share;
  session.n_ctx = n_ctx;
  session.quiet = true;
  return Session::open(session);
}

Result<Run> run_once(Session& session, const std::vector<int32_t>& prompt, int64_t generated) {
  session.reset();
  session.reset_stats();
  // Sampled, not greedy: a small model's greedy continuation often loops over a few tokens,
  // whose handful of experts would make any cache look perfect. Seeded, so runs repeat.
  GenerateOptions options;
  options.max_tokens = int(generated);
  options.temperature = 0.8f;
  options.seed = 1;
  options.stop_at_end_of_generation = false;
  // Ctrl-C or SIGTERM ends the bench between tokens: a cut run is not a measurement.
  STRATA_ASSIGN_OR_RETURN(
      const auto tokens,
      session.generate(prompt, options, [](int32_t, std::string_view) { return !interrupted(); }));
  if (interrupted()) return interrupted_error();
  const SessionStats& stats = session.stats();
  Run run;
  run.prefill_tokens_per_s = stats.prefill_tokens_per_s();
  run.decode_tokens_per_s = stats.decode_tokens_per_s();
  run.decode_ms_per_token =
      stats.decode_tokens ? stats.decode_ms / double(stats.decode_tokens) : 0.0;
  run.decode_tokens = stats.decode_tokens;
  run.decode = stats.decode_experts();
  return run;
}

// Share of the decode's wall time with at least one expert read running.
double disk_busy_share(const Run& r) {
  const double decode_ms = r.decode_ms_per_token * double(r.decode_tokens);
  return decode_ms > 0 ? r.decode.disk_active_ms / decode_ms : 0.0;
}

// What the disk delivered while it was busy with the run's reads, bytes/s.
double disk_delivered(const Run& r) {
  return r.decode.disk_active_ms > 0
             ? double(r.decode.bytes_read) / (r.decode.disk_active_ms / 1000)
             : 0.0;
}

nlohmann::json summary_json(const Summary& s) {
  return {{"median", s.median}, {"min", s.min}, {"max", s.max}, {"n", s.n}};
}

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return text;
}

template <class F>
Summary summarize_runs(const std::vector<Run>& runs, F value) {
  std::vector<double> values;
  for (const Run& r : runs) values.push_back(value(r));
  return summarize(values);
}

// "66 % (62-68)": a share's median and range, as the table shows them.
std::string share_cell(const Summary& share) {
  return fmt::format("{:.0f} % ({:.0f}-{:.0f})", 100 * share.median, 100 * share.min,
                     100 * share.max);
}

// A streaming variant's decode as a share of the same model's all-resident variant in this
// bench, repetition by repetition (the variants run interleaved, so each pair ran minutes
// apart at most): what streaming costs against not streaming, where the disk's bound says
// little because compute, not the disk, limits the resident model. Empty without such a
// variant.
std::optional<Summary> decode_share_of_resident(const std::vector<Variant>& variants,
                                                const Variant& v, size_t prompt) {
  if (!v.memory.streaming()) return std::nullopt;
  for (const Variant& resident : variants) {
    if (resident.memory.streaming() || resident.path != v.path) continue;
    std::vector<double> shares;
    const std::vector<Run>& mine = v.runs[prompt];
    const std::vector<Run>& theirs = resident.runs[prompt];
    for (size_t i = 0; i < mine.size() && i < theirs.size(); ++i)
      shares.push_back(mine[i].decode_tokens_per_s / theirs[i].decode_tokens_per_s);
    if (!shares.empty()) return summarize(shares);
  }
  return std::nullopt;
}

}  // namespace

Result<BenchmarkReport> run_benchmark(const BenchmarkOptions& options,
                                      const std::function<void(const std::string&)>& progress) {
  if (options.model_paths.empty()) return Status::error("bench: give at least one model");
  // A median of fewer than three runs is one run, or the mean of two.
  if (options.repetitions < 3)
    return Status::errorf("bench: --repetitions must be at least 3 (got {})", options.repetitions);
  std::string text = kDefaultPrompt;
  if (!options.prompt_file.empty()) {
    STRATA_ASSIGN_OR_RETURN(text, read_whole_file(options.prompt_file));
  }
  const int n_threads =
      options.session.n_threads > 0 ? options.session.n_threads : ThreadPool::default_threads();
  const int64_t longest =
      *std::max_element(options.prompt_lengths.begin(), options.prompt_lengths.end());
  const int64_t n_ctx = longest + options.generated_tokens + 1;

  nlohmann::json record = {{"tool", "strata bench"},
                           {"started", now_utc()},
                           {"command_line", options.command_line},
                           {"binary", binary_description()},
                           {"machine", machine_description()},
                           {"environment", environment_description()},
                           {"threads", n_threads},
                           {"repetitions", options.repetitions},
                           {"generated_tokens", options.generated_tokens},
                           {"cold", options.cold}};
  STRATA_ASSIGN_OR_RETURN(const std::unique_ptr<ThreadPool> probe_pool,
                          ThreadPool::start(n_threads));
  if (!options.prompt_file.empty()) {
    STRATA_ASSIGN_OR_RETURN(const std::string hash, sha256_file(options.prompt_file));
    record["prompt_file"] = {{"path", options.prompt_file}, {"sha256", hash}};
  }

  std::vector<Variant> variants;
  for (const std::string& path : options.model_paths)
    for (const std::string& budget_text : options.memory_budgets) {
      Variant v;
      v.path = path;
      v.budget_text = budget_text;
      STRATA_ASSIGN_OR_RETURN(v.memory, parse_memory_setting(budget_text));
      v.runs.resize(options.prompt_lengths.size());
      STRATA_ASSIGN_OR_RETURN(const auto file, gguf::GgufFile::open(path));
      v.parts = file->parts();
      if (v.memory.streaming()) {
        STRATA_ASSIGN_OR_RETURN(v.reader, open_probe_reader(v.parts));
      }
      if (!options.cold) {
        STRATA_ASSIGN_OR_RETURN(v.session, open_variant(options, v, n_ctx));
        STRATA_ASSIGN_OR_RETURN(const auto prompt,
                                prompt_tokens(*v.session, text, options.prompt_lengths[0]));
        STRATA_RETURN_IF_ERROR(run_once(*v.session, prompt, options.generated_tokens).status());
      }
      variants.push_back(std::move(v));
    }

  for (int rep = 0; rep < options.repetitions; ++rep)
    for (size_t p = 0; p < options.prompt_lengths.size(); ++p)
      for (Variant& v : variants) {
        if (options.cold) {
          v.session.reset();
          STRATA_RETURN_IF_ERROR(drop_page_cache());
        }
        const double cached = page_cache_share(v.parts);
        if (options.cold) {
          STRATA_ASSIGN_OR_RETURN(v.session, open_variant(options, v, n_ctx));
        }
        STRATA_ASSIGN_OR_RETURN(const auto prompt,
                                prompt_tokens(*v.session, text, options.prompt_lengths[p]));
        // The probe's buffer lives only while it measures: a session's plan (a byte budget
        // bounds the whole process) and its run must not carry the probe's 1 GiB.
        const double bandwidth = BandwidthProbe(*probe_pool, kProbeBytes).measure(kProbePasses);
        double disk_before = 0, disk_after = 0, unit_before = 0, unit_after = 0;
        if (v.reader) {
          STRATA_ASSIGN_OR_RETURN(disk_before, probe_disk(v, options));
          STRATA_ASSIGN_OR_RETURN(unit_before, probe_unit_reads(v, options));
        }
        STRATA_ASSIGN_OR_RETURN(Run run, run_once(*v.session, prompt, options.generated_tokens));
        if (v.reader) {
          STRATA_ASSIGN_OR_RETURN(unit_after, probe_unit_reads(v, options));
          STRATA_ASSIGN_OR_RETURN(disk_after, probe_disk(v, options));
        }
        run.unit_disk_bandwidth = (unit_before + unit_after) / 2;
        const double disk = (disk_before + disk_after) / 2;
        run.memory_bandwidth = bandwidth;
        run.disk_bandwidth = disk;
        run.disk_before = disk_before;
        run.disk_after = disk_after;
        run.page_cache_share = cached;
        v.runs[p].push_back(run);
        progress(fmt::format(
            "run {}/{} {} mem {} prompt {}: prefill {:.1f} tok/s, decode {:.2f} tok/s, "
            "hits {:.1f} %, {:.1f} MB read/token, disk busy {:.0f} % (disk {:.0f} MB/s, its unit "
            "reads {:.0f} MB/s, memory {:.1f} GB/s)",
            rep + 1, options.repetitions, v.path, v.budget_text, options.prompt_lengths[p],
            run.prefill_tokens_per_s, run.decode_tokens_per_s, 100 * run.decode.hit_rate(),
            run.decode_tokens ? double(run.decode.bytes_read) / 1e6 / double(run.decode_tokens)
                              : 0.0,
            100 * disk_busy_share(run), disk / 1e6, run.unit_disk_bandwidth / 1e6,
            bandwidth / 1e9));
      }

  std::string markdown =
      "| model | mem | prompt | prefill tok/s | decode tok/s | hits | MB missed / token | "
      "MB read / token | wait ms / token | disk busy | bound tok/s | of bound | of unit-read "
      "bound | of resident |\n"
      "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  nlohmann::json results = nlohmann::json::array();
  const bool one_model = options.model_paths.size() == 1;
  BarChart chart{
      .title =
          (one_model ? std::filesystem::path(options.model_paths[0]).stem().string() + ": decode"
                     : std::string("Decode")) +
          " against its bound (" + std::to_string(options.repetitions) + " runs: median, min-max)",
      .x_label = one_model ? "memory / prompt tokens" : "model, memory / prompt tokens",
      .y_label = "share",
      .y_suffix = " %",
      .categories = {},
      .y_min = 0,
      .y_max = std::nullopt,
      .series = {{"decode ÷ bound", {}, {}, {}}, {"disk busy", {}, {}, {}}}};
  for (Variant& v : variants) {
    STRATA_ASSIGN_OR_RETURN(const std::string hash, sha256_model(v.path));
    if (!v.session) {
      STRATA_ASSIGN_OR_RETURN(v.session, open_variant(options, v, n_ctx));
    }
    const double weight_bytes = double(v.session->decode_weight_bytes_per_token());
    const double kv_bytes_per_position = double(v.session->kv_cache_bytes_per_position());
    for (size_t p = 0; p < options.prompt_lengths.size(); ++p) {
      const auto& runs = v.runs[p];
      auto per_token = [](const Run& r, double value) {
        return r.decode_tokens ? value / double(r.decode_tokens) : 0.0;
      };
      const Summary prefill =
          summarize_runs(runs, [](const Run& r) { return r.prefill_tokens_per_s; });
      const Summary decode =
          summarize_runs(runs, [](const Run& r) { return r.decode_tokens_per_s; });
      const Summary hits = summarize_runs(runs, [](const Run& r) { return r.decode.hit_rate(); });
      const Summary read = summarize_runs(
          runs, [&](const Run& r) { return per_token(r, double(r.decode.bytes_read)); });
      const Summary missed = summarize_runs(
          runs, [&](const Run& r) { return per_token(r, double(r.decode.missed_bytes)); });
      const Summary wait =
          summarize_runs(runs, [&](const Run& r) { return per_token(r, r.decode.host_wait_ms); });
      const Summary cached = summarize_runs(runs, [](const Run& r) { return r.page_cache_share; });
      const Summary disk_busy = summarize_runs(runs, disk_busy_share);
      // The bound, each run against its own probes: decode reads its weight bytes and the KV
      // cache per token from memory, and a streaming one also its missed experts from disk; at best
      // the two overlap, so the slower of them bounds it. Missed bytes, not bytes read: a wasted
      // read-ahead is our cost, and must not lower the bound we are measured against.
      // Decode step i attends over prompt + i + 1 positions, so the mean over a run's steps
      // is prompt + (steps + 1) / 2.
      auto kv_bytes = [&](const Run& r) {
        return kv_bytes_per_position *
               (double(options.prompt_lengths[p]) + double(r.decode_tokens + 1) / 2);
      };
      auto memory_bound = [&](const Run& r) {
        return r.memory_bandwidth / (weight_bytes + kv_bytes(r));
      };
      // Missed bytes at `rate` bytes/s.
      auto disk_bound_at = [&](const Run& r, double rate) {
        const double missed_bytes = per_token(r, double(r.decode.missed_bytes));
        return missed_bytes > 0 ? rate / missed_bytes : std::numeric_limits<double>::infinity();
      };
      auto disk_bound = [&](const Run& r) { return disk_bound_at(r, r.disk_bandwidth); };
      auto bound = [&](const Run& r) { return std::min(memory_bound(r), disk_bound(r)); };
      // The same with the disk's rate for the store's own reads: a diagnostic beside the bound.
      auto unit_bound = [&](const Run& r) {
        return std::min(memory_bound(r), disk_bound_at(r, r.unit_disk_bandwidth));
      };
      const bool disk_bounded =
          summarize_runs(runs, disk_bound).median < summarize_runs(runs, memory_bound).median;
      const Summary bound_summary = summarize_runs(runs, bound);
      const Summary fraction =
          summarize_runs(runs, [&](const Run& r) { return r.decode_tokens_per_s / bound(r); });
      const Summary unit_fraction =
          summarize_runs(runs, [&](const Run& r) { return r.decode_tokens_per_s / unit_bound(r); });
      const std::optional<ExpertReadPattern>& pattern = v.session->expert_read_pattern();
      const std::optional<Summary> of_resident = decode_share_of_resident(variants, v, p);
      results.push_back(
          {{"model", {{"path", v.path}, {"sha256", hash}}},
           {"memory_budget", v.budget_text},
           {"memory_budget_bytes", v.memory.budget},
           {"arena_share", v.memory.arena_share},
           {"prompt_tokens", options.prompt_lengths[p]},
           {"prefill_tokens_per_s", summary_json(prefill)},
           {"decode_tokens_per_s", summary_json(decode)},
           {"decode_ms_per_token",
            summary_json(summarize_runs(runs, [](const Run& r) { return r.decode_ms_per_token; }))},
           {"decode_compute_ms_per_token",
            summary_json(summarize_runs(runs,
                                        [&](const Run& r) {
                                          return r.decode_ms_per_token -
                                                 per_token(r, r.decode.host_wait_ms);
                                        }))},
           {"decode_hit_rate", summary_json(hits)},
           {"decode_bytes_read_per_token", summary_json(read)},
           {"decode_missed_bytes_per_token", summary_json(missed)},
           {"decode_host_wait_ms_per_token", summary_json(wait)},
           {"decode_weight_bytes_per_token", weight_bytes},
           {"decode_kv_cache_bytes_per_token", summary_json(summarize_runs(runs, kv_bytes))},
           {"memory_read_gb_s", summary_json(summarize_runs(
                                    runs, [](const Run& r) { return r.memory_bandwidth / 1e9; }))},
           {"disk_read_mb_s", summary_json(summarize_runs(
                                  runs, [](const Run& r) { return r.disk_bandwidth / 1e6; }))},
           {"disk_read_mb_s_before_run",
            summary_json(summarize_runs(runs, [](const Run& r) { return r.disk_before / 1e6; }))},
           {"disk_read_mb_s_after_run",
            summary_json(summarize_runs(runs, [](const Run& r) { return r.disk_after / 1e6; }))},
           {"decode_disk_busy_share", summary_json(disk_busy)},
           {"decode_disk_delivered_mb_s",
            summary_json(
                summarize_runs(runs, [](const Run& r) { return disk_delivered(r) / 1e6; }))},
           {"page_cache_share_at_start", summary_json(cached)},
           {"bound_tokens_per_s", summary_json(bound_summary)},
           {"bound_kind", disk_bounded ? "disk" : "memory"},
           {"decode_fraction_of_bound", summary_json(fraction)},
           {"unit_read_pattern", pattern ? nlohmann::json{{"read_bytes", pattern->read_bytes},
                                                          {"in_flight", pattern->in_flight}}
                                         : nlohmann::json(nullptr)},
           {"disk_unit_read_mb_s",
            pattern ? summary_json(summarize_runs(
                          runs, [](const Run& r) { return r.unit_disk_bandwidth / 1e6; }))
                    : nlohmann::json(nullptr)},
           {"unit_bound_tokens_per_s",
            pattern ? summary_json(summarize_runs(runs, unit_bound)) : nlohmann::json(nullptr)},
           {"decode_fraction_of_unit_bound",
            pattern ? summary_json(unit_fraction) : nlohmann::json(nullptr)},
           {"decode_fraction_of_resident",
            of_resident ? summary_json(*of_resident) : nlohmann::json(nullptr)}});
      chart.categories.push_back(fmt::format(
          "{}{} / {}", one_model ? "" : std::filesystem::path(v.path).stem().string() + " ",
          v.budget_text, options.prompt_lengths[p]));
      BarSeries& share = chart.series[0];
      share.values.push_back(100 * fraction.median);
      share.lo.push_back(100 * fraction.min);
      share.hi.push_back(100 * fraction.max);
      BarSeries& busy = chart.series[1];
      busy.values.push_back(100 * disk_busy.median);
      busy.lo.push_back(100 * disk_busy.min);
      busy.hi.push_back(100 * disk_busy.max);
      markdown += fmt::format(
          "| {} | {} | {} | {:.1f} ({:.1f}-{:.1f}) | {:.2f} ({:.2f}-{:.2f}) | {:.1f} % | {:.1f} | "
          "{:.1f} | {:.1f} | {:.0f} % | {:.2f} {} | {} | {} | {} |\n",
          std::filesystem::path(v.path).filename().string(), v.budget_text,
          options.prompt_lengths[p], prefill.median, prefill.min, prefill.max, decode.median,
          decode.min, decode.max, 100 * hits.median, missed.median / 1e6, read.median / 1e6,
          wait.median, 100 * disk_busy.median, bound_summary.median,
          disk_bounded ? "(disk)" : "(memory)", share_cell(fraction),
          pattern ? share_cell(unit_fraction) : "–", of_resident ? share_cell(*of_resident) : "–");
    }
  }
  record["results"] = results;
  record["peak_rss_bytes"] = Session::peak_rss_bytes();
  record["finished"] = now_utc();
  return BenchmarkReport{record.dump(2) + "\n", markdown, render_bar_chart_svg(chart)};
}

}  // namespace strata

#include "lab/benchmark_measure.h"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "base/interrupt.h"
#include "base/regular_file.h"
#include "gguf/gguf_file.h"
#include "lab/disk_bandwidth.h"
#include "lab/memory_bandwidth.h"

namespace strata {
namespace {

// Memory bandwidth is probed before every run over 1 GiB, 3 passes: ~0.15 s, and it tracks a
// shared host's drift (18 to 25 GB/s within an hour on xeon-2, docs/hosts.md). The buffer is
// over three times a 300 MiB L3: over 512 MiB on huge pages, part of each pass came from the
// cache and the probe read 8 % faster than over 2 GiB (docs/speed.md).
constexpr uint64_t kProbeBytes = 1024ull << 20;
constexpr int kProbePasses = 3;
// The disk probe reads 1 MiB ranges for this long, before and after every streaming run: a
// virtual disk moved between 0.9 and 1.9 GB/s from one 2-second probe to the next
// (docs/streaming-speed.md), so the bound uses the mean of the two around the run.
constexpr double kDiskProbeSeconds = 2.0;

// A variant's memory setting: "none" (every expert resident), a budget ("4G"), or "N%", an
// arena holding N % of the model's expert units.
Status apply_memory_setting(const std::string& text, SessionOptions& session) {
  session.memory_budget = 0;
  session.arena_share = 0;
  if (text == "none") return Status();
  if (text.empty() || text.back() != '%') {
    STRATA_ASSIGN_OR_RETURN(const MemoryBudget budget, parse_memory_budget(text));
    session.memory_budget = budget.bytes;
    return Status();
  }
  const double share = std::atof(text.c_str()) / 100.0;
  if (!(share > 0 && share <= 1)) return Status::errorf("bench: bad arena share '{}'", text);
  session.arena_share = share;
  return Status();
}

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
// memory, so it is probed right around every run.
Result<double> probe_disk(const BenchmarkVariant& v) {
  STRATA_ASSIGN_OR_RETURN(const IoBackend backend, parse_io_backend(v.options.io_backend));
  return measure_read_bandwidth(v.reader, v.options.io_threads, backend, 1 << 20,
                                2 * v.options.io_threads, kDiskProbeSeconds, 1);
}

// The same with the store's own reads: a unit's size, as many in flight as the store keeps.
// Some virtual disks serve these slower than the probe's (docs/streaming-speed.md); the
// share of this rate tells the engine's waiting apart from the disk's pattern.
Result<double> probe_unit_reads(const BenchmarkVariant& v) {
  STRATA_ASSIGN_OR_RETURN(const IoBackend backend, parse_io_backend(v.options.io_backend));
  const ExpertReadPattern& pattern = *v.session->engine().expert_read_pattern();
  return measure_read_bandwidth(v.reader, v.options.io_threads, backend, size_t(pattern.read_bytes),
                                pattern.in_flight, kDiskProbeSeconds, 2);
}

Result<std::vector<int32_t>> prompt_tokens(const Session& session, const std::string& text,
                                           int64_t length) {
  const std::vector<int32_t> base = session.engine().tokenize(text);
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
    const Result<RegularFile> file = RegularFile::open(part.path);
    if (!file.ok()) return -1;
    void* map = ::mmap(nullptr, part.size, PROT_READ, MAP_SHARED, file.value().fd(), 0);
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

Result<BenchmarkRun> run_once(Session& session, const std::vector<int32_t>& prompt,
                              int64_t generated) {
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
  BenchmarkRun run;
  run.prefill_tokens_per_s = stats.prefill_tokens_per_s();
  run.decode_tokens_per_s = stats.decode_tokens_per_s();
  run.decode_ms_per_token =
      stats.decode_tokens ? stats.decode_ms / double(stats.decode_tokens) : 0.0;
  run.decode_tokens = stats.decode_tokens;
  run.decode = stats.decode_experts();
  run.decode_device_wait_ms = stats.decode_device_wait_ms;
  return run;
}

void remember_engine(BenchmarkVariant& v) {
  const Engine& engine = v.session->engine();
  v.engine = BenchmarkEngineFacts{
      .backend = engine.backend_description(),
      .decode_weight_bytes_per_token = double(engine.decode_weight_bytes_per_token()),
      .read_pattern = engine.expert_read_pattern(),
      .kv_bytes_per_position = double(engine.kv_cache_bytes_per_position())};
}

Result<BenchmarkVariant> open_variant(const BenchmarkSetup& setup, const std::string& path,
                                      const std::string& budget_text, const std::string& device,
                                      const std::string& cpu_experts) {
  BenchmarkVariant v;
  v.budget_text = budget_text;
  v.device = device;
  v.cpu_experts = cpu_experts;
  v.options = without_plan_notes(setup.options.session);
  v.options.model_path = path;
  v.options.device = device;
  if (!cpu_experts.empty()) {
    STRATA_ASSIGN_OR_RETURN(v.options.cpu_experts, parse_cpu_experts(cpu_experts));
  }
  v.options.n_ctx = setup.n_ctx;
  STRATA_RETURN_IF_ERROR(apply_memory_setting(budget_text, v.options));
  v.runs.resize(setup.options.prompt_lengths.size());
  STRATA_ASSIGN_OR_RETURN(const auto file, gguf::GgufFile::open(path));
  v.parts = file->parts();
  if (streams_experts(v.options)) {
    STRATA_ASSIGN_OR_RETURN(v.reader, open_probe_reader(v.parts));
  }
  if (!setup.options.cold) {
    STRATA_ASSIGN_OR_RETURN(v.session, Session::open(v.options));
    remember_engine(v);
    STRATA_ASSIGN_OR_RETURN(const auto prompt, prompt_tokens(*v.session, setup.prompt_text,
                                                             setup.options.prompt_lengths[0]));
    STRATA_RETURN_IF_ERROR(run_once(*v.session, prompt, setup.options.generated_tokens).status());
  }
  return v;
}

// One run of `v` at prompt length `p`, between the probes.
Result<BenchmarkRun> measure_run(const BenchmarkSetup& setup, ThreadPool& probe_pool,
                                 BenchmarkVariant& v, size_t p) {
  const BenchmarkOptions& options = setup.options;
  if (options.cold) {
    v.session.reset();
    STRATA_RETURN_IF_ERROR(drop_page_cache());
  }
  const double cached = page_cache_share(v.parts);
  if (options.cold) {
    STRATA_ASSIGN_OR_RETURN(v.session, Session::open(v.options));
    remember_engine(v);
  }
  STRATA_ASSIGN_OR_RETURN(const auto prompt,
                          prompt_tokens(*v.session, setup.prompt_text, options.prompt_lengths[p]));
  // The probe's buffer lives only while it measures: a session's plan (a byte budget bounds
  // the whole process) and its run must not carry the probe's 1 GiB.
  // A GPU's weights are read from its own memory: that memory's copy rate bounds its decode.
  const std::optional<double> device_bandwidth = v.session->engine().measure_device_bandwidth();
  const double bandwidth = device_bandwidth
                               ? *device_bandwidth
                               : BandwidthProbe(probe_pool, kProbeBytes).measure(kProbePasses);
  // Every expert in host memory and an arena on the device: a miss is a copy over the bus.
  const bool misses_cross_the_bus = v.options.arena_share > 0 && v.options.memory_budget == 0;
  const std::optional<double> bus_bandwidth =
      misses_cross_the_bus ? v.session->engine().measure_host_to_device_bandwidth() : std::nullopt;
  // Such an arena reads no disk while it runs: the disk is not probed.
  const bool reads_the_disk = v.reader && !bus_bandwidth;
  double disk_before = 0, disk_after = 0, unit_before = 0, unit_after = 0;
  if (reads_the_disk) {
    STRATA_ASSIGN_OR_RETURN(disk_before, probe_disk(v));
    STRATA_ASSIGN_OR_RETURN(unit_before, probe_unit_reads(v));
  }
  STRATA_ASSIGN_OR_RETURN(BenchmarkRun run, run_once(*v.session, prompt, options.generated_tokens));
  if (reads_the_disk) {
    STRATA_ASSIGN_OR_RETURN(unit_after, probe_unit_reads(v));
    STRATA_ASSIGN_OR_RETURN(disk_after, probe_disk(v));
  }
  run.unit_disk_bandwidth = (unit_before + unit_after) / 2;
  run.memory_bandwidth = bandwidth;
  run.bus_bandwidth = bus_bandwidth.value_or(0);
  run.disk_bandwidth = (disk_before + disk_after) / 2;
  run.disk_before = disk_before;
  run.disk_after = disk_after;
  run.page_cache_share = cached;
  // A cold run's session goes now, not at this variant's next run: the variants in between plan
  // their budgets from the process's RSS, which it would otherwise still hold.
  if (options.cold) v.session.reset();
  return run;
}

std::string progress_line(const BenchmarkSetup& setup, const BenchmarkVariant& v, int rep, size_t p,
                          const BenchmarkRun& run) {
  return fmt::format(
      "run {}/{} {} {}{} mem {} prompt {}: prefill {:.1f} tok/s, decode {:.2f} tok/s, hits {:.1f} "
      "%, "
      "{:.1f} MB read/token, disk busy {:.0f} % (disk {:.0f} MB/s, its unit reads {:.0f} MB/s, "
      "memory {:.1f} GB/s)",
      rep + 1, setup.options.repetitions, v.options.model_path, v.device,
      v.cpu_experts.empty() ? "" : " cpu-experts " + v.cpu_experts, v.budget_text,
      setup.options.prompt_lengths[p], run.prefill_tokens_per_s, run.decode_tokens_per_s,
      100 * run.decode.hit_rate(), run.per_token(double(run.decode.bytes_read)) / 1e6,
      100 * run.disk_busy_share(), run.disk_bandwidth / 1e6, run.unit_disk_bandwidth / 1e6,
      run.memory_bandwidth / 1e9);
}

}  // namespace

double BenchmarkRun::per_token(double value) const {
  return decode_tokens ? value / double(decode_tokens) : 0.0;
}

double BenchmarkRun::disk_busy_share() const {
  const double decode_ms = decode_ms_per_token * double(decode_tokens);
  return decode_ms > 0 ? decode.disk_active_ms / decode_ms : 0.0;
}

double BenchmarkRun::disk_delivered() const {
  return decode.disk_active_ms > 0 ? double(decode.bytes_read) / (decode.disk_active_ms / 1000)
                                   : 0.0;
}

Result<std::vector<BenchmarkVariant>> open_variants(const BenchmarkSetup& setup) {
  std::vector<BenchmarkVariant> variants;
  const std::vector<std::string> devices = setup.options.devices.empty()
                                               ? std::vector{setup.options.session.device}
                                               : setup.options.devices;
  const std::vector<std::string> cpu_experts =
      setup.options.cpu_experts.empty() ? std::vector<std::string>{""} : setup.options.cpu_experts;
  for (const std::string& path : setup.options.model_paths)
    for (const std::string& budget_text : setup.options.memory_budgets)
      for (const std::string& device : devices)
        for (const std::string& setting : cpu_experts) {
          STRATA_ASSIGN_OR_RETURN(BenchmarkVariant v,
                                  open_variant(setup, path, budget_text, device, setting));
          variants.push_back(std::move(v));
        }
  return variants;
}

Status measure_variants(const BenchmarkSetup& setup, ThreadPool& probe_pool,
                        std::vector<BenchmarkVariant>& variants,
                        const std::function<void(const std::string&)>& progress) {
  for (int rep = 0; rep < setup.options.repetitions; ++rep)
    for (size_t p = 0; p < setup.options.prompt_lengths.size(); ++p)
      for (BenchmarkVariant& v : variants) {
        STRATA_ASSIGN_OR_RETURN(BenchmarkRun run, measure_run(setup, probe_pool, v, p));
        progress(progress_line(setup, v, rep, p, run));
        v.runs[p].push_back(run);
      }
  return Status();
}

}  // namespace strata

#include <strata/benchmark.h>
#include <strata/session.h>

#include <algorithm>
#include <ctime>

#include <nlohmann/json.hpp>

#include "base/whole_file.h"
#include "lab/benchmark_measure.h"
#include "lab/benchmark_render.h"
#include "lab/benchmark_summary.h"
#include "lab/provenance.h"

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

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return text;
}

Result<BenchmarkSetup> make_setup(const BenchmarkOptions& options) {
  if (options.model_paths.empty()) return Status::error("bench: give at least one model");
  // A median of fewer than three runs is one run, or the mean of two.
  if (options.repetitions < 3)
    return Status::errorf("bench: --repetitions must be at least 3 (got {})", options.repetitions);
  BenchmarkSetup setup{
      .options = options, .prompt_text = kDefaultPrompt, .n_threads = 0, .n_ctx = 0};
  if (!options.prompt_file.empty()) {
    STRATA_ASSIGN_OR_RETURN(setup.prompt_text, read_whole_file(options.prompt_file));
  }
  setup.n_threads =
      options.session.n_threads > 0 ? options.session.n_threads : ThreadPool::default_threads();
  const int64_t longest =
      *std::max_element(options.prompt_lengths.begin(), options.prompt_lengths.end());
  setup.n_ctx = longest + options.generated_tokens + 1;
  return setup;
}

// What the record says of where its numbers come from, before any result.
nlohmann::json record_provenance(const BenchmarkSetup& setup) {
  const BenchmarkOptions& options = setup.options;
  return {{"tool", "strata bench"},
          {"started", now_utc()},
          {"command_line", options.command_line},
          {"binary", binary_description()},
          {"machine", machine_description()},
          {"environment", environment_description()},
          {"threads", setup.n_threads},
          {"repetitions", options.repetitions},
          {"generated_tokens", options.generated_tokens},
          {"cold", options.cold}};
}

}  // namespace

Result<BenchmarkReport> run_benchmark(const BenchmarkOptions& options,
                                      const std::function<void(const std::string&)>& progress) {
  STRATA_ASSIGN_OR_RETURN(const BenchmarkSetup setup, make_setup(options));
  nlohmann::json record = record_provenance(setup);
  STRATA_ASSIGN_OR_RETURN(const std::unique_ptr<ThreadPool> probe_pool,
                          ThreadPool::start(setup.n_threads));
  if (!options.prompt_file.empty()) {
    STRATA_ASSIGN_OR_RETURN(const std::string hash, sha256_file(options.prompt_file));
    record["prompt_file"] = {{"path", options.prompt_file}, {"sha256", hash}};
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<BenchmarkVariant> variants, open_variants(setup));
  STRATA_RETURN_IF_ERROR(measure_variants(setup, *probe_pool, variants, progress));
  std::vector<VariantSummary> summaries;
  for (const BenchmarkVariant& v : variants) {
    STRATA_ASSIGN_OR_RETURN(VariantSummary summary, summarize_variant(v, variants, options));
    summaries.push_back(std::move(summary));
  }
  record["results"] = benchmark_results_json(summaries);
  record["peak_rss_bytes"] = Engine::peak_rss_bytes();
  // Held over the process, like the RSS peak: the largest of the variants on a device.
  std::optional<uint64_t> peak_device;
  for (const BenchmarkVariant& v : variants)
    if (v.session)
      if (const auto peak = v.session->engine().peak_device_bytes())
        peak_device = std::max(peak_device.value_or(0), *peak);
  if (peak_device) record["peak_device_bytes"] = *peak_device;
  record["finished"] = now_utc();
  return BenchmarkReport{record.dump(2) + "\n", benchmark_markdown(summaries),
                         benchmark_chart_svg(summaries, options)};
}

}  // namespace strata

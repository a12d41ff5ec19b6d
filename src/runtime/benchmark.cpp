#include <strata/benchmark.h>
#include <strata/session.h>

#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <iterator>
#include <thread>

#include "cpu/memory_bandwidth.h"
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

struct Run {
  double prefill_tokens_per_s, decode_tokens_per_s, decode_ms_per_token;
  double bandwidth;  // bytes/s, probed just before the run
};

// Bandwidth is probed before every run over 512 MiB, 3 passes: ~0.1 s, and it tracks a shared
// host's drift (measured here between 19 and 25 GB/s within an hour).
constexpr uint64_t kProbeBytes = 512ull << 20;
constexpr int kProbePasses = 3;

Result<std::vector<int32_t>> prompt_tokens(const Session& session, const std::string& text,
                                           int64_t length) {
  const std::vector<int32_t> base = session.tokenize(text);
  if (base.empty()) return Status::error("bench: the prompt text has no tokens");
  std::vector<int32_t> tokens;
  while (int64_t(tokens.size()) < length) tokens.insert(tokens.end(), base.begin(), base.end());
  tokens.resize(size_t(length));
  return tokens;
}

Result<Run> run_once(Session& session, const std::vector<int32_t>& prompt, int64_t generated) {
  session.reset();
  session.reset_stats();
  GenerateOptions options;
  options.max_tokens = int(generated);
  options.temperature = 0;
  options.stop_at_end_of_generation = false;
  STRATA_ASSIGN_OR_RETURN(const auto tokens, session.generate(prompt, options, nullptr));
  const SessionStats& stats = session.stats();
  return Run{stats.prefill_tokens_per_s(), stats.decode_tokens_per_s(),
             stats.decode_tokens ? stats.decode_ms / double(stats.decode_tokens) : 0.0, 0.0};
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

}  // namespace

Result<BenchmarkReport> run_benchmark(const BenchmarkOptions& options,
                                      const std::function<void(const std::string&)>& progress) {
  if (options.model_paths.empty()) return Status::error("bench: give at least one model");
  if (options.repetitions < 1) return Status::error("bench: --repetitions must be at least 1");
  std::string text = kDefaultPrompt;
  if (!options.prompt_file.empty()) {
    std::ifstream in(options.prompt_file, std::ios::binary);
    if (!in) return Status::errorf("{}: cannot open", options.prompt_file);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  const int n_threads = options.n_threads > 0
                            ? options.n_threads
                            : int(std::max(1u, std::thread::hardware_concurrency()));

  nlohmann::json record = {{"tool", "strata bench"},
                           {"started", now_utc()},
                           {"command_line", options.command_line},
                           {"binary", binary_description()},
                           {"machine", machine_description()},
                           {"environment", environment_description()},
                           {"threads", n_threads},
                           {"repetitions", options.repetitions},
                           {"generated_tokens", options.generated_tokens}};
  ThreadPool probe_pool(n_threads);
  BandwidthProbe probe(probe_pool, kProbeBytes);
  if (!options.prompt_file.empty()) {
    STRATA_ASSIGN_OR_RETURN(const std::string hash, sha256_file(options.prompt_file));
    record["prompt_file"] = {{"path", options.prompt_file}, {"sha256", hash}};
  }

  struct Variant {
    std::string path;
    std::unique_ptr<Session> session;
    std::vector<std::vector<Run>> runs;  // per prompt length
  };
  std::vector<Variant> variants;
  for (const std::string& path : options.model_paths) {
    SessionOptions session_options;
    session_options.model_path = path;
    session_options.n_threads = n_threads;
    const int64_t longest =
        *std::max_element(options.prompt_lengths.begin(), options.prompt_lengths.end());
    session_options.n_ctx = longest + options.generated_tokens + 1;
    STRATA_ASSIGN_OR_RETURN(auto session, Session::open(session_options));
    variants.push_back(
        {path, std::move(session), std::vector<std::vector<Run>>(options.prompt_lengths.size())});
  }
  // Warm-up (not recorded): brings every weight page in and settles clocks.
  for (Variant& v : variants) {
    STRATA_ASSIGN_OR_RETURN(const auto prompt,
                            prompt_tokens(*v.session, text, options.prompt_lengths[0]));
    STRATA_RETURN_IF_ERROR(run_once(*v.session, prompt, options.generated_tokens).status());
  }
  for (int rep = 0; rep < options.repetitions; ++rep)
    for (size_t p = 0; p < options.prompt_lengths.size(); ++p)
      for (Variant& v : variants) {
        STRATA_ASSIGN_OR_RETURN(const auto prompt,
                                prompt_tokens(*v.session, text, options.prompt_lengths[p]));
        const double bandwidth = probe.measure(kProbePasses);
        STRATA_ASSIGN_OR_RETURN(Run run, run_once(*v.session, prompt, options.generated_tokens));
        run.bandwidth = bandwidth;
        v.runs[p].push_back(run);
        progress(
            fmt::format("run {}/{} {} prompt {}: prefill {:.1f} tok/s, decode {:.2f} tok/s "
                        "(memory {:.1f} GB/s)",
                        rep + 1, options.repetitions, v.path, options.prompt_lengths[p],
                        run.prefill_tokens_per_s, run.decode_tokens_per_s, bandwidth / 1e9));
      }

  std::string markdown =
      "| model | prompt | prefill tok/s | decode tok/s | decode GB/s | memory GB/s | decode / "
      "memory |\n"
      "|---|---:|---:|---:|---:|---:|---:|\n";
  nlohmann::json results = nlohmann::json::array();
  for (Variant& v : variants) {
    STRATA_ASSIGN_OR_RETURN(const std::string hash, sha256_file(v.path));
    const double bytes_per_token = double(v.session->decode_weight_bytes_per_token());
    for (size_t p = 0; p < options.prompt_lengths.size(); ++p) {
      std::vector<double> prefill, decode, ms, achieved, bandwidth, fraction;
      for (const Run& r : v.runs[p]) {
        prefill.push_back(r.prefill_tokens_per_s);
        decode.push_back(r.decode_tokens_per_s);
        ms.push_back(r.decode_ms_per_token);
        achieved.push_back(r.decode_tokens_per_s * bytes_per_token / 1e9);
        bandwidth.push_back(r.bandwidth / 1e9);
        fraction.push_back(r.decode_tokens_per_s * bytes_per_token / r.bandwidth);
      }
      const Summary d = summarize(decode), pf = summarize(prefill), f = summarize(fraction);
      results.push_back({{"model", {{"path", v.path}, {"sha256", hash}}},
                         {"prompt_tokens", options.prompt_lengths[p]},
                         {"prefill_tokens_per_s", summary_json(pf)},
                         {"decode_tokens_per_s", summary_json(d)},
                         {"decode_ms_per_token", summary_json(summarize(ms))},
                         {"decode_weight_bytes_per_token", bytes_per_token},
                         {"decode_gb_s", summary_json(summarize(achieved))},
                         {"memory_read_gb_s", summary_json(summarize(bandwidth))},
                         {"decode_fraction_of_bandwidth", summary_json(f)}});
      markdown += fmt::format(
          "| {} | {} | {:.1f} ({:.1f}-{:.1f}) | {:.2f} ({:.2f}-{:.2f}) | {:.1f} | {:.1f} | "
          "{:.0f} % ({:.0f}-{:.0f}) |\n",
          v.path, options.prompt_lengths[p], pf.median, pf.min, pf.max, d.median, d.min, d.max,
          summarize(achieved).median, summarize(bandwidth).median, 100 * f.median, 100 * f.min,
          100 * f.max);
    }
  }
  record["results"] = results;
  record["finished"] = now_utc();
  return BenchmarkReport{record.dump(2) + "\n", markdown};
}

}  // namespace strata

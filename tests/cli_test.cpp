// The strata command line as a user meets it: exit codes, one-line errors, the memory budget
// held from the outside (peak RSS of the process), output files.
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>

#include "cli_runner.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

using testing::ErrorCases;
using testing::expect_one_line_errors;
using testing::last_line;
using testing::scratch;
using testing::strata;

const std::string kModel = std::string(STRATA_SOURCE_DIR) + "/models/strata-tiny-moe-q4_0.gguf";

TEST(Cli, GeneratesWithTheBundledModel) {
  const auto outcome = strata("run -m " + kModel + " -p 'int main(' -n 8 --temp 0");
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_GT(outcome.out.size(), std::string("int main(").size());
}

TEST(Cli, BadInputIsOneLineAndExitCodeOne) {
  const fs::path truncated = scratch() / "truncated.gguf";
  {
    std::ifstream in(kModel, std::ios::binary);
    std::vector<char> bytes(100000);
    in.read(bytes.data(), std::streamsize(bytes.size()));
    std::ofstream(truncated, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  }
  const fs::path bad_tokens = scratch() / "tokens.json";
  std::ofstream(bad_tokens) << "[1, 2, 999999]";
  const fs::path bad_warm = scratch() / "warm.json";
  std::ofstream(bad_warm) << R"({"format": "strata-expert-usage", "n_layer": "8"})";
  const fs::path bad_predictor = scratch() / "predictor.gguf";
  std::ofstream(bad_predictor) << "not a predictor";
  const std::string inspect_bad_predictor =
      "inspect -m " + kModel + " --mem 100M --predictor " + bad_predictor.string();
  const ErrorCases cases = {
      {"run -m /nonexistent.gguf -p hi", "/nonexistent.gguf: cannot open"},
      {"run -m " + truncated.string() + " -p hi", truncated.string() + ": "},
      {"logits -m " + kModel + " --tokens " + bad_tokens.string() + " --out /dev/null",
       "token id 999999 is out of range"},
      {"run -m " + kModel + " -p hi --mem 1M", "the memory budget 1.00 MiB is"},
      {"run -m " + kModel + " -p hi --mem lots", "invalid size 'lots'"},
      {"run -m " + kModel + " -p hi --mem 0", "--mem 0: a budget must be above zero"},
      {"run -m " + kModel + " -p hi --ctx 10000000000", "--ctx 10000000000: the KV cache needs"},
      {"run -m " + kModel + " -p hi --mem 1G --io carrier-pigeon", "unknown I/O backend"},
      {"run -m " + kModel + " -p hi --io-depth -1",
       "--io-depth: must be a whole number from 0 to 1365 (got '-1')"},
      {"bench -m " + kModel + " --io-threads 0",
       "--io-threads: must be a whole number from 1 to 64 (got '0')"},
      {"run -m " + kModel + " -p hi --temp nan", "--temp: must be a number 0 or more (got 'nan')"},
      {"run -m " + kModel + " -p hi --top-p 2", "--top-p: must be a number in (0, 1] (got '2')"},
      {"run -m " + kModel + " -p hi --arena 25% --readahead 1000",
       "--readahead 1000: the model has "},
      {"run -m " + kModel + " -p hi --arena 25% --moce nan",
       "--moce: must be a number 0 or more (got 'nan')"},
      {"run -m " + kModel + " -p hi --repeat-penalty 0",
       "--repeat-penalty: must be a number above 0 (got '0')"},
      {"bench -m " + kModel + " -r 2", "--repetitions must be at least 3 (got 2)"},
      {"bench -m " + kModel + " --plot /nonexistent/dir/chart.svg",
       "/nonexistent/dir: no such directory"},
      {"trace -m " + kModel + " -p hi -o /nonexistent/dir/x.trace",
       "strata: /nonexistent/dir: no such directory"},
      {"run -m " + kModel + " -p hi --frobnicate", "--frobnicate"},
      {"split -m " + kModel + " -o /tmp/x --max-size 4M --parts 3", "--max-size excludes --parts"},
      {"split -m " + kModel + " -o /tmp/x", "give either a maximum part size or a number of parts"},
      {"run -m " + kModel + " -p hi --arena 50% --warm " + bad_warm.string(),
       "n_layer and n_expert must be integers"},
      {inspect_bad_predictor, bad_predictor.string() + ": not a GGUF file"},
      {"run -m " + kModel + " -p hi --arena 50% --warm " + scratch().string(),
       "strata: " + scratch().string() + ": is a directory"},
      {"run -m " + kModel + " -p hi --arena 50% --warm /nonexistent/dir/usage.json",
       "strata: /nonexistent/dir: no such directory"},
      {"logits -m " + kModel + " --tokens " + scratch().string() + " --out /dev/null",
       scratch().string() + ": is a directory"},
      {"run -m " + kModel + " -p hi --stats " + scratch().string(),
       "strata: " + scratch().string() + ": is a directory"},
  };
  // Refused before the run: nothing was generated.
  EXPECT_EQ(strata("run -m " + kModel + " -p hi --stats " + scratch().string()).out, "");
  EXPECT_EQ(strata("run -m " + kModel + " -p hi --warm /nonexistent/dir/usage.json").out, "");
  expect_one_line_errors(cases);
  // The error is all inspect prints: no listing before it.
  EXPECT_EQ(strata(inspect_bad_predictor).out, "");
}

// Counts that would start more threads than the pool and the I/O engine take, or wrap.
TEST(Cli, ThreadCountsOutOfRangeAreOneLine) {
  const fs::path tokens = scratch() / "thread-tokens.json";
  std::ofstream(tokens) << "[1, 2, 3]";
  ErrorCases cases;
  const std::string threads = "must be a whole number from 0 to 512 (got '100000')";
  for (const std::string& command : std::vector<std::string>{
           "run -m " + kModel + " -p hi", "chat -m " + kModel,
           "logits -m " + kModel + " --tokens " + tokens.string() + " --out /dev/null",
           "trace -m " + kModel + " -p hi -o /dev/null", "eval run --suite s.json -m " + kModel,
           "bench -m " + kModel, "fit-predictor -m " + kModel + " -f " + kModel + " -o /dev/null",
           "inspect -m " + kModel, "quantize -m " + kModel + " --experts q8_0 -o /dev/null",
           "make-model -o /dev/null"}) {
    cases.push_back({command + " -t 100000", "--threads: " + threads});
    cases.push_back({command + " --threads -1", "(got '-1')"});
  }
  for (const std::string& command :
       std::vector<std::string>{"run -m " + kModel + " -p hi", "bench -m " + kModel,
                                "eval run --suite s.json -m " + kModel})
    cases.push_back({command + " --io-threads 100000",
                     "--io-threads: must be a whole number from 1 to 64 (got '100000')"});
  expect_one_line_errors(cases);
}

// Values that were taken silently: wrapped around, or meaningless where nothing streams.
TEST(Cli, ValuesOnceTakenSilentlyAreOneLine) {
  const std::string seed = "must be a whole number from 0 to 18446744073709551615, or -1";
  expect_one_line_errors(
      {{"run -m " + kModel + " -p hi --seed -2",
        "--seed: " + seed + " for a random seed (got '-2')"},
       {"run -m " + kModel + " -p hi --seed 18446744073709551616", "--seed: " + seed},
       {"make-model -o /dev/null --seed -5", "--seed: " + seed},
       {"eval make-suite --eval-dir . --vocab " + kModel +
            " --windows 1 --prompt 1 --scored 1 -o /dev/null --seed 99999999999999999999",
        "--seed: " + seed},
       {"eval compare a.json b.json --bootstrap-seed -3", "--bootstrap-seed: " + seed},
       {"run -m " + kModel + " -p hi --arena 25% --readahead -1",
        "--readahead: must be a whole number, 0 or more (got '-1')"},
       {"eval run --suite s.json -m " + kModel + " --ref-readahead -1",
        "--ref-readahead: must be a whole number, 0 or more (got '-1')"},
       {"make-model -o /dev/null --stats-tokens -5",
        "--stats-tokens: must be a whole number, 0 or more (got '-5')"},
       {"run -m " + kModel + " -p hi --cache-policy lifo",
        "--cache-policy: unknown replacement policy 'lifo' (known: "},
       {"inspect -m " + kModel + " --cache-policy lifo", "unknown replacement policy 'lifo'"},
       {"eval run --suite s.json -m " + kModel + " --ref-cache-policy lifo",
        "--ref-cache-policy: unknown replacement policy 'lifo'"},
       {"run -m " + kModel + " -p hi --arena 25% --mem 1G", "--arena excludes --mem"},
       {"eval run --suite s.json -m " + kModel + " --ref-arena 25% --ref-mem 1G",
        "--ref-arena excludes --ref-mem"},
       {"run -m " + kModel + " -p hi --arena 25% --io-depth 100000",
        "--io-depth: must be a whole number from 0 to 1365 (got '100000')"},
       {"bench -m " + kModel + " -n 0",
        "--gen-tokens: must be a whole number from 1 to 2147483647 (got '0')"},
       {"bench -m " + kModel + " --prompt-tokens 0",
        "--prompt-tokens: must be a whole number, 1 or more (got '0')"},
       {"cachesim --trace x.trace --readahead -1",
        "--readahead: must be a whole number, 0 or more (got '-1')"},
       {"fit-predictor -m " + kModel + " -f " + kModel + " -o /dev/null --ridge 0",
        "--ridge: must be a number above 0 (got '0')"}});
}

// A thread that cannot start (here: no address space left for its stack) is one line, and the
// writers leave nothing behind.
TEST(Cli, ThreadsThatCannotStartAreOneLine) {
  const fs::path dir = scratch() / "no-threads";
  fs::remove_all(dir);
  fs::create_directories(dir);
  // 400 MB of address space holds the process and a few dozen 8 MiB thread stacks, not 512.
  const std::string limit = "ulimit -v 400000; ";
  const std::pair<std::string, std::string> cases[] = {
      {"run -m " + kModel + " -p hi -n 1 -t 512", "cannot start compute thread "},
      {"run -m " + kModel + " -p hi -n 1 -t 1 --arena 50% --io pread --io-threads 64",
       ": cannot start I/O thread "},
      {"quantize -m " + kModel + " --experts q8_0 -t 512 -o " + (dir / "q.gguf").string(),
       "cannot start compute thread "},
      {"make-model --preset tiny -t 512 -o " + (dir / "m.gguf").string(),
       "cannot start compute thread "},
  };
  for (const auto& [arguments, expected] : cases) {
    const auto outcome = strata(arguments, limit);
    EXPECT_EQ(outcome.exit_code, 1) << arguments << "\n" << outcome.err;
    const std::string line = last_line(outcome.err);
    EXPECT_TRUE(
        std::regex_search(line, std::regex("^strata: .*" + expected + "[0-9]+ of (512|64): .+$")))
        << arguments << "\n"
        << outcome.err;
  }
  EXPECT_TRUE(fs::is_empty(dir));
}

// --seed -1 draws a seed, says it first, records it in --stats; given back, it repeats the run.
TEST(Cli, RandomSeedIsSaidAndRecorded) {
  const fs::path stats = scratch() / "seed-stats.json";
  const std::string run = "run -m " + kModel + " -p 'Once upon a time' -n 12 --temp 1 ";
  const auto drawn = strata(run + "--seed -1 --stats " + stats.string());
  ASSERT_EQ(drawn.exit_code, 0) << drawn.err;
  std::smatch match;
  ASSERT_TRUE(std::regex_search(drawn.err, match, std::regex("^seed: ([0-9]+)\n"))) << drawn.err;
  const std::string seed = match[1];
  std::ifstream in(stats);
  EXPECT_EQ(std::to_string(nlohmann::json::parse(in).at("seed").get<uint64_t>()), seed);
  const auto again = strata(run + "--seed " + seed);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, drawn.out);
  EXPECT_EQ(again.err.find("seed: "), std::string::npos) << again.err;
}

// A replacement policy is checked whether or not experts stream; resident, it is only a note.
TEST(Cli, CachePolicyWithoutStreamingIsANote) {
  const auto outcome = strata("run -m " + kModel + " -p hi -n 1 --cache-policy lru");
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_NE(outcome.err.find("note: --cache-policy only matters when experts stream"),
            std::string::npos)
      << outcome.err;
}

// "-f -" reads the text from standard input, as a file would be read.
TEST(Cli, TextFromStandardInput) {
  const fs::path text = scratch() / "prompt.txt";
  std::ofstream(text) << "def fibonacci(n):\n    ";
  for (const std::string& command :
       {"tokenize -m " + kModel, "run -m " + kModel + " -n 4 --temp 0"}) {
    const auto from_file = strata(command + " -f " + text.string());
    const auto piped = strata(command + " -f - < " + text.string());
    ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
    ASSERT_EQ(piped.exit_code, 0) << piped.err;
    EXPECT_FALSE(piped.out.empty());
    EXPECT_EQ(piped.out, from_file.out) << command;
  }
}

// A full context ends a continuation, not the program; a chat drops its oldest exchanges.
TEST(Cli, FullContextStopsTheReplyAndChatsForget) {
  const auto run = strata("run -m " + kModel + " -p hi --ctx 8 -n 50 --temp 0");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("note: stopped at the end of the context (8 tokens; --ctx)"),
            std::string::npos)
      << run.err;
  const fs::path turns = scratch() / "turns.txt";
  std::ofstream(turns) << "hello there\nwhat is two plus two\nand three plus three\n"
                       << std::string(400, 'x') << "\nand four plus four\n";
  const auto chat = strata("chat -m " + kModel + " --ctx 64 -n 20 --temp 0 < " + turns.string());
  EXPECT_EQ(chat.exit_code, 0) << chat.err;
  EXPECT_NE(chat.err.find("oldest exchange was dropped"), std::string::npos) << chat.err;
  EXPECT_NE(chat.err.find("-token context (--ctx)"), std::string::npos) << chat.err;
  EXPECT_EQ(chat.err.find("strata:"), std::string::npos) << chat.err;
}

// --mem auto says how it chose the budget: a share of what this machine, or a cgroup, leaves.
TEST(Cli, AutomaticBudgetSaysWhereItComesFrom) {
  const auto inspect = strata("inspect -m " + kModel + " --mem auto");
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_TRUE(std::regex_search(
      inspect.out, std::regex("memory plan for a budget of [0-9.]+ [KMGT]?i?B \\(--mem auto: 80 % "
                              "of [0-9.]+ [KMGT]?i?B (available on this machine|left below the "
                              "memory cgroup's limit)\\):")))
      << inspect.out;
}

// inspect shows the plan of a budget run would refuse, and fails as run does: a script can ask
// it whether a budget is enough.
TEST(Cli, InspectFailsForABudgetRunRefuses) {
  // The plan's runtime line is measured in each process, so the two differ in the figures.
  const std::regex refusal(
      "^strata: .*: the memory budget 30.00 MiB is [0-9.]+ MiB short: this model needs at least "
      "[0-9.]+ MiB \\(.*\\)$");
  const auto small = strata("inspect -m " + kModel + " --mem 30M");
  EXPECT_EQ(small.exit_code, 1);
  EXPECT_NE(small.out.find("smallest budget that works"), std::string::npos) << small.out;
  EXPECT_TRUE(std::regex_match(last_line(small.err), refusal)) << small.err;
  const auto run = strata("run -m " + kModel + " -p hi --mem 30M");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(std::regex_match(last_line(run.err), refusal)) << run.err;
  EXPECT_EQ(strata("inspect -m " + kModel + " --mem 200M").exit_code, 0);
}

std::string fmt_budget(double budget_mib, const fs::path& stats) {
  char budget[32];
  std::snprintf(budget, sizeof(budget), "%.0fM", budget_mib);
  return "run -m " + kModel + " -p 'def fibonacci(n):\n    ' -n 64 --temp 0 --mem " + budget +
         " --stats " + stats.string();
}

// Peak RSS (VmHWM) of a streaming run stays within --mem, also at the smallest budget the
// plan accepts.
TEST(Cli, PeakMemoryStaysWithinTheBudget) {
  const auto refused = strata("run -m " + kModel + " -p hi --mem 1M");
  std::smatch match;
  const std::string line = last_line(refused.err);
  ASSERT_TRUE(std::regex_search(line, match, std::regex("needs at least ([0-9.]+) MiB"))) << line;
  // The first line of the plan is measured, so it moves by a few hundred KiB between runs.
  const double minimum_mib = std::ceil(std::stod(match[1])) + 2;
  for (const double budget_mib : {minimum_mib, minimum_mib + 12}) {
    const fs::path stats = scratch() / "stats.json";
    fs::remove(stats);
    const auto outcome = strata(fmt_budget(budget_mib, stats));
    ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
    std::ifstream in(stats);
    const auto json = nlohmann::json::parse(in);
    const double peak_mib = json.at("peak_rss_bytes").get<double>() / 1048576;
    EXPECT_LE(peak_mib, budget_mib) << "budget " << budget_mib << " MiB";
    EXPECT_GT(json.at("experts").at("misses").get<uint64_t>(), 0u);
  }
}

// Cold benchmarks of several variants under one budget: each variant's plan sees only what the
// process holds for itself, never the previous variant's session (it is closed once measured).
// The budget holds one session of the bundled model but not two.
TEST(Cli, ColdBenchmarkVariantsShareOneBudget) {
  if (::access("/proc/sys/vm/drop_caches", W_OK) != 0)
    GTEST_SKIP() << "--cold drops the page cache: needs root and a writable /proc/sys/vm";
  const auto refused = strata("run -m " + kModel + " -p hi --mem 1M");
  std::smatch match;
  const std::string line = last_line(refused.err);
  ASSERT_TRUE(std::regex_search(line, match, std::regex("needs at least ([0-9.]+) MiB"))) << line;
  const std::string budget = std::to_string(int(std::ceil(std::stod(match[1]))) + 8) + "M";
  const auto outcome = strata("bench -m " + kModel + " " + kModel + " --mem " + budget +
                              " --cold -r 3 -n 2 --prompt-tokens 8 -t 1");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  int rows = 0;
  for (size_t at = outcome.out.find("| strata-tiny-moe-q4_0.gguf |"); at != std::string::npos;
       at = outcome.out.find("| strata-tiny-moe-q4_0.gguf |", at + 1))
    ++rows;
  EXPECT_EQ(rows, 2) << outcome.out;
}

// --stats splits every step's time into waiting for experts and the rest (compute), and sums
// the decode's compute time. The CPU computes while its ops are called: it never waits for a
// device's queued work.
TEST(Cli, StatsSplitStepsIntoWaitAndCompute) {
  const fs::path stats = scratch() / "split-stats.json";
  const auto outcome = strata("run -m " + kModel + " -p 'def fibonacci(n):' -n 16 --temp 0 " +
                              "--arena 25% --stats " + stats.string());
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  std::ifstream in(stats);
  const auto json = nlohmann::json::parse(in);
  double decode_compute_ms = 0;
  for (const auto& step : json.at("steps")) {
    const double ms = step.at("ms").get<double>(), compute = step.at("compute_ms").get<double>();
    const double wait = step.at("experts").at("host_wait_ms").get<double>();
    EXPECT_GE(compute, 0.0);
    EXPECT_NEAR(compute + wait, ms, 1e-6 * ms);
    EXPECT_EQ(step.at("device_wait_ms").get<double>(), 0.0);
    if (step.at("phase") == "decode") decode_compute_ms += compute;
  }
  EXPECT_EQ(json.at("decode_device_wait_ms").get<double>(), 0.0);
  EXPECT_NEAR(json.at("decode_compute_ms").get<double>(), decode_compute_ms,
              1e-6 * decode_compute_ms);
  EXPECT_GT(decode_compute_ms, 0.0);
}

// bench writes its JSON record and a chart of decode against its bound, one bar group per
// variant and prompt length; a streaming variant also probes the disk with the store's own
// reads.
TEST(Cli, BenchWritesRecordAndChart) {
  const fs::path json_path = scratch() / "bench.json", svg_path = scratch() / "bench.svg";
  const auto outcome = strata("bench -m " + kModel +
                              " --device cpu --mem none 25% --prompt-tokens 16 -n 4 -r 3 -o " +
                              json_path.string() + " --plot " + svg_path.string());
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  std::ifstream json_in(json_path);
  const auto json = nlohmann::json::parse(json_in);
  ASSERT_EQ(json.at("results").size(), 2u);
  const auto& resident = json.at("results")[0];
  EXPECT_GT(resident.at("decode_fraction_of_bound").at("median").get<double>(), 0.0);
  EXPECT_TRUE(resident.at("unit_read_pattern").is_null());
  EXPECT_TRUE(resident.at("decode_fraction_of_unit_bound").is_null());
  // Each variant names the backend it ran on.
  EXPECT_EQ(resident.at("backend").get<std::string>().rfind("cpu: ", 0), 0u) << resident.dump();
  // The bundled model's units are three slices of about 14 KB, read 4 units (12 reads) at a
  // time through io_uring, or one per reader thread (2) through pread.
  const auto& streaming = json.at("results")[1];
  const auto& pattern = streaming.at("unit_read_pattern");
  EXPECT_GE(pattern.at("read_bytes").get<int64_t>(), 13 << 10);
  EXPECT_LE(pattern.at("read_bytes").get<int64_t>(), 16 << 10);
  const int in_flight = pattern.at("in_flight");
  EXPECT_TRUE(in_flight == 12 || in_flight == 2) << in_flight;
  EXPECT_GT(streaming.at("disk_unit_read_mb_s").at("median").get<double>(), 0.0);
  // On the CPU an arena's misses are reads of the file: no bus in its bound.
  EXPECT_EQ(streaming.at("bus_copy_gb_s").at("median").get<double>(), 0.0);
  EXPECT_NE(streaming.at("bound_kind").get<std::string>(), "bus");
  EXPECT_GT(streaming.at("decode_fraction_of_unit_bound").at("median").get<double>(), 0.0);
  EXPECT_NE(outcome.out.find("| of unit-read bound |"), std::string::npos) << outcome.out;
  // Streaming decode against the resident variant's, pair by pair: each ratio lies between
  // the slowest streaming run over the fastest resident one and the converse.
  EXPECT_TRUE(resident.at("decode_fraction_of_resident").is_null());
  const auto& of_resident = streaming.at("decode_fraction_of_resident");
  const auto decode = [](const nlohmann::json& result, const char* which) {
    return result.at("decode_tokens_per_s").at(which).get<double>();
  };
  EXPECT_EQ(of_resident.at("n").get<int>(), 3);
  EXPECT_GE(of_resident.at("min").get<double>(),
            decode(streaming, "min") / decode(resident, "max"));
  EXPECT_LE(of_resident.at("max").get<double>(),
            decode(streaming, "max") / decode(resident, "min"));
  EXPECT_NE(outcome.out.find("| of resident |"), std::string::npos) << outcome.out;
  std::ifstream svg_in(svg_path);
  const std::string svg{std::istreambuf_iterator<char>(svg_in), {}};
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find(">none / 16<"), std::string::npos);
  EXPECT_NE(svg.find(">25% / 16<"), std::string::npos);
  EXPECT_NE(svg.find("decode ÷ bound"), std::string::npos);
}

// repack writes the unit layout; the model generates the same text from it, streaming too.
TEST(Cli, RepackedModelGeneratesTheSameText) {
  const fs::path units = scratch() / "units.gguf";
  fs::remove(units);
  const auto repacked = strata("repack -m " + kModel + " -o " + units.string());
  ASSERT_EQ(repacked.exit_code, 0) << repacked.err;
  EXPECT_NE(repacked.err.find("512 expert units, each one range"), std::string::npos)
      << repacked.err;
  const auto again = strata("repack -m " + kModel + " -o " + units.string());
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(last_line(again.err).find("exists; --force replaces it"), std::string::npos);
  const std::string generate = " -p 'def fibonacci(n):' -n 24 --temp 0";
  const auto stacked_text = strata("run -m " + kModel + generate);
  const auto units_text = strata("run -m " + units.string() + generate + " --arena 25%");
  ASSERT_EQ(units_text.exit_code, 0) << units_text.err;
  EXPECT_EQ(units_text.out, stacked_text.out);

  const fs::path grouped = scratch() / "grouped.gguf";
  fs::remove(grouped);
  const auto regrouped =
      strata("repack --grouped -m " + units.string() + " -o " + grouped.string());
  ASSERT_EQ(regrouped.exit_code, 0) << regrouped.err;
  EXPECT_NE(regrouped.err.find("each one range (40.50 KiB in layer 0), Q4_0 rows grouped"),
            std::string::npos)
      << regrouped.err;
  EXPECT_NE(strata("inspect -m " + grouped.string()).out.find("Q4_0 rows grouped"),
            std::string::npos);
  for (const char* arena : {" --arena 25%", ""}) {
    const auto grouped_text = strata("run -m " + grouped.string() + generate + arena);
    ASSERT_EQ(grouped_text.exit_code, 0) << grouped_text.err;
    EXPECT_EQ(grouped_text.out, stacked_text.out) << arena;
  }
}

// split writes gguf-split's parts; every command opens them by the first one's name, and the
// model generates the same text from them, resident and streaming.
TEST(Cli, SplitModelGeneratesTheSameText) {
  const fs::path dir = scratch() / "split";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string prefix = (dir / "tiny").string();
  const auto split = strata("split -m " + kModel + " -o " + prefix + " --max-size 12M");
  ASSERT_EQ(split.exit_code, 0) << split.err;
  const std::string first = prefix + "-00001-of-00003.gguf";
  EXPECT_NE(split.err.find("wrote 3 parts: " + first), std::string::npos) << split.err;
  const std::string inspected = strata("inspect -m " + first).out;
  EXPECT_NE(inspected.find("in 3 parts"), std::string::npos) << inspected;
  EXPECT_NE(inspected.find("part 3/3        " + prefix + "-00003-of-00003.gguf"), std::string::npos)
      << inspected;
  const std::string generate = " -p 'def fibonacci(n):' -n 24 --temp 0";
  const auto one_file = strata("run -m " + kModel + generate);
  for (const char* arena : {" --arena 25%", ""}) {
    const auto parts = strata("run -m " + first + generate + arena);
    ASSERT_EQ(parts.exit_code, 0) << parts.err;
    EXPECT_EQ(parts.out, one_file.out) << arena;
  }
  const auto second = strata("run -m " + prefix + "-00002-of-00003.gguf" + generate);
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_NE(last_line(second.err).find("part 2 of a model split in 3 files: open the first part"),
            std::string::npos)
      << second.err;
  fs::remove_all(dir);
}

TEST(Cli, FitPredictorThenStreamWithIt) {
  const fs::path dir = scratch() / "predictor";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string text = (dir / "text.txt").string();
  {
    std::ofstream out(text);
    for (int i = 0; i < 20; ++i)
      out << "int fibonacci(int n) { return n < 2 ? n : fibonacci(n - 1) + fibonacci(n - 2); }\n";
  }
  const std::string predictor = (dir / "tiny.predictor").string();
  const auto fit = strata("fit-predictor -m " + kModel + " -f " + text + " -o " + predictor);
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  EXPECT_NE(fit.err.find("fitted on"), std::string::npos) << fit.err;
  const std::string generate = " -p 'def fibonacci(n):' -n 24 --temp 0";
  const auto resident = strata("run -m " + kModel + generate);
  const auto predicted =
      strata("run -m " + kModel + generate + " --arena 25% --predictor " + predictor);
  ASSERT_EQ(predicted.exit_code, 0) << predicted.err;
  EXPECT_EQ(predicted.out, resident.out);
  // Read-ahead off, hits depend on the policy alone: the estimates keep other units.
  const std::string plain = generate + " --arena 25% --readahead 0";
  const auto hits = [](const std::string& err) {
    const size_t from = err.find("experts: ");
    return from == std::string::npos ? err : err.substr(from, err.find(" | ", from) - from);
  };
  const auto with_estimates = strata("run -m " + kModel + plain + " --predictor " + predictor);
  const auto history_only = strata("run -m " + kModel + plain + " --cache-policy nextuse");
  ASSERT_EQ(with_estimates.exit_code, 0) << with_estimates.err;
  EXPECT_NE(hits(with_estimates.err), hits(history_only.err)) << hits(history_only.err);
  const auto without =
      strata("run -m " + kModel + " --arena 25% --cache-policy predicted -p hi -n 1");
  EXPECT_EQ(without.exit_code, 1);
  EXPECT_NE(last_line(without.err).find("needs a next-expert predictor"), std::string::npos)
      << without.err;
  const auto not_one =
      strata("run -m " + kModel + " --arena 25% --predictor " + kModel + " -p hi -n 1");
  EXPECT_EQ(not_one.exit_code, 1);
  EXPECT_NE(last_line(not_one.err).find("not a next-expert predictor"), std::string::npos)
      << not_one.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace strata

// Ctrl-C and SIGTERM as a user sends them (base/interrupt.h): each writer is started as a child
// and signalled at seeded random points of its run, once or twice; whatever the moment, it ends
// with 130 / 143 and its output directory as it was before (no *.tmp-*, *.partial-*, half
// directories or parts, the files it would have replaced intact), or it had finished (exit 0,
// the complete output); the input is never touched. `run` stops and still reports and writes
// its files; `chat` ends cleanly.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "cli_runner.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

using testing::RunningStrata;

const std::string kModel = std::string(STRATA_SOURCE_DIR) + "/models/strata-tiny-moe-q4_0.gguf";
const std::string kSynthetic =
    std::string(STRATA_SOURCE_DIR) + "/tests/golden/synthetic/models/tiny-qwen3moe-q4_0.gguf";

std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Every file under `dir` (relative path -> bytes), directories as entries of their own.
std::map<std::string, std::string> contents(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    files[fs::relative(entry.path(), dir).string()] =
        entry.is_directory() ? "<directory>" : file_bytes(entry.path());
  return files;
}

// A command that writes into a directory of its own, and what must stay as it was.
struct Writer {
  std::string name;
  std::function<std::vector<std::string>(const fs::path& out)> arguments;
  // Put into the output directory before each run: what the user had (replaced only when the
  // command completes, with --force).
  std::map<std::string, std::string> existing;
  std::vector<std::string> inputs;  // files the command reads: never changed
};

void write_existing(const fs::path& dir, const std::map<std::string, std::string>& files) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& [name, bytes] : files) std::ofstream(dir / name, std::ios::binary) << bytes;
}

// Runs `writer` to the end once, then interrupted at seeded random points of its work (from the
// moment its handlers are installed to its end; the first run's point counts from the spawn and
// may fall before main()): each outcome must be "completed" (exit 0, the complete output) or
// "interrupted" (130 or 143, the directory as it was).
void check_interrupted_runs(const Writer& writer, uint64_t seed) {
  SCOPED_TRACE(writer.name);
  std::map<std::string, std::string> inputs;
  for (const std::string& path : writer.inputs) inputs[path] = file_bytes(path);
  const fs::path base = testing::scratch() / ("interrupt-" + writer.name);
  const fs::path complete_dir = base / "complete";
  write_existing(complete_dir, writer.existing);
  using Clock = std::chrono::steady_clock;
  const auto spawned = Clock::now();
  RunningStrata complete(writer.arguments(complete_dir));
  ASSERT_TRUE(complete.wait_until_catching(SIGINT)) << complete.err();
  const auto catching = Clock::now();
  const auto completed = complete.wait();
  const auto ended = Clock::now();
  const auto seconds = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  const double whole = seconds(ended - spawned), work = seconds(ended - catching);
  ASSERT_EQ(completed.exit_code, 0) << completed.err;
  const auto expected = contents(complete_dir);

  int stopped_by_handler = 0;
  std::mt19937_64 random(seed);
  for (int run = 0; run < 6; ++run) {
    const int signal_number = run % 2 == 0 ? SIGINT : SIGTERM;
    // The last two runs send a second signal right after the first: the handler's own cleanup.
    const bool twice = run >= 4;
    const bool from_spawn = run == 0;
    const double delay =
        std::uniform_real_distribution<double>(0, 1.1 * (from_spawn ? whole : work))(random);
    SCOPED_TRACE(::testing::Message()
                 << "run " << run << ": signal " << signal_number << " after " << delay << " s"
                 << (from_spawn ? " of its spawn" : " of its handlers")
                 << (twice ? ", twice" : ""));
    const fs::path dir = base / ("run-" + std::to_string(run));
    write_existing(dir, writer.existing);
    RunningStrata child(writer.arguments(dir));
    if (!from_spawn) child.wait_until_catching(SIGINT);
    std::this_thread::sleep_for(std::chrono::duration<double>(delay));
    child.signal(signal_number);
    if (twice) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      child.signal(signal_number);
    }
    const auto outcome = child.wait();
    const auto left = contents(dir);
    if (outcome.exit_code == 0) {
      EXPECT_EQ(left, expected) << outcome.err;
    } else if (outcome.exit_code == -signal_number) {
      // Before main() installed the handlers (the first few ms of a process): the default
      // action ended it before it could write anything.
      EXPECT_EQ(left, writer.existing);
      EXPECT_EQ(outcome.err, "");
    } else {
      EXPECT_EQ(outcome.exit_code, 128 + signal_number) << outcome.err;
      EXPECT_EQ(testing::last_line(outcome.err), "strata: interrupted") << outcome.err;
      ++stopped_by_handler;
      // Nothing new, and what the user had as it was: outputs appear only when complete.
      EXPECT_EQ(left, writer.existing);
    }
  }
  // The seeded moments include some in the middle of the work (which the handlers stop).
  EXPECT_GT(stopped_by_handler, 0);
  for (const auto& [path, bytes] : inputs) EXPECT_TRUE(file_bytes(path) == bytes) << path;
}

TEST(Interrupt, QuantizeLeavesNothingBehind) {
  check_interrupted_runs(
      {"quantize",
       [](const fs::path& out) {
         return std::vector<std::string>{
             "quantize", "-m", kModel,    "--experts", "q8_0",
             "-t",       "2",  "--force", "-o",        (out / "experts.gguf").string()};
       },
       {{"experts.gguf", "the user's earlier file"}},
       {kModel}},
      1);
}

TEST(Interrupt, RepackLeavesNothingBehind) {
  check_interrupted_runs({"repack",
                          [](const fs::path& out) {
                            return std::vector<std::string>{
                                "repack",  "-m", kModel,
                                "--force", "-o", (out / "units.gguf").string()};
                          },
                          {{"units.gguf", "the user's earlier file"}},
                          {kModel}},
                         2);
}

TEST(Interrupt, SplitLeavesNoPart) {
  check_interrupted_runs({"split",
                          [](const fs::path& out) {
                            return std::vector<std::string>{
                                "split", "-m",      kModel, "--parts",
                                "4",     "--force", "-o",   (out / "part").string()};
                          },
                          {{"part-00002-of-00004.gguf", "the user's earlier part"}},
                          {kModel}},
                         3);
}

TEST(Interrupt, MakeModelLeavesNothingBehind) {
  check_interrupted_runs({"make-model",
                          [](const fs::path& out) {
                            return std::vector<std::string>{"make-model",
                                                            "--preset",
                                                            "small",
                                                            "--type",
                                                            "q4_0",
                                                            "--stats-tokens",
                                                            "0",
                                                            "-t",
                                                            "2",
                                                            "-o",
                                                            (out / "synthetic.gguf").string()};
                          },
                          {{"notes.txt", "the user's other file"}},
                          {}},
                         4);
}

// A small suite over a text the test writes: windows of the synthetic tiny model.
std::string write_suite(const fs::path& dir) {
  fs::create_directories(dir / "docs");
  std::string text;
  for (int i = 0; i < 40; ++i) text += "The baker opened his shop before the sun was up. ";
  std::ofstream(dir / "docs" / "prose.jsonl")
      << nlohmann::json{{"id", "p0"}, {"domain", "prose"}, {"text", text}}.dump() << "\n";
  const std::string suite = (dir / "suite.json").string();
  const auto made = testing::strata(
      "eval make-suite --eval-dir " + (dir / "docs").string() + " --vocab " + kSynthetic +
      " --windows 6 --prompt 8 --scored 24 --seed 1 --force -o " + suite);
  EXPECT_EQ(made.exit_code, 0) << made.err;
  return suite;
}

TEST(Interrupt, EvalSaveRefLeavesNoHalfDirectory) {
  const std::string suite = write_suite(testing::scratch() / "interrupt-suite");
  check_interrupted_runs(
      {"save-ref",
       [suite](const fs::path& out) {
         return std::vector<std::string>{
             "eval",     "run", "--suite", suite,        "-m",
             kSynthetic, "-t",  "2",       "--save-ref", (out / "reference").string()};
       },
       {{"notes.txt", "the user's other file"}},
       {kSynthetic, suite}},
      5);
}

// What --ref-logits makes of a directory that a crash left without its manifest.
TEST(Interrupt, RefLogitsRefusesAnIncompleteDirectory) {
  const fs::path dir = testing::scratch() / "interrupt-incomplete";
  const std::string suite = write_suite(dir);
  const fs::path reference = dir / "reference";
  fs::remove_all(reference);
  auto outcome = testing::strata("eval run --suite " + suite + " -m " + kSynthetic +
                                 " -t 2 --save-ref " + reference.string());
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  fs::remove(reference / "reference.json");
  const auto stored = nlohmann::json::parse(file_bytes(suite)).at("windows");
  fs::remove(reference / (stored.back().at("id").get<std::string>() + ".logits.bin"));
  outcome = testing::strata("eval run --suite " + suite + " -m " + kSynthetic +
                            " -t 2 --ref-logits " + reference.string());
  EXPECT_EQ(outcome.exit_code, 1);
  EXPECT_NE(testing::last_line(outcome.err).find("not a complete reference"), std::string::npos)
      << outcome.err;
  EXPECT_EQ(outcome.out, "");  // refused before scoring anything
}

// `run` stops between tokens on Ctrl-C, prints its summary and still writes --stats and --warm.
TEST(Interrupt, RunStopsAndKeepsItsReport) {
  const fs::path dir = testing::scratch() / "interrupt-run";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string stats = (dir / "stats.json").string(), warm = (dir / "warm.json").string();
  // Greedy decoding of this small model loops without an end-of-text token: it runs to -n.
  const std::string prompt = "def fibonacci(n):";
  RunningStrata child({"run", "-m", kModel, "-p", prompt, "-n", "100000", "--ctx", "8192", "--temp",
                       "0", "--arena", "50%", "-t", "2", "--stats", stats, "--warm", warm});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (child.out().size() < prompt.size() + 20 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  child.signal(SIGINT);
  const auto outcome = child.wait();
  EXPECT_EQ(outcome.exit_code, 130) << outcome.err;
  EXPECT_EQ(testing::last_line(outcome.err), "strata: interrupted");
  EXPECT_NE(outcome.err.find("| generated "), std::string::npos) << outcome.err;
  EXPECT_NE(outcome.err.find("experts: "), std::string::npos) << outcome.err;
  const auto record = nlohmann::json::parse(file_bytes(stats));
  EXPECT_TRUE(record.at("interrupted").get<bool>());
  EXPECT_GT(record.at("decode_tokens").get<int64_t>(), 0);
  EXPECT_LT(record.at("decode_tokens").get<int64_t>(), 8000);  // stopped well before the end
  EXPECT_TRUE(fs::exists(warm));
  EXPECT_EQ(contents(dir).size(), 2u);  // no temporaries beside them
}

// chat says how to leave; Ctrl-C at the prompt ends it like an empty line, with the summary;
// SIGTERM ends it with 143.
TEST(Interrupt, ChatLeavesOnCtrlCAtThePromptWithTimings) {
  for (const int signal_number : {SIGINT, SIGTERM}) {
    SCOPED_TRACE(signal_number);
    RunningStrata child({"chat", "-m", kModel, "-n", "8", "--temp", "0", "-t", "2"});
    child.write_input("Hello\n");
    // The second prompt: the reply is done and the chat waits for input.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    auto prompts = [&] {
      const std::string err = child.err();
      size_t n = 0;
      for (size_t at = err.find("> "); at != std::string::npos; at = err.find("> ", at + 2)) ++n;
      return n;
    };
    while (prompts() < 2 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    child.signal(signal_number);
    const auto outcome = child.wait();
    EXPECT_EQ(outcome.exit_code, signal_number == SIGINT ? 0 : 143) << outcome.err;
    EXPECT_EQ(outcome.err.rfind("empty line, Ctrl-D or Ctrl-C to quit; Ctrl-C during a reply "
                                "stops it\n",
                                0),
              0u)
        << outcome.err;
    EXPECT_TRUE(std::regex_search(outcome.err, std::regex("\\| generated [0-9]+ tokens")))
        << outcome.err;
    EXPECT_FALSE(outcome.out.empty());
  }
}

// Ctrl-C during a reply stops that reply and the chat goes on to the next prompt, where an empty
// line ends it.
TEST(Interrupt, ChatCtrlCStopsTheReplyNotTheChat) {
  // The synthetic model's greedy replies loop to the end of the context: thousands of tokens.
  RunningStrata child(
      {"chat", "-m", kSynthetic, "-n", "100000", "--ctx", "8192", "--temp", "0", "-t", "2"});
  child.write_input("Hello\n");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (child.out().size() < 40 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  child.signal(SIGINT);
  child.write_input("\n");
  const auto outcome = child.wait();
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  const std::regex summary("\\| generated ([0-9]+) tokens");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(outcome.err, match, summary)) << outcome.err;
  EXPECT_LT(std::stoll(match[1]), 8000) << "the reply was not stopped";
  EXPECT_EQ(outcome.err.find("end of the context"), std::string::npos) << outcome.err;
  EXPECT_NE(outcome.err.find("> > "), std::string::npos) << "no prompt after the reply";
}

}  // namespace
}  // namespace strata

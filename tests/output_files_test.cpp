// Nothing the user has is lost (base/output_path.h, as the strata binary applies it): no
// command writes over one of its inputs, whether the output names it, a symlink to it or a
// hard link of it; an existing file is replaced only with --force; a FIFO given as a model is
// one error line, never a hang. Every input here is a copy in the test's scratch directory.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli_runner.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

using testing::scratch;
using testing::strata;

const std::string kBundledModel =
    std::string(STRATA_SOURCE_DIR) + "/models/strata-tiny-moe-q4_0.gguf";

// The file's bytes, or "" where there is none (a FIFO holds no bytes).
std::string contents(const fs::path& path) {
  std::error_code error;
  if (!fs::is_regular_file(path, error)) return "";
  std::string bytes(fs::file_size(path), '\0');
  std::ifstream(path, std::ios::binary).read(bytes.data(), std::streamsize(bytes.size()));
  return bytes;
}

// Every name under `dir`, so that a temporary left behind shows.
std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    names.insert(fs::relative(entry.path(), dir).string());
  return names;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// The inputs the commands below read, made once: copies of the bundled model, a prompt, a
// token list, a text, a suite over one document, and a trace and a run record made from them.
class OutputFiles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = scratch() / "output-files";
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "docs");
    fs::copy_file(kBundledModel, dir_ / "model.gguf");
    std::ofstream(dir_ / "prompt.txt") << "def fibonacci(n):";
    std::ofstream(dir_ / "tokens.json") << "[1, 2, 3, 4]";
    {
      std::ofstream text(dir_ / "text.txt");
      for (int i = 0; i < 8; ++i) text << "int fibonacci(int n) { return n < 2 ? n : n - 1; }\n";
    }
    std::ofstream(dir_ / "docs" / "prose.jsonl")
        << R"({"id": "p0", "domain": "prose", "text": "The quick brown fox jumps over the lazy )"
        << R"(dog near the river bank while the children watch the boats go by."})"
        << "\n";
    const std::pair<std::string, fs::path> made[] = {
        {"eval make-suite --eval-dir " + path("docs") + " --vocab " + path("model.gguf") +
             " --windows 1 --prompt 4 --scored 4 -o " + path("suite.json"),
         dir_ / "suite.json"},
        {"trace -m " + path("model.gguf") + " -p hi -n 2 -o " + path("trace.bin"),
         dir_ / "trace.bin"},
        {"eval run --suite " + path("suite.json") + " -m " + path("model.gguf") + " -o " +
             path("record.json"),
         dir_ / "record.json"},
    };
    for (const auto& [arguments, output] : made) {
      const auto outcome = strata(arguments);
      ASSERT_EQ(outcome.exit_code, 0) << arguments << "\n" << outcome.err;
      ASSERT_TRUE(fs::exists(output)) << arguments;
    }
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static std::string path(const std::string& name) { return (dir_ / name).string(); }
  // `command` with every {name} of an input made above replaced by its path.
  static std::string with_inputs(std::string command) {
    const std::pair<const char*, const char*> inputs[] = {
        {"{model}", "model.gguf"}, {"{tokens}", "tokens.json"}, {"{text}", "text.txt"},
        {"{suite}", "suite.json"}, {"{record}", "record.json"}, {"{trace}", "trace.bin"},
        {"{docs}", "docs"}};
    for (const auto& [placeholder, name] : inputs)
      command = replaced(command, placeholder, path(name));
    return command;
  }

  static fs::path dir_;
};

fs::path OutputFiles::dir_;

// A command that writes, made to write over one of its inputs.
struct Writer {
  std::string command;  // {input}: the input; {out}: what the command is told to write
  std::string source;   // the input's file among those made above
  std::string what;     // how the error names the input
  // The file the command writes, in the case's directory; {out} is that file, or with
  // `out_prefix` the directory ("" ) or the path before the file's own suffix.
  std::string out_file;
  std::optional<std::string> out_prefix = std::nullopt;
};

const Writer kWriters[] = {
    {"run -m {input} -p hi -n 1 --stats {out}", "model.gguf", "the model", "stats.json"},
    {"run -m {input} -p hi -n 1 --arena 50% --warm {out}", "model.gguf", "the model", "warm.json"},
    {"run -m {model} -f {input} -n 1 --stats {out}", "prompt.txt", "the prompt file", "stats.json"},
    {"chat -m {input} --warm {out} < /dev/null", "model.gguf", "the model", "warm.json"},
    {"logits -m {input} --tokens {tokens} --out {out}", "model.gguf", "the model", "logits.bin"},
    {"logits -m {model} --tokens {input} --out {out}", "tokens.json", "the token file", "l.bin"},
    {"trace -m {input} -p hi -n 1 -o {out}", "model.gguf", "the model", "t.trace"},
    {"trace -m {model} --teacher-forced {input} -o {out}", "text.txt", "the text", "t.trace"},
    {"fit-predictor -m {input} -f {text} -o {out}", "model.gguf", "the model", "p.gguf"},
    {"fit-predictor -m {model} -f {input} -o {out}", "text.txt", "the text", "p.gguf"},
    {"bench -m {input} -o {out}", "model.gguf", "the model", "bench.json"},
    {"bench -m {input} --plot {out}", "model.gguf", "the model", "bench.svg"},
    {"make-model --vocab {input} --stats-tokens 0 -o {out}", "model.gguf", "the vocabulary",
     "made.gguf"},
    {"cachesim --trace {input} -o {out}", "trace.bin", "the trace", "sim.md"},
    {"cachesim --trace {input} --json {out}", "trace.bin", "the trace", "sim.json"},
    {"cachesim --trace {input} --plot {out}", "trace.bin", "the trace", "sim.svg"},
    {"eval make-suite --eval-dir {docs} --vocab {input} --windows 1 --prompt 4 --scored 4 -o {out}",
     "model.gguf", "the vocabulary", "suite.json"},
    {"eval tokens --suite {input} -o {out}", "suite.json", "the suite", "prose-000.tokens.json",
     ""},
    {"eval run --suite {input} -m {model} -o {out}", "suite.json", "the suite", "run.json"},
    {"eval run --suite {suite} -m {input} -o {out}", "model.gguf", "the model", "run.json"},
    {"eval run --suite {suite} -m {input} --md {out}", "model.gguf", "the model", "run.md"},
    {"eval run --suite {suite} -m {input} --plot {out}", "model.gguf", "the model", "run.svg"},
    {"eval run --suite {suite} -m {input} --save-ref {out}", "model.gguf", "the model",
     "prose-000.logits.bin", ""},
    {"eval compare {input} {record} -o {out}", "record.json", "the record", "compare.json"},
    {"eval compare {record} {input} --md {out}", "record.json", "the record", "compare.md"},
    {"eval table {input} -o {out}", "record.json", "the record", "table.json"},
    {"eval table {input} --md {out}", "record.json", "the record", "table.md"},
    {"eval table {input} --curve {out}", "record.json", "the record", "curve.svg"},
    {"eval table {input} --bars {out}", "record.json", "the record", "bars.svg"},
    // --force replaces existing files, never an input.
    {"quantize -m {input} --experts q8_0 --force -o {out}", "model.gguf", "the model", "q8.gguf"},
    {"repack -m {input} --force -o {out}", "model.gguf", "the model", "units.gguf"},
    {"split -m {input} --parts 2 --force -o {out}", "model.gguf", "the model",
     "tiny-00001-of-00002.gguf", "tiny"},
};

enum class Route { kName, kSymlink, kHardLink };

TEST_F(OutputFiles, NoCommandWritesOverItsInput) {
  int n_case = 0;
  for (const Writer& writer : kWriters) {
    const std::string original = contents(dir_ / writer.source);
    for (const Route route : {Route::kName, Route::kSymlink, Route::kHardLink}) {
      const fs::path case_dir = dir_ / ("case-" + std::to_string(n_case++));
      fs::create_directories(case_dir);
      const fs::path out_file = case_dir / writer.out_file;
      // By name the input is where the output goes; else beside it, linked from there.
      const fs::path input =
          route == Route::kName ? out_file : case_dir / ("input-" + writer.source);
      fs::copy_file(dir_ / writer.source, input);
      if (route == Route::kSymlink) fs::create_symlink(input, out_file);
      if (route == Route::kHardLink) fs::create_hard_link(input, out_file);
      const std::string out = !writer.out_prefix ? out_file.string()
                              : writer.out_prefix->empty()
                                  ? case_dir.string()
                                  : (case_dir / *writer.out_prefix).string();
      const std::string command =
          with_inputs(replaced(replaced(writer.command, "{input}", input.string()), "{out}", out));
      const std::set<std::string> before = listing(case_dir);
      const auto outcome = strata(command);
      EXPECT_EQ(outcome.exit_code, 1) << command;
      EXPECT_EQ(outcome.err, "strata: " + out_file.string() + ": is an input of this command (" +
                                 writer.what + " " + input.string() +
                                 "); refusing to overwrite it\n")
          << command;
      EXPECT_TRUE(contents(input) == original) << command;
      EXPECT_EQ(listing(case_dir), before) << command;
      fs::remove_all(case_dir);
    }
  }
}

// A command that writes a file and can run to the end here in a few seconds.
struct WriterRun {
  std::string command;  // {out}: the output
  std::string out_file;
  bool out_is_directory = false;
};

const WriterRun kRuns[] = {
    {"run -m {model} -p hi -n 2 --stats {out}", "stats.json"},
    {"logits -m {model} --tokens {tokens} --out {out}", "logits.bin"},
    {"trace -m {model} -p hi -n 2 -o {out}", "t.trace"},
    {"fit-predictor -m {model} -f {text} --horizon 2 -o {out}", "p.gguf"},
    {"bench -m {model} --prompt-tokens 4 -n 2 -r 3 -o {out}", "bench.json"},
    {"bench -m {model} --prompt-tokens 4 -n 2 -r 3 --plot {out}", "bench.svg"},
    {"make-model --stats-tokens 0 -o {out}", "made.gguf"},
    {"cachesim --trace {trace} -o {out}", "sim.md"},
    {"cachesim --trace {trace} --json {out}", "sim.json"},
    {"cachesim --trace {trace} --plot {out}", "sim.svg"},
    {"eval make-suite --eval-dir {docs} --vocab {model} --windows 1 --prompt 4 --scored 4 -o {out}",
     "suite.json"},
    {"eval tokens --suite {suite} -o {out}", "prose-000.tokens.json", true},
    {"eval run --suite {suite} -m {model} -o {out}", "run.json"},
    {"eval run --suite {suite} -m {model} --md {out}", "run.md"},
    {"eval run --suite {suite} -m {model} --save-ref {out}", "reference.json", true},
    {"eval compare {record} {record} --plot {out}", "compare.svg"},
    {"eval table {record} --bars {out}", "bars.svg"},
    {"quantize -m {model} --experts q8_0 -o {out}", "q8.gguf"},
    {"repack -m {model} -o {out}", "units.gguf"},
};

TEST_F(OutputFiles, AnExistingFileIsReplacedOnlyWithForce) {
  for (const WriterRun& run : kRuns) {
    const fs::path case_dir = dir_ / "existing";
    fs::create_directories(case_dir);
    const fs::path out_file = case_dir / run.out_file;
    std::ofstream(out_file) << "the user's";
    const std::string command = with_inputs(replaced(
        run.command, "{out}", run.out_is_directory ? case_dir.string() : out_file.string()));
    const auto refused = strata(command);
    EXPECT_EQ(refused.exit_code, 1) << command;
    EXPECT_EQ(refused.err, "strata: " + out_file.string() + ": exists; --force replaces it\n")
        << command;
    EXPECT_EQ(contents(out_file), "the user's") << command;
    EXPECT_EQ(listing(case_dir), std::set<std::string>{run.out_file}) << command;
    const auto forced = strata(command + " --force");
    EXPECT_EQ(forced.exit_code, 0) << command << "\n" << forced.err;
    EXPECT_NE(contents(out_file), "the user's") << command;
    fs::remove_all(case_dir);
  }
}

TEST_F(OutputFiles, SplitPartsAreReplacedOnlyWithForce) {
  const fs::path case_dir = dir_ / "split";
  fs::create_directories(case_dir);
  const std::string command =
      with_inputs("split -m {model} --parts 2 -o " + (case_dir / "tiny").string());
  ASSERT_EQ(strata(command).exit_code, 0);
  const fs::path second = case_dir / "tiny-00002-of-00002.gguf";
  const std::string written = contents(second);
  std::ofstream(case_dir / "tiny-00001-of-00002.gguf") << "the user's";
  const auto refused = strata(command);
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_EQ(refused.err, "strata: " + (case_dir / "tiny-00001-of-00002.gguf").string() +
                             ": exists; --force replaces it\n");
  EXPECT_EQ(contents(case_dir / "tiny-00001-of-00002.gguf"), "the user's");
  const auto forced = strata(command + " --force");
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_EQ(contents(second), written);
  EXPECT_NE(contents(case_dir / "tiny-00001-of-00002.gguf"), "the user's");
  fs::remove_all(case_dir);
}

// Usage accumulates across runs in one --warm file: it is updated without --force.
TEST_F(OutputFiles, TheWarmFileIsUpdatedWithoutForce) {
  const std::string warm = path("usage.json");
  const std::string command = with_inputs("run -m {model} -p hi -n 2 --arena 50% --warm " + warm);
  ASSERT_EQ(strata(command).exit_code, 0);
  const std::string first = contents(warm);
  const auto again = strata(command);
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(contents(warm), first);
  // No other output may be it: it is read at the start.
  const auto stats = strata(command + " --force --stats " + warm);
  EXPECT_EQ(stats.exit_code, 1);
  EXPECT_EQ(stats.err, "strata: " + warm + ": is an input of this command (the warm-start file " +
                           warm + "); refusing to overwrite it\n");
  fs::remove(warm);
}

TEST_F(OutputFiles, DevicesAndFifosAreWrittenInPlaceDirectoriesRefused) {
  const auto to_null = strata(with_inputs("run -m {model} -p hi -n 1 --stats /dev/null"));
  EXPECT_EQ(to_null.exit_code, 0) << to_null.err;
  struct stat null_device {};
  ASSERT_EQ(::stat("/dev/null", &null_device), 0);
  EXPECT_TRUE(S_ISCHR(null_device.st_mode));
  // A model too, but not one make-model must read back before it is in place.
  const auto model_to_null = strata(with_inputs("repack -m {model} -o /dev/null"));
  EXPECT_EQ(model_to_null.exit_code, 0) << model_to_null.err;
  const auto made_to_null = strata("make-model -o /dev/null");
  EXPECT_EQ(made_to_null.exit_code, 1);
  EXPECT_EQ(made_to_null.err,
            "strata: /dev/null: not a regular file; make-model writes a model file\n");
  ASSERT_EQ(::stat("/dev/null", &null_device), 0);
  EXPECT_TRUE(S_ISCHR(null_device.st_mode));
  // Several outputs may go to one device, never to one file.
  EXPECT_EQ(
      strata(with_inputs("cachesim --trace {trace} --json /dev/null --plot /dev/null")).exit_code,
      0);
  const auto twice = strata(with_inputs("cachesim --trace {trace} --json " + path("x.json") +
                                        " --plot " + path("x.json")));
  EXPECT_EQ(twice.exit_code, 1);
  EXPECT_EQ(twice.err, "strata: " + path("x.json") + ": named for two outputs\n");
  EXPECT_FALSE(fs::exists(path("x.json")));

  const fs::path fifo = dir_ / "results.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const fs::path received = dir_ / "received.json";
  const auto piped =
      testing::shell("cat " + fifo.string() + " > " + received.string() + " & " + STRATA_BINARY +
                     with_inputs(" cachesim --trace {trace} --json ") + fifo.string() + " && wait");
  EXPECT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(contents(received).rfind("{", 0), 0u) << contents(received);
  EXPECT_TRUE(fs::is_fifo(fifo));
  fs::remove(fifo);
  fs::remove(received);

  const auto directory = strata(with_inputs("run -m {model} -p hi -n 1 --stats " + dir_.string()));
  EXPECT_EQ(directory.exit_code, 1);
  EXPECT_EQ(directory.err, "strata: " + dir_.string() + ": is a directory\n");
  EXPECT_EQ(directory.out, "");
}

// A FIFO where a regular file must be: open(2) would wait for a writer that never comes.
TEST_F(OutputFiles, AFifoAsModelOrOtherFileIsOneLineNeverAHang) {
  const fs::path fifo = dir_ / "model.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string f = fifo.string();
  for (const std::string& arguments : {
           "run -m " + f + " -p hi",
           "inspect -m " + f,
           "logits -m " + f + " --tokens {tokens} --out /dev/null",
           "bench -m " + f,
           "tokenize -m " + f + " -p hi",
           "run -m {model} -p hi --arena 50% --predictor " + f,
           "run -m {model} -p hi --arena 50% --warm " + f,
           "cachesim --trace " + f,
           "eval run --suite " + f + " -m {model}",
           "eval table " + f,
       }) {
    const auto outcome = testing::strata_within(20, with_inputs(arguments));
    EXPECT_EQ(outcome.exit_code, 1) << arguments << "\n" << outcome.err;
    EXPECT_EQ(outcome.err, "strata: " + f + ": not a regular file\n") << arguments;
  }
  fs::remove(fifo);
}

// A text read whole may come through a pipe: standard input, or a FIFO.
TEST_F(OutputFiles, TextsMayComeThroughPipes) {
  for (const char* tokens : {"/dev/stdin", "-"}) {
    const auto piped =
        testing::shell("cat " + path("tokens.json") + " | " + STRATA_BINARY +
                       with_inputs(" logits -m {model} --out /dev/null --tokens ") + tokens);
    EXPECT_EQ(piped.exit_code, 0) << tokens << "\n" << piped.err;
  }
  const auto prompt = testing::shell("cat " + path("prompt.txt") + " | " + STRATA_BINARY +
                                     with_inputs(" run -m {model} -n 1 -f /dev/stdin"));
  EXPECT_EQ(prompt.exit_code, 0) << prompt.err;
  EXPECT_EQ(prompt.out.rfind("def fibonacci(n):", 0), 0u) << prompt.out;
}

}  // namespace
}  // namespace strata

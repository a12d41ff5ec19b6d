// What a newcomer meets in the first minutes: --help with defaults, --version, llama.cpp's
// spellings of common flags, errors that point to the flag wanted, notes said once and only
// where they apply, inputs longer than the context refused before anything is printed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "cli_runner.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

using testing::last_line;
using testing::scratch;
using testing::strata;

const std::string kModel = std::string(STRATA_SOURCE_DIR) + "/models/strata-tiny-moe-q4_0.gguf";

// The entry of `help` that documents `flag`: its line and the description's lines under it.
std::string help_entry(const std::string& help, const std::string& flag) {
  const std::regex named("^  (-[-a-z]+,)*" + flag + "( |,|$)");
  std::istringstream lines(help);
  std::string entry;
  bool inside = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("  -", 0) == 0) {
      if (inside) break;
      inside = std::regex_search(line, named);
    }
    if (inside) entry += line + "\n";
  }
  return entry;
}

TEST(CliConventions, HelpShowsEachFlagsDefault) {
  const std::pair<std::string, std::vector<std::pair<std::string, std::string>>> cases[] = {
      {"run",
       {{"--temp", "0.8"},
        {"-n", "128"},
        {"-c", "min(trained, 4096)"},
        {"--io-threads", "2"},
        {"--prefill-chunk", "256"},
        {"--readahead", "top-k"},
        {"-t", "one per core"}}},
      {"logits", {{"-c", "the number of tokens"}}},
      {"bench", {{"-r", "3"}}},
      {"eval run", {{"--moce-protect", "3"}}},
  };
  for (const auto& [command, flags] : cases) {
    const auto outcome = strata(command + " --help");
    ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
    for (const auto& [flag, shown] : flags) {
      const std::string entry = help_entry(outcome.out, flag);
      EXPECT_NE(entry.find("(default: " + shown + ")"), std::string::npos)
          << command << " " << flag << ":\n"
          << entry;
    }
  }
  // The value's type, not the validators' wording.
  EXPECT_NE(help_entry(strata("run --help").out, "--moce-protect").find("--moce-protect INT "),
            std::string::npos);
}

TEST(CliConventions, VersionIsOneLine) {
  const auto outcome = strata("--version");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_TRUE(std::regex_match(
      outcome.out, std::regex("strata ([0-9a-f]{7,}(-dirty)?|unknown), [A-Za-z]+ build, "
                              "(scalar|avx2|avx2\\+avx512vnni) kernels, CUDA: (not )?built\n")))
      << outcome.out;
}

TEST(CliConventions, LlamaCppSpellingsOfContextAndOutput) {
  const auto run = strata("run -m " + kModel + " -p hi --ctx-size 4 -n 10 --temp 0");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("note: stopped at the end of the context (4 tokens; --ctx)"),
            std::string::npos)
      << run.err;
  const fs::path tokens = scratch() / "conventions-tokens.json";
  const fs::path logits = scratch() / "conventions-logits.bin";
  std::ofstream(tokens) << "[1, 2, 3]";
  fs::remove(logits);
  const auto written =
      strata("logits -m " + kModel + " --tokens " + tokens.string() + " -o " + logits.string());
  ASSERT_EQ(written.exit_code, 0) << written.err;
  EXPECT_EQ(fs::file_size(logits), 3u * 16384u * sizeof(float));
}

TEST(CliConventions, ShareOfMemoryPointsToTheArena) {
  const auto outcome = strata("run -m " + kModel + " -p hi --mem 25%");
  EXPECT_EQ(outcome.exit_code, 1);
  const std::string line = last_line(outcome.err);
  EXPECT_EQ(line.rfind("strata: --mem 25%: ", 0), 0u) << line;
  EXPECT_NE(line.find("use --arena 25%"), std::string::npos) << line;
  EXPECT_EQ(outcome.out, "");
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The bundled model's units take three small reads: repack helps, and says so once however
// many sessions a command opens (eval run: the candidate's and the reference's, quiet ones).
// A file written by repack --grouped gains nothing more from it.
TEST(CliConventions, RepackNoteOnceAndOnlyWhereItApplies) {
  const fs::path dir = scratch() / "conventions-eval";
  fs::remove_all(dir);
  fs::create_directories(dir / "docs");
  {
    std::ofstream docs(dir / "docs" / "code.jsonl");
    std::string text;
    for (int i = 0; i < 20; ++i) text += "def f" + std::to_string(i) + "(x): return x + 1\\n";
    docs << "{\"id\": \"d0\", \"domain\": \"code\", \"text\": \"" << text << "\"}\n";
  }
  const std::string suite = (dir / "suite.json").string();
  const auto made = strata("eval make-suite --eval-dir " + (dir / "docs").string() + " --vocab " +
                           kModel + " --windows 1 --prompt 8 --scored 8 --seed 1 -o " + suite);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string note = "note: `strata repack";
  const auto eval =
      strata("eval run --suite " + suite + " -m " + kModel + " --arena 25% --ref-arena 50%");
  ASSERT_EQ(eval.exit_code, 0) << eval.err;
  EXPECT_EQ(count(eval.err, note), 1) << eval.err;
  const fs::path grouped = dir / "grouped.gguf";
  const auto repacked = strata("repack --grouped -m " + kModel + " -o " + grouped.string());
  ASSERT_EQ(repacked.exit_code, 0) << repacked.err;
  const auto run = strata("run -m " + grouped.string() + " -p hi -n 4 --arena 25%");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(count(run.err, note), 0) << run.err;
  fs::remove_all(dir);
}

// The trained context of the bundled model, as inspect reports it.
int64_t trained_context() {
  const std::string out = strata("inspect -m " + kModel).out;
  std::smatch match;
  return std::regex_search(out, match, std::regex("trained context +([0-9]+)"))
             ? std::stoll(match[1])
             : 0;
}

// A text of about `n_words` tokens or more.
fs::path long_text(const std::string& name, int n_words) {
  const fs::path path = scratch() / name;
  std::ofstream out(path);
  for (int i = 0; i < n_words; ++i) out << "word" << i << " ";
  return path;
}

TEST(CliConventions, PromptLongerThanTheContextIsRefusedBeforeItIsEchoed) {
  const fs::path text = long_text("conventions-long.txt", 100);
  const auto short_context = strata("run -m " + kModel + " -f " + text.string() + " --ctx 32");
  EXPECT_EQ(short_context.exit_code, 1);
  EXPECT_EQ(short_context.out, "");
  EXPECT_TRUE(std::regex_match(
      last_line(short_context.err),
      std::regex("strata: the prompt has [0-9,]+ tokens but the context holds 32 \\(--ctx; the "
                 "model was trained on [0-9,]+\\)")))
      << short_context.err;
  // At the trained context, nothing invites a longer one.
  const int64_t trained = trained_context();
  ASSERT_GT(trained, 0);
  const fs::path longer = long_text("conventions-longer.txt", int(trained));
  const auto full =
      strata("run -m " + kModel + " -f " + longer.string() + " --ctx " + std::to_string(trained));
  EXPECT_EQ(full.exit_code, 1);
  EXPECT_EQ(full.out, "");
  const std::string line = last_line(full.err);
  EXPECT_NE(line.find("tokens but the context holds"), std::string::npos) << line;
  EXPECT_EQ(line.find("--ctx"), std::string::npos) << line;
}

TEST(CliConventions, TraceOfALongTextSaysHowToLimitIt) {
  const fs::path text = long_text("conventions-trace.txt", 100);
  const fs::path trace = scratch() / "conventions.trace";
  const std::string command = "trace -m " + kModel + " --teacher-forced " + text.string() +
                              " --ctx 32 -o " + trace.string();
  const auto refused = strata(command);
  EXPECT_EQ(refused.exit_code, 1);
  const std::string line = last_line(refused.err);
  EXPECT_EQ(line.rfind("strata: trace: " + text.string() + " has ", 0), 0u) << line;
  EXPECT_NE(line.find("; --limit 32 traces its first 32 tokens"), std::string::npos) << line;
  const auto limited = strata(command + " --limit 32");
  EXPECT_EQ(limited.exit_code, 0) << limited.err;
}

}  // namespace
}  // namespace strata

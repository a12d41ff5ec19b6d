// The two-bit tool chain on the bundled model as a user runs it: calibrate on text, quantize the
// experts to Q2_0 with the calibration, heal, prune; inspect says llama.cpp cannot read a Q2_0
// file; and every hostile input (too little text, a calibration of another model or truncated,
// --keep beyond the model, formats the tools do not apply to, an output over an input) is one
// error line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_runner.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

using testing::ErrorCases;
using testing::expect_one_line_errors;
using testing::scratch;
using testing::strata;

const std::string kModel = std::string(STRATA_SOURCE_DIR) + "/models/strata-tiny-moe-q4_0.gguf";
const std::string kText = std::string(STRATA_SOURCE_DIR) + "/README.md";
const std::string kOtherModel =
    std::string(STRATA_SOURCE_DIR) + "/tests/golden/synthetic/models/tiny-qwen3moe-q8_0.gguf";

class CalibCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = scratch() / "calib";
    fs::create_directories(dir_);
    const auto made = strata("calibrate -m " + kModel + " -f " + kText +
                             " --max-tokens 2000 --samples 32 -o " + file("tiny.calib"));
    ASSERT_EQ(made.exit_code, 0) << made.err;
    ASSERT_NE(made.err.find("calibrate: 1 documents, 2000 tokens"), std::string::npos) << made.err;
  }
  static std::string file(const std::string& name) { return (dir_ / name).string(); }
  static fs::path dir_;
};
fs::path CalibCli::dir_;

TEST_F(CalibCli, QuantizeHealAndPruneRun) {
  const auto q2 = strata("quantize -m " + kModel + " --experts q2_0 --calib " + file("tiny.calib") +
                         " -o " + file("q2.gguf"));
  ASSERT_EQ(q2.exit_code, 0) << q2.err;
  const auto inspect = strata("inspect -m " + file("q2.gguf"));
  EXPECT_NE(inspect.out.find("llama.cpp         cannot read this file: it holds tensors in "
                             "Strata's own formats [Q2_0 x24]"),
            std::string::npos)
      << inspect.out;
  EXPECT_EQ(strata("inspect -m " + kModel).out.find("cannot read"), std::string::npos);
  const auto healed = strata("heal -m " + file("q2.gguf") + " --calib " + file("tiny.calib") +
                             " -o " + file("q2-healed.gguf"));
  ASSERT_EQ(healed.exit_code, 0) << healed.err;
  EXPECT_NE(healed.err.find("layer  7: "), std::string::npos) << healed.err;
  const auto run = strata("run -m " + file("q2-healed.gguf") + " -p 'int main(' -n 4 --temp 0");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  const auto pruned = strata("prune -m " + kModel + " --calib " + file("tiny.calib") +
                             " --keep 75% -o " + file("pruned.gguf"));
  ASSERT_EQ(pruned.exit_code, 0) << pruned.err;
  EXPECT_NE(pruned.err.find("48 of 64 experts per layer"), std::string::npos) << pruned.err;
  EXPECT_NE(strata("inspect -m " + file("pruned.gguf")).out.find("48 routed"), std::string::npos);
}

TEST_F(CalibCli, HostileInputsAreOneLine) {
  const std::string calib = file("tiny.calib");
  {
    std::ifstream in(calib, std::ios::binary);
    std::vector<char> bytes(3000);
    in.read(bytes.data(), std::streamsize(bytes.size()));
    std::ofstream(file("truncated.calib"), std::ios::binary)
        .write(bytes.data(), std::streamsize(bytes.size()));
  }
  const ErrorCases cases = {
      {"calibrate -m " + kModel + " -f " + kText + " --max-tokens 100 -o " + file("x.calib"),
       "calibrate: the text gives 100 tokens; at least 1536 are needed"},
      {"calibrate -m " + kModel + " -f " + kText + " -o " + kModel, "the model"},
      {"calibrate -m " + kModel + " -f " + kText + " -o " + calib, "--force"},
      {"heal -m " + kOtherModel + " --calib " + calib + " -o " + file("x.gguf"),
       calib + ": a calibration of another model than " + kOtherModel},
      {"heal -m " + kModel + " --calib " + calib + " -o " + file("x.gguf"),
       "heal folds its scales into Q2_0 down projections; these experts are q4_0"},
      {"heal -m " + kModel + " --calib " + file("truncated.calib") + " -o " + file("x.gguf"),
       file("truncated.calib") + ": "},
      {"heal -m " + kModel + " --calib " + kModel + " -o " + file("x.gguf"),
       "not a Strata expert calibration file"},
      {"quantize -m " + kModel + " --experts q4_0 --calib " + calib + " -o " + file("x.gguf"),
       "quantize: --calib applies to --experts q2_0 only"},
      {"quantize -m " + kOtherModel + " --experts q2_0 --calib " + calib + " -o " + file("x.gguf"),
       "a calibration of another model than"},
      {"quantize -m " + kModel + " --experts q2_0 --calib " + calib + " -o " + calib,
       "the calibration"},
      {"prune -m " + kModel + " --calib " + calib + " --keep 65 -o " + file("x.gguf"),
       "--keep 65 is outside 8..64"},
      {"prune -m " + kModel + " --calib " + calib + " --keep 7 -o " + file("x.gguf"),
       "--keep 7 is outside 8..64"},
      {"prune -m " + kModel + " --calib " + calib + " --keep many -o " + file("x.gguf"),
       "prune: --keep many: give a count of experts (48) or a share (75%)"},
      {"prune -m " + kModel + " --calib " + calib + " --keep 4.5 -o " + file("x.gguf"),
       "a count of experts is a whole number"},
  };
  expect_one_line_errors(cases);
  EXPECT_FALSE(fs::exists(file("x.gguf")));
  EXPECT_FALSE(fs::exists(file("x.calib")));
}

}  // namespace
}  // namespace strata

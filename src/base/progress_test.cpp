#include "base/progress.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

namespace strata {
namespace {

// What the bar wrote to `file`, from the start.
std::string written(std::FILE* file) {
  std::fflush(file);
  std::rewind(file);
  std::string text;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), file)) > 0;) text.append(buffer, n);
  return text;
}

// The bar redraws at most five times a second: waiting past that makes advance() draw.
void advance_and_draw(ProgressBar& bar, uint64_t bytes) {
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  bar.advance(bytes);
}

// The line the terminal shows last: what follows the last carriage return.
std::string last_drawn(const std::string& text) { return text.substr(text.rfind('\r') + 1); }

TEST(ProgressBar, EndsAtOneHundredPercentWhenTheWorkCompletes) {
  // Totals that are estimates, short and long of the work done (quantize sizes its bar by the
  // input file, whose size the output only roughly matches).
  for (const uint64_t done : {uint64_t(982), uint64_t(1500)}) {
    std::FILE* file = std::tmpfile();
    ASSERT_NE(file, nullptr);
    {
      ProgressBar bar("quantize", 1000, file);
      advance_and_draw(bar, done);
      bar.finish();
    }
    const std::string text = written(file);
    std::fclose(file);
    EXPECT_NE(text.find(done < 1000 ? " 98.2%" : "100.0%"), std::string::npos) << text;
    const std::string last = last_drawn(text);
    EXPECT_EQ(last.rfind("quantize [##############################] 100.0%", 0), 0u) << last;
    EXPECT_EQ(last.back(), '\n') << last;
  }
}

TEST(ProgressBar, ErasesItsLineWhenTheWorkDoesNotComplete) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  {
    ProgressBar bar("repack", 1000, file);
    advance_and_draw(bar, 400);
  }  // an error returned before finish()
  const std::string text = written(file);
  std::fclose(file);
  EXPECT_NE(text.find(" 40.0%"), std::string::npos) << text;
  const std::string erase = "\r\033[K";
  ASSERT_GE(text.size(), erase.size());
  EXPECT_EQ(text.substr(text.size() - erase.size()), erase) << text;
  EXPECT_EQ(text.find('\n'), std::string::npos) << text;
}

}  // namespace
}  // namespace strata

#include "eval/run_record.h"

#include <gtest/gtest.h>

#include <string>

namespace strata::eval {
namespace {

const std::string kWindow =
    R"({"id": "code-000", "domain": "code", "positions": 16, "kld_sum": 0.25, )"
    R"("cand_nll_sum": 30.5, "top1_count": 14})";
const std::string kRecord = R"({"tool": "strata eval", "candidate": {"model": "m.gguf"}, )"
                            R"("windows": [)" +
                            kWindow + "]}";

std::string replaced(const std::string& from, const std::string& to) {
  std::string text = kRecord;
  text.replace(text.find(from), from.size(), to);
  return text;
}

TEST(RunRecord, ReadsEveryWindowsSums) {
  const auto record = parse_run_record(kRecord, "a.json");
  ASSERT_TRUE(record.ok()) << record.status().message();
  ASSERT_EQ(record.value().windows.size(), 1u);
  const RunWindow& w = record.value().windows[0];
  EXPECT_EQ(w.id, "code-000");
  EXPECT_EQ(w.domain, "code");
  EXPECT_EQ(w.positions, 16);
  EXPECT_EQ(w.kld_sum, 0.25);
  EXPECT_EQ(w.cand_nll_sum, 30.5);
  EXPECT_EQ(w.top1_count, 14);
  EXPECT_EQ(record.value().path, "a.json");
}

// Each is one line naming the file. Numbers out of an integer's range were converted with
// undefined behaviour, and an id with a newline broke the message in two.
TEST(RunRecord, RefusesBrokenRecordsWithOneLine) {
  for (const std::string& bad :
       {std::string("not json"), replaced("strata eval\"", "strata bench\""),
        replaced(R"({"model": "m.gguf"})", R"("m.gguf")"), replaced("[", "{\"w\": ").append("}"),
        replaced("\"positions\": 16", "\"positions\": 0"),
        replaced("\"positions\": 16", "\"positions\": 1e300"),
        replaced("\"positions\": 16", "\"positions\": \"16\""),
        replaced("\"top1_count\": 14", "\"top1_count\": 17"), replaced("\"kld_sum\": 0.25, ", ""),
        replaced("\"code-000\"", "\"code\\n000\""), replaced(kWindow, ""),
        replaced(kWindow, "7")}) {
    const auto record = parse_run_record(bad, "bad.json");
    ASSERT_FALSE(record.ok()) << bad;
    const std::string& message = record.status().message();
    EXPECT_EQ(message.rfind("bad.json: ", 0), 0u) << message;
    EXPECT_EQ(message.find_first_of("\n\r"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace strata::eval

#include "eval/run_table.h"

#include <gtest/gtest.h>

#include "eval/report.h"

namespace strata::eval {
namespace {

RunRecord record(const std::string& path, double arena_share, double moce, double kld,
                 uint64_t hits, uint64_t misses) {
  RunRecord r;
  r.path = path;
  r.json = {{"tool", "strata eval"},
            {"suite", {{"sha256", "abc"}}},
            {"reference", {{"model", {{"path", "ref.gguf"}}}}},
            {"candidate",
             {{"model", {{"path", "/models/m.gguf"}, {"sha256", "x"}}},
              {"mode", "decode"},
              {"memory_budget_bytes", 0},
              {"arena_share", arena_share},
              {"moce_bonus", moce},
              {"moce_protect", 3}}},
            {"candidate_stats",
             {{"decode_tokens", 100},
              {"decode_tokens_per_s", 500.0},
              {"decode_experts",
               {{"hits", hits},
                {"readahead_hits", 0},
                {"late_readaheads", 0},
                {"misses", misses},
                {"bytes_read", 2000000}}}}},
            {"groups",
             {{{"name", "code"}},
              {{"name", "all"},
               {"positions", 100},
               {"kld_mean", kld},
               {"kld_mean_ci", {kld / 2, kld * 2}},
               {"kld_p99", kld * 10},
               {"top1_agreement", 0.9},
               {"top1_ci", {0.85, 0.95}},
               {"ppl_ref", 10.0},
               {"ppl_cand", 11.0}}}}};
  return r;
}

TEST(RunTable, RowsCarryTheRecordsNumbersAndTheirBudget) {
  const auto rows =
      table_rows({record("a.json", 0.25, 0, 0, 30, 70), record("b.json", 0, 0.5, 0.01, 0, 0)});
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  const TableRow& a = rows.value()[0];
  EXPECT_EQ(a.budget, "--arena 25%");
  EXPECT_EQ(a.model, "m.gguf");
  EXPECT_DOUBLE_EQ(a.hit_rate, 0.3);
  RunRecord late = record("l.json", 0.25, 0, 0, 30, 50);
  late.json["candidate_stats"]["decode_experts"]["late_readaheads"] = 20;
  EXPECT_DOUBLE_EQ(table_rows({late}).value()[0].hit_rate, 0.3);  // late is not a hit
  EXPECT_DOUBLE_EQ(a.mb_per_token, 0.02);
  const TableRow& b = rows.value()[1];
  EXPECT_EQ(b.budget, "resident");
  EXPECT_DOUBLE_EQ(b.hit_rate, 1.0);  // no claims: every expert resident
  EXPECT_DOUBLE_EQ(b.moce_bonus, 0.5);
  EXPECT_DOUBLE_EQ(b.kld_hi, 0.02);
  std::string md = table_markdown(rows.value());
  EXPECT_NE(md.find("| m.gguf | --arena 25% | 0 | 0 (0–0) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 30.0 % | 0.020 | 500 |"), std::string::npos) << md;
  RunRecord batch = record("c.json", 0, 0, 0.01, 0, 0);
  batch.json["candidate_stats"]["decode_tokens"] = 0;
  md = table_markdown(table_rows({batch}).value());
  EXPECT_NE(md.find("| 11.000 | – | – | – |"), std::string::npos) << md;
}

TEST(RunTable, PriceCurveHasALinePerBudget) {
  const auto rows = table_rows({record("a", 0.25, 0, 0, 30, 70), record("b", 0.25, 1, 0.1, 60, 40),
                                record("c", 0.5, 0, 0, 50, 50)});
  ASSERT_TRUE(rows.ok());
  const std::string svg = price_curve_svg(rows.value());
  EXPECT_NE(svg.find("--arena 25%"), std::string::npos);
  EXPECT_NE(svg.find("--arena 50%"), std::string::npos);
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
}

TEST(RunTable, AReferenceAndItsStoredRowsAreOneReference) {
  RunRecord stored = record("b.json", 0.25, 0, 0, 1, 1);
  stored.json["reference"]["logits_dir"] = "/tmp/ref";
  EXPECT_TRUE(table_rows({record("a.json", 0.25, 0, 0, 1, 1), stored}).ok());
}

TEST(RunTable, RefusesRecordsOfAnotherSuiteOrReference) {
  RunRecord other_suite = record("b.json", 0.25, 0, 0, 1, 1);
  other_suite.json["suite"]["sha256"] = "def";
  auto rows = table_rows({record("a.json", 0.25, 0, 0, 1, 1), other_suite});
  ASSERT_FALSE(rows.ok());
  EXPECT_NE(rows.status().message().find("b.json was scored on another suite"), std::string::npos);
  RunRecord other_reference = record("c.json", 0.25, 0, 0, 1, 1);
  other_reference.json["reference"]["model"]["path"] = "other.gguf";
  rows = table_rows({record("a.json", 0.25, 0, 0, 1, 1), other_reference});
  ASSERT_FALSE(rows.ok());
  EXPECT_NE(rows.status().message().find("another reference"), std::string::npos);
  RunRecord incomplete = record("d.json", 0.25, 0, 0, 1, 1);
  incomplete.json.erase("candidate_stats");
  rows = table_rows({incomplete});
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.status().message().rfind("d.json: not a complete", 0), 0u);
}

// Fields of another type, or missing, are refused with an error: nlohmann's accessors would
// throw or read out of bounds.
TEST(RunTable, FieldsOfAnotherTypeAreRefusedNotThrown) {
  const auto refused = [](RunRecord r) {
    const auto rows = table_rows({r});
    EXPECT_FALSE(rows.ok()) << r.json.dump();
    if (!rows.ok()) {
      EXPECT_EQ(rows.status().message().rfind("e.json: ", 0), 0u);
    }
  };
  RunRecord numeric_suite = record("e.json", 0.25, 0, 0, 1, 1);
  numeric_suite.json["suite"]["sha256"] = 5;
  EXPECT_TRUE(table_rows({numeric_suite}).ok());
  EXPECT_FALSE(table_rows({record("a.json", 0.25, 0, 0, 1, 1), numeric_suite}).ok());
  RunRecord no_groups = record("e.json", 0.25, 0, 0, 1, 1);
  no_groups.json["groups"] = nlohmann::json::array();
  refused(no_groups);
  RunRecord budget_string = record("e.json", 0.25, 0, 0, 1, 1);
  budget_string.json["candidate"]["memory_budget_bytes"] = "1G";
  budget_string.json["candidate"]["model"] = 7;
  refused(budget_string);
}

TEST(RunTable, LabelsSkipFieldsOfAnotherType) {
  nlohmann::json candidate = record("a.json", 0.25, 0, 0, 1, 1).json["candidate"];
  EXPECT_EQ(short_label(candidate), "m.gguf, decode, --arena 25%");
  candidate["arena_share"] = "25%";
  candidate["mode"] = 3;
  candidate.erase("model");
  EXPECT_EQ(short_label(candidate), "unknown model, ");
  EXPECT_EQ(short_label(nlohmann::json("not an object")), "unknown model, ");
}

}  // namespace
}  // namespace strata::eval

// `strata eval table`: several `strata eval run` records side by side, one row each — the form
// a price list of lossy knobs takes (what each costs in KLD and top-1 beside what it buys in
// hit rate and speed) — and two plots:
//   * the price curve: mean KLD against the decode hit rate, one line per memory budget,
//     through the records of that budget in the order given (e.g. rising --moce bonuses);
//   * bars: mean KLD per record with its bootstrap interval (e.g. one record per format).
// Records must share their suite and reference, or their numbers would not be comparable.
#pragma once

#include <strata/status.h>

#include <string>
#include <vector>

#include "eval/comparison.h"

namespace strata::eval {

struct TableRow {
  std::string path;
  std::string label;   // the candidate in a few words (short_label)
  std::string model;   // file name
  std::string budget;  // "resident", "--arena 25%" or "--mem 1.00 GiB"
  double moce_bonus = 0;
  int64_t positions = 0;
  double kld_mean = 0, kld_lo = 0, kld_hi = 0, kld_p99 = 0;
  double top1 = 0, top1_lo = 0, top1_hi = 0;
  double ppl_ref = 0, ppl_cand = 0;
  int64_t decode_tokens = 0;
  double decode_tokens_per_s = 0;
  double hit_rate = 0;      // hits + timely read-ahead hits per expert claim in decode steps (a
                            // late read-ahead is not one); 1 for a resident model
  double mb_per_token = 0;  // expert bytes read per decoded token
};

// The rows, in record order; an error when a record is malformed or the records do not share
// their suite and reference.
Result<std::vector<TableRow>> table_rows(const std::vector<RunRecord>& records);

std::string table_markdown(const std::vector<TableRow>& rows);
std::string table_json(const std::vector<TableRow>& rows, const RunRecord& first,
                       const std::vector<std::string>& command_line);
std::string price_curve_svg(const std::vector<TableRow>& rows);
std::string kld_bars_svg(const std::vector<TableRow>& rows);

}  // namespace strata::eval

// `strata bench`'s summaries written out: each (variant, prompt length) as a JSON result, a
// Markdown table row and a bar of the SVG chart (include/strata/benchmark.h).
#pragma once

#include <strata/benchmark.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lab/benchmark_summary.h"

namespace strata {

// The record's "results": an object per variant and prompt length. Scripts and committed
// records read these keys.
nlohmann::json benchmark_results_json(const std::vector<VariantSummary>& variants);
// Medians and ranges, a row per variant and prompt length.
std::string benchmark_markdown(const std::vector<VariantSummary>& variants);
// Decode as a share of its bound, and the share of it the disk was busy.
std::string benchmark_chart_svg(const std::vector<VariantSummary>& variants,
                                const BenchmarkOptions& options);

}  // namespace strata

// Small self-contained SVG charts: title, axes with "nice" ticks (1, 2, 2.5 or 5 times a power
// of ten) and labels, grid lines and a legend; a line chart (one polyline with point markers
// per series) and a grouped bar chart (one bar per category and series, optional error bars).
// For figures the tools write (`strata cachesim --plot`, `strata eval --plot`); no external
// dependencies.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace strata {

struct ChartSeries {
  std::string name;
  std::vector<double> x;  // x.size() == y.size(); finite values
  std::vector<double> y;
};

struct LineChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::string x_suffix;  // appended to tick labels, e.g. "%"
  std::string y_suffix;
  // Axis ranges; unset ends follow the data, widened to the enclosing ticks.
  std::optional<double> x_min, x_max, y_min, y_max;
  std::vector<ChartSeries> series;
};

// A complete SVG document (UTF-8). Text is XML-escaped.
std::string render_line_chart_svg(const LineChart& chart);

struct BarSeries {
  std::string name;
  std::vector<double> values;  // one per category; finite
  // Error bars (e.g. a confidence interval): empty, or one low and one high end per category.
  std::vector<double> lo, hi;
};

struct BarChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::string y_suffix;
  std::vector<std::string> categories;  // left to right
  // The value axis always includes 0, where bars start; unset ends follow the data (values and
  // error bars), widened to the enclosing ticks.
  std::optional<double> y_min, y_max;
  std::vector<BarSeries> series;  // side by side within each category
};

std::string render_bar_chart_svg(const BarChart& chart);

}  // namespace strata

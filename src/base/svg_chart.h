// A small self-contained SVG line chart: title, axes with "nice" ticks (1, 2, 2.5 or 5 times a
// power of ten) and labels, grid lines, one polyline with point markers per series, and a
// legend. For figures the tools write (`strata cachesim --plot`); no external dependencies.
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

}  // namespace strata

#include "base/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/check.h"

namespace strata {
namespace {

constexpr double kWidth = 760, kHeight = 460;
constexpr double kLeft = 72, kTop = 48, kBottom = 392;  // the plot area, but for its right end
// The legend sits right of the plot: a line sample (56 px with its gaps), then the name at ~7
// px a character.
constexpr double kLegendSample = 56, kCharWidth = 7, kMinPlotRight = 420;
constexpr int kTargetTicks = 6;
// Tableau 10: distinguishable, and readable by most colour-blind viewers.
constexpr const char* kColors[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                   "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

struct Axis {
  double lo, hi, step;
  int decimals;
};

// Ticks every `step` over [lo, hi]; ends not fixed by the caller are rounded out to a tick.
Axis make_axis(double data_lo, double data_hi, std::optional<double> fixed_lo,
               std::optional<double> fixed_hi) {
  double lo = fixed_lo.value_or(data_lo), hi = fixed_hi.value_or(data_hi);
  if (!(lo < hi)) {  // one value, or no data: a unit-wide range around it
    const double middle = std::isfinite(lo) ? lo : 0.0;
    lo = middle - 0.5;
    hi = middle + 0.5;
  }
  const double raw = (hi - lo) / kTargetTicks;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * power;
  for (double multiple : {1.0, 2.0, 2.5, 5.0}) {
    if (multiple * power >= raw) {
      step = multiple * power;
      break;
    }
  }
  if (!fixed_lo) lo = std::floor(lo / step) * step;
  if (!fixed_hi) hi = std::ceil(hi / step) * step;
  int decimals = std::max(0, -int(std::floor(std::log10(step) + 1e-9)));
  if (std::fabs(step / std::pow(10.0, -decimals) - std::round(step / std::pow(10.0, -decimals))) >
      1e-9)
    ++decimals;  // 2.5 x 10^n needs one more digit
  return {lo, hi, step, decimals};
}

std::vector<double> ticks(const Axis& axis) {
  std::vector<double> values;
  const double first = std::ceil(axis.lo / axis.step - 1e-9) * axis.step;
  for (double v = first; v <= axis.hi + axis.step * 1e-9; v += axis.step)
    values.push_back(std::fabs(v) < axis.step * 1e-9 ? 0.0 : v);
  return values;
}

double to_pixel(double v, const Axis& axis, double from, double to) {
  return from + (v - axis.lo) / (axis.hi - axis.lo) * (to - from);
}

void draw_axes(std::string& svg, const LineChart& chart, const Axis& x, const Axis& y,
               double right) {
  svg += "<g class=\"grid\" stroke=\"#e0e0e0\" stroke-width=\"1\">\n";
  for (double v : ticks(x)) {
    const double px = to_pixel(v, x, kLeft, right);
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/>\n", px, kTop,
                       kBottom);
  }
  for (double v : ticks(y)) {
    const double py = to_pixel(v, y, kBottom, kTop);
    svg += fmt::format("<line x1=\"{1}\" y1=\"{0:.1f}\" x2=\"{2}\" y2=\"{0:.1f}\"/>\n", py, kLeft,
                       right);
  }
  svg += "</g>\n<g class=\"axes\" stroke=\"#000\" stroke-width=\"1\">\n";
  svg +=
      fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/>\n", kLeft, kBottom, right);
  svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n", kLeft, kBottom, kTop);
  svg += "</g>\n<g class=\"ticks\" fill=\"#000\">\n";
  for (double v : ticks(x))
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:.{}f}{}</text>\n",
                       to_pixel(v, x, kLeft, right), kBottom + 18, v, x.decimals,
                       escape(chart.x_suffix));
  for (double v : ticks(y))
    svg +=
        fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:.{}f}{}</text>\n", kLeft - 8,
                    to_pixel(v, y, kBottom, kTop) + 4, v, y.decimals, escape(chart.y_suffix));
  svg += "</g>\n";
  svg += fmt::format("<text class=\"x-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     (kLeft + right) / 2, kBottom + 44, escape(chart.x_label));
  svg += fmt::format(
      "<text class=\"y-label\" x=\"0\" y=\"0\" text-anchor=\"middle\" "
      "transform=\"translate({},{}) rotate(-90)\">{}</text>\n",
      kLeft - 52, (kTop + kBottom) / 2, escape(chart.y_label));
}

void draw_series(std::string& svg, const LineChart& chart, const Axis& x, const Axis& y,
                 double right) {
  for (size_t i = 0; i < chart.series.size(); ++i) {
    const ChartSeries& s = chart.series[i];
    const char* color = kColors[i % std::size(kColors)];
    std::string points;
    std::string markers;
    for (size_t j = 0; j < s.x.size(); ++j) {
      const double px = to_pixel(s.x[j], x, kLeft, right), py = to_pixel(s.y[j], y, kBottom, kTop);
      points += fmt::format("{}{:.1f},{:.1f}", j ? " " : "", px, py);
      markers += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\"/>\n", px, py);
    }
    svg += fmt::format(
        "<g class=\"series-group\" fill=\"{0}\">\n<polyline class=\"series\" fill=\"none\" "
        "stroke=\"{0}\" stroke-width=\"2\" points=\"{1}\"><title>{2}</title></polyline>\n{3}</g>\n",
        color, points, escape(s.name), markers);
    const double ly = kTop + 12 + 22 * double(i);
    svg += fmt::format(
        "<g class=\"legend\"><line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" "
        "stroke-width=\"2\"/><circle cx=\"{4}\" cy=\"{1}\" r=\"3.5\" fill=\"{3}\"/>"
        "<text x=\"{5}\" y=\"{6}\">{7}</text></g>\n",
        right + 20, ly, right + 48, color, right + 34, right + 56, ly + 4, escape(s.name));
  }
}

}  // namespace

std::string render_line_chart_svg(const LineChart& chart) {
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo;
  double y_lo = x_lo, y_hi = x_hi;
  for (const ChartSeries& s : chart.series) {
    STRATA_CHECK_EQ(s.x.size(), s.y.size());
    for (size_t j = 0; j < s.x.size(); ++j) {
      STRATA_CHECK(std::isfinite(s.x[j]) && std::isfinite(s.y[j]));
      x_lo = std::min(x_lo, s.x[j]);
      x_hi = std::max(x_hi, s.x[j]);
      y_lo = std::min(y_lo, s.y[j]);
      y_hi = std::max(y_hi, s.y[j]);
    }
  }
  const Axis x = make_axis(x_lo, x_hi, chart.x_min, chart.x_max);
  const Axis y = make_axis(y_lo, y_hi, chart.y_min, chart.y_max);
  std::string svg = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"{0}\" height=\"{1}\" fill=\"#fff\"/>\n"
      "<text class=\"title\" x=\"{2}\" y=\"28\" text-anchor=\"middle\" "
      "font-size=\"16\">{3}</text>\n",
      kWidth, kHeight, kWidth / 2, escape(chart.title));
  size_t longest_name = 0;
  for (const ChartSeries& s : chart.series) longest_name = std::max(longest_name, s.name.size());
  const double right =
      std::max(kMinPlotRight, kWidth - 12 - kLegendSample - kCharWidth * double(longest_name));
  draw_axes(svg, chart, x, y, right);
  draw_series(svg, chart, x, y, right);
  svg += "</svg>\n";
  return svg;
}

}  // namespace strata

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

// Horizontal grid lines, the y tick labels and the y label.
void draw_y_axis(std::string& svg, const Axis& y, double right, const std::string& label,
                 const std::string& suffix) {
  svg += "<g class=\"grid\" stroke=\"#e0e0e0\" stroke-width=\"1\">\n";
  for (double v : ticks(y)) {
    const double py = to_pixel(v, y, kBottom, kTop);
    svg += fmt::format("<line x1=\"{1}\" y1=\"{0:.1f}\" x2=\"{2}\" y2=\"{0:.1f}\"/>\n", py, kLeft,
                       right);
  }
  svg += "</g>\n<g class=\"ticks\" fill=\"#000\">\n";
  for (double v : ticks(y))
    svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:.{}f}{}</text>\n",
                       kLeft - 8, to_pixel(v, y, kBottom, kTop) + 4, v, y.decimals, escape(suffix));
  svg += "</g>\n";
  svg += fmt::format(
      "<text class=\"y-label\" x=\"0\" y=\"0\" text-anchor=\"middle\" "
      "transform=\"translate({},{}) rotate(-90)\">{}</text>\n",
      kLeft - 52, (kTop + kBottom) / 2, escape(label));
}

// The two axis lines and the x label.
void draw_frame(std::string& svg, double right, const std::string& x_label) {
  svg += "<g class=\"axes\" stroke=\"#000\" stroke-width=\"1\">\n";
  svg +=
      fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/>\n", kLeft, kBottom, right);
  svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n", kLeft, kBottom, kTop);
  svg += "</g>\n";
  svg += fmt::format("<text class=\"x-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     (kLeft + right) / 2, kBottom + 44, escape(x_label));
}

void draw_axes(std::string& svg, const LineChart& chart, const Axis& x, const Axis& y,
               double right) {
  svg += "<g class=\"grid\" stroke=\"#e0e0e0\" stroke-width=\"1\">\n";
  for (double v : ticks(x)) {
    const double px = to_pixel(v, x, kLeft, right);
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/>\n", px, kTop,
                       kBottom);
  }
  svg += "</g>\n<g class=\"ticks\" fill=\"#000\">\n";
  for (double v : ticks(x))
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:.{}f}{}</text>\n",
                       to_pixel(v, x, kLeft, right), kBottom + 18, v, x.decimals,
                       escape(chart.x_suffix));
  svg += "</g>\n";
  draw_y_axis(svg, y, right, chart.y_label, chart.y_suffix);
  draw_frame(svg, right, chart.x_label);
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

std::string svg_header(const std::string& title) {
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"{0}\" height=\"{1}\" fill=\"#fff\"/>\n"
      "<text class=\"title\" x=\"{2}\" y=\"28\" text-anchor=\"middle\" "
      "font-size=\"16\">{3}</text>\n",
      kWidth, kHeight, kWidth / 2, escape(title));
}

// The right end of the plot area: what the legend (the longest series name) leaves.
template <class Series>
double plot_right(const std::vector<Series>& series) {
  size_t longest_name = 0;
  for (const Series& s : series) longest_name = std::max(longest_name, s.name.size());
  return std::max(kMinPlotRight, kWidth - 12 - kLegendSample - kCharWidth * double(longest_name));
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
  std::string svg = svg_header(chart.title);
  const double right = plot_right(chart.series);
  draw_axes(svg, chart, x, y, right);
  draw_series(svg, chart, x, y, right);
  svg += "</svg>\n";
  return svg;
}

namespace {

// Bars fill this share of their category's width; the rest separates categories.
constexpr double kBarGroupShare = 0.7;

void draw_bars(std::string& svg, const BarChart& chart, const Axis& y, double right) {
  const double slot = (right - kLeft) / double(std::max<size_t>(1, chart.categories.size()));
  const double bar = slot * kBarGroupShare / double(std::max<size_t>(1, chart.series.size()));
  const double zero = to_pixel(std::clamp(0.0, y.lo, y.hi), y, kBottom, kTop);
  for (size_t i = 0; i < chart.series.size(); ++i) {
    const BarSeries& s = chart.series[i];
    const char* color = kColors[i % std::size(kColors)];
    svg += fmt::format("<g class=\"series-group\" fill=\"{}\">\n", color);
    for (size_t c = 0; c < s.values.size(); ++c) {
      const double x0 = kLeft + slot * (double(c) + (1 - kBarGroupShare) / 2) + bar * double(i);
      const double top = to_pixel(s.values[c], y, kBottom, kTop);
      svg += fmt::format(
          "<rect class=\"bar\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\">"
          "<title>{}: {}</title></rect>\n",
          x0, std::min(top, zero), bar * 0.9, std::fabs(zero - top), escape(s.name),
          escape(chart.categories[c]));
      if (s.lo.empty()) continue;
      const double mid = x0 + bar * 0.45, lo = to_pixel(s.lo[c], y, kBottom, kTop),
                   hi = to_pixel(s.hi[c], y, kBottom, kTop), cap = bar * 0.15;
      svg += fmt::format(
          "<path class=\"error-bar\" stroke=\"#000\" stroke-width=\"1.2\" fill=\"none\" "
          "d=\"M{0:.1f} {1:.1f}V{2:.1f}M{3:.1f} {1:.1f}H{4:.1f}M{3:.1f} {2:.1f}H{4:.1f}\"/>\n",
          mid, lo, hi, mid - cap, mid + cap);
    }
    svg += "</g>\n";
    const double ly = kTop + 12 + 22 * double(i);
    svg += fmt::format(
        "<g class=\"legend\"><rect x=\"{0}\" y=\"{1}\" width=\"28\" height=\"12\" "
        "fill=\"{2}\"/><text x=\"{3}\" y=\"{4}\">{5}</text></g>\n",
        right + 20, ly - 6, color, right + 56, ly + 4, escape(s.name));
  }
  svg += "<g class=\"categories\" fill=\"#000\">\n";
  for (size_t c = 0; c < chart.categories.size(); ++c)
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                       kLeft + slot * (double(c) + 0.5), kBottom + 18, escape(chart.categories[c]));
  svg += "</g>\n";
}

}  // namespace

std::string render_bar_chart_svg(const BarChart& chart) {
  double y_lo = 0, y_hi = 0;
  const auto include = [&](double v) {
    STRATA_CHECK(std::isfinite(v));
    y_lo = std::min(y_lo, v);
    y_hi = std::max(y_hi, v);
  };
  for (const BarSeries& s : chart.series) {
    STRATA_CHECK_EQ(s.values.size(), chart.categories.size());
    STRATA_CHECK(s.lo.size() == s.hi.size() && (s.lo.empty() || s.lo.size() == s.values.size()));
    for (double v : s.values) include(v);
    for (double v : s.lo) include(v);
    for (double v : s.hi) include(v);
  }
  const Axis y = make_axis(y_lo, y_hi, chart.y_min, chart.y_max);
  std::string svg = svg_header(chart.title);
  const double right = plot_right(chart.series);
  draw_y_axis(svg, y, right, chart.y_label, chart.y_suffix);
  draw_bars(svg, chart, y, right);
  draw_frame(svg, right, chart.x_label);
  svg += "</svg>\n";
  return svg;
}

}  // namespace strata

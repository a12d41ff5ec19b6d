#include "base/svg_chart.h"

#include <gtest/gtest.h>

#include <array>
#include <cctype>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace strata {
namespace {

// A strict checker for the XML subset an SVG file uses: one declaration, elements with quoted
// attributes (no duplicates), text with the five predefined entities or character references,
// properly nested, one root. Returns "" if well-formed, else what is wrong; counts elements
// by "name" and "name.class".
struct XmlCheck {
  std::string error;
  std::map<std::string, int> count;
  std::string root;
};

bool valid_entity(const std::string& s, size_t& i) {
  const size_t end = s.find(';', i);
  if (end == std::string::npos) return false;
  const std::string name = s.substr(i + 1, end - i - 1);
  i = end;
  if (name == "amp" || name == "lt" || name == "gt" || name == "quot" || name == "apos")
    return true;
  if (name.size() > 1 && name[0] == '#') {
    for (size_t j = 1; j < name.size(); ++j)
      if (!std::isdigit(static_cast<unsigned char>(name[j]))) return false;
    return true;
  }
  return false;
}

bool valid_text(const std::string& s) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<' || s[i] == '>') return false;
    if (s[i] == '&' && !valid_entity(s, i)) return false;
  }
  return true;
}

XmlCheck check_xml(const std::string& xml) {
  XmlCheck check;
  const std::string declaration = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  if (xml.rfind(declaration, 0) != 0) return {"no XML declaration"};
  std::vector<std::string> open;
  size_t i = declaration.size();
  bool closed_root = false;
  while (i < xml.size()) {
    const size_t lt = xml.find('<', i);
    const std::string text = xml.substr(i, lt == std::string::npos ? std::string::npos : lt - i);
    if (!valid_text(text)) return {"bad text: " + text};
    if (lt == std::string::npos) break;
    const size_t gt = xml.find('>', lt);
    if (gt == std::string::npos) return {"unterminated tag"};
    std::string tag = xml.substr(lt + 1, gt - lt - 1);
    i = gt + 1;
    if (!tag.empty() && tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) return {"mismatched </" + tag + ">"};
      open.pop_back();
      closed_root = open.empty();
      continue;
    }
    if (closed_root || (open.empty() && !check.root.empty())) return {"content after the root"};
    const bool self_closing = !tag.empty() && tag.back() == '/';
    if (self_closing) tag.pop_back();
    size_t p = 0;
    while (p < tag.size() && (std::isalnum(static_cast<unsigned char>(tag[p])) || tag[p] == '-'))
      ++p;
    const std::string name = tag.substr(0, p);
    if (name.empty()) return {"tag without a name"};
    std::map<std::string, std::string> attributes;
    while (p < tag.size()) {
      if (tag[p] == ' ') {
        ++p;
        continue;
      }
      const size_t eq = tag.find('=', p);
      if (eq == std::string::npos || eq + 1 >= tag.size() || tag[eq + 1] != '"')
        return {"unquoted attribute in <" + tag + ">"};
      const size_t close = tag.find('"', eq + 2);
      if (close == std::string::npos) return {"unterminated attribute in <" + tag + ">"};
      const std::string key = tag.substr(p, eq - p), value = tag.substr(eq + 2, close - eq - 2);
      if (key.empty() || key.find_first_of(" <&") != std::string::npos)
        return {"bad attribute name in <" + tag + ">"};
      if (!valid_text(value)) return {"bad attribute value " + value};
      if (!attributes.emplace(key, value).second) return {"duplicate attribute " + key};
      p = close + 1;
    }
    if (check.root.empty()) check.root = name;
    ++check.count[name];
    if (attributes.count("class")) ++check.count[name + "." + attributes["class"]];
    if (!self_closing) open.push_back(name);
    if (self_closing && open.empty()) closed_root = true;
  }
  if (!open.empty()) return {"unclosed <" + open.back() + ">"};
  return check;
}

LineChart hit_rate_chart() {
  LineChart chart;
  chart.title = "Hit rate <by> policy & size";
  chart.x_label = "arena size (% of units)";
  chart.y_label = "hit rate";
  chart.x_suffix = "%";
  chart.y_suffix = "%";
  chart.y_min = 0;
  chart.y_max = 100;
  chart.series = {{"lru", {10, 25, 50}, {20, 46.5, 71}},
                  {"lfu \"aged\"", {10, 25, 50}, {30, 55, 78}},
                  {"min", {10, 25, 50}, {50, 74, 90}}};
  return chart;
}

TEST(SvgChart, IsWellFormedWithOneLinePerSeries) {
  const std::string svg = render_line_chart_svg(hit_rate_chart());
  const XmlCheck check = check_xml(svg);
  ASSERT_EQ(check.error, "") << svg;
  EXPECT_EQ(check.root, "svg");
  EXPECT_EQ(check.count.at("polyline.series"), 3);
  EXPECT_EQ(check.count.at("g.legend"), 3);
  EXPECT_EQ(check.count.at("text.title"), 1);
  EXPECT_EQ(check.count.at("text.x-label"), 1);
  EXPECT_EQ(check.count.at("text.y-label"), 1);
  EXPECT_NE(svg.find("Hit rate &lt;by&gt; policy &amp; size"), std::string::npos);
  EXPECT_NE(svg.find("lfu &quot;aged&quot;"), std::string::npos);
}

TEST(SvgChart, TicksAreRoundNumbersCoveringTheRange) {
  const std::string svg = render_line_chart_svg(hit_rate_chart());
  const auto occurrences = [&](const std::string& label) {
    int n = 0;
    for (size_t at = svg.find(label); at != std::string::npos; at = svg.find(label, at + 1)) ++n;
    return n;
  };
  // y: 0, 20, ..., 100 (fixed range); x: the data's 10..50 by 10.
  for (const char* label : {">0%<", ">60%<", ">80%<", ">100%<", ">10%<", ">30%<", ">50%<"})
    EXPECT_EQ(occurrences(label), 1) << label;
  for (const char* label : {">20%<", ">40%<"}) EXPECT_EQ(occurrences(label), 2) << label;
  EXPECT_EQ(occurrences(">70%<"), 0);
}

TEST(SvgChart, HigherValuesAreDrawnHigher) {
  LineChart chart;
  chart.series = {{"up", {0, 1, 2}, {0, 5, 10}}};
  const std::string svg = render_line_chart_svg(chart);
  const size_t at = svg.find("points=\"") + 8;
  const std::string points = svg.substr(at, svg.find('"', at) - at);
  double x0, y0, x1, y1, x2, y2;
  ASSERT_EQ(std::sscanf(points.c_str(), "%lf,%lf %lf,%lf %lf,%lf", &x0, &y0, &x1, &y1, &x2, &y2),
            6);
  EXPECT_LT(x0, x1);
  EXPECT_LT(x1, x2);
  EXPECT_GT(y0, y1);  // SVG y grows downwards
  EXPECT_GT(y1, y2);
}

TEST(SvgChart, DegenerateDataStaysFinite) {
  for (const LineChart& chart :
       {LineChart{}, LineChart{"one point", "", "", "", "", {}, {}, {}, {}, {{"a", {3}, {3}}}},
        LineChart{"flat", "", "", "", "", {}, {}, {}, {}, {{"a", {0, 1e-6}, {2, 2}}}}}) {
    const std::string svg = render_line_chart_svg(chart);
    EXPECT_EQ(check_xml(svg).error, "");
    EXPECT_EQ(svg.find("nan"), std::string::npos) << svg;
    EXPECT_EQ(svg.find("inf"), std::string::npos) << svg;
  }
}

BarChart kld_chart() {
  BarChart chart;
  chart.title = "Mean KLD <per> domain & mode";
  chart.x_label = "domain";
  chart.y_label = "mean KLD (nats)";
  chart.categories = {"chat", "code", "json"};
  chart.series = {{"q4_0", {0.01, 0.02, 0.005}, {0.008, 0.017, 0.004}, {0.012, 0.024, 0.006}},
                  {"moce \"0.85\"", {0.03, 0.01, 0.002}, {}, {}}};
  return chart;
}

// The rect elements of class "bar" as (x, y, width, height), in document order.
std::vector<std::array<double, 4>> bars(const std::string& svg) {
  std::vector<std::array<double, 4>> out;
  const std::string tag = "<rect class=\"bar\" ";
  for (size_t at = svg.find(tag); at != std::string::npos; at = svg.find(tag, at + 1)) {
    std::array<double, 4> r{};
    EXPECT_EQ(
        std::sscanf(svg.c_str() + at + tag.size(),
                    "x=\"%lf\" y=\"%lf\" width=\"%lf\" height=\"%lf\"", &r[0], &r[1], &r[2], &r[3]),
        4);
    out.push_back(r);
  }
  return out;
}

TEST(SvgBarChart, IsWellFormedWithABarPerCategoryAndSeries) {
  const std::string svg = render_bar_chart_svg(kld_chart());
  const XmlCheck check = check_xml(svg);
  ASSERT_EQ(check.error, "") << svg;
  EXPECT_EQ(check.root, "svg");
  EXPECT_EQ(check.count.at("rect.bar"), 6);
  EXPECT_EQ(check.count.at("path.error-bar"), 3);  // only the first series has intervals
  EXPECT_EQ(check.count.at("g.legend"), 2);
  EXPECT_EQ(check.count.at("text.y-label"), 1);
  EXPECT_NE(svg.find("Mean KLD &lt;per&gt; domain &amp; mode"), std::string::npos);
  EXPECT_NE(svg.find("moce &quot;0.85&quot;"), std::string::npos);
  for (const char* category : {">chat<", ">code<", ">json<"})
    EXPECT_NE(svg.find(category), std::string::npos) << category;
}

TEST(SvgBarChart, HeightsAreProportionalToValuesFromACommonBaseline) {
  const auto r = bars(render_bar_chart_svg(kld_chart()));
  ASSERT_EQ(r.size(), 6u);
  // Series 0: 0.01, 0.02, 0.005 — all bars end at the zero line.
  EXPECT_NEAR(r[0][1] + r[0][3], r[1][1] + r[1][3], 1e-6);
  EXPECT_NEAR(r[1][3] / r[0][3], 2.0, 0.02);
  EXPECT_NEAR(r[2][3] / r[0][3], 0.5, 0.02);
  // Categories left to right; series side by side within a category.
  EXPECT_LT(r[0][0], r[1][0]);
  EXPECT_LT(r[1][0], r[2][0]);
  EXPECT_LT(r[0][0], r[3][0]);
  EXPECT_LT(r[3][0], r[1][0]);
}

TEST(SvgBarChart, NegativeValuesHangBelowZero) {
  BarChart chart;
  chart.categories = {"a", "b"};
  chart.series = {{"difference", {-1, 2}, {-1.5, 1}, {-0.5, 3}}};
  const auto r = bars(render_bar_chart_svg(chart));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_NEAR(r[0][1], r[1][1] + r[1][3], 1e-6);  // a's top is b's bottom: the zero line
  EXPECT_NEAR(r[1][3] / r[0][3], 2.0, 0.02);
}

TEST(SvgBarChart, DegenerateDataStaysFinite) {
  BarChart zeros;
  zeros.categories = {"only"};
  zeros.series = {{"zero", {0}, {0}, {0}}};
  for (const BarChart& chart : {BarChart{}, zeros}) {
    const std::string svg = render_bar_chart_svg(chart);
    EXPECT_EQ(check_xml(svg).error, "");
    EXPECT_EQ(svg.find("nan"), std::string::npos) << svg;
    EXPECT_EQ(svg.find("inf"), std::string::npos) << svg;
  }
}

TEST(SvgChart, CheckerRejectsMalformedXml) {
  const std::string head = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  for (const char* bad : {"<svg><g></svg>", "<svg a=1/>", "<svg>a & b</svg>", "<svg/><svg/>",
                          "<svg a=\"1\" a=\"2\"/>", "<svg><g></g>"})
    EXPECT_NE(check_xml(head + bad).error, "") << bad;
  EXPECT_EQ(check_xml(head + "<svg a=\"&lt;\"><g/>x &#38; y</svg>\n").error, "");
}

}  // namespace
}  // namespace strata

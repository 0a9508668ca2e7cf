#include "report/svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace coolbench::report::svg {

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += ch;
    }
  }
  return out;
}

std::string num(double v) {
  if (!std::isfinite(v)) return "0";
  std::string s = fmt::format("{:.2f}", v);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

double scale::operator()(double v) const {
  if (d1 == d0) return (r0 + r1) / 2;
  return r0 + (v - d0) * (r1 - r0) / (d1 - d0);
}

namespace {

/// The tick step as mantissa (1, 2, 5) × 10^exponent, kept apart so that tick
/// values are computed exactly (3 × 2 / 10, not 3 × 0.2).
struct tick_step {
  double mantissa;
  int exponent;
  [[nodiscard]] double at(double k) const {
    return exponent < 0 ? k * mantissa / std::pow(10.0, -exponent)
                        : k * mantissa * std::pow(10.0, exponent);
  }
};

tick_step step_for(double lo, double hi, int target) {
  const double raw = (hi - lo) / std::max(1, target);
  const int exponent = static_cast<int>(std::floor(std::log10(raw)));
  const double power = std::pow(10.0, exponent);
  for (const double m : {1.0, 2.0, 5.0}) {
    if (m * power >= raw) return {m, exponent};
  }
  return {1, exponent + 1};
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return {lo};
  const tick_step step = step_for(lo, hi, target);
  const double size = step.at(1);
  std::vector<double> ticks;
  for (double k = std::ceil(lo / size - 1e-9); step.at(k) <= hi + size * 1e-9; k += 1) {
    ticks.push_back(k == 0 ? 0.0 : step.at(k));
  }
  return ticks;
}

std::string tick_label(double value, double step) {
  const int decimals =
      step > 0 ? std::clamp(static_cast<int>(-std::floor(std::log10(step) + 1e-9)), 0, 9) : 3;
  return fmt::format("{:.{}f}", value, decimals);
}

std::pair<double, double> padded(double lo, double hi, double fraction) {
  if (!(hi > lo)) return {lo - 1, hi + 1};
  const double pad = (hi - lo) * fraction;
  return {lo - pad, hi + pad};
}

canvas::canvas(int width, int height, std::string_view label)
    : m_width(width), m_height(height), m_label(label) {}

void canvas::rect(double x, double y, double w, double h, std::string_view cls,
                  std::string_view title) {
  m_body += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" class="{}")", num(x), num(y),
                        num(std::max(0.0, w)), num(std::max(0.0, h)), cls);
  m_body += title.empty() ? "/>\n" : fmt::format("><title>{}</title></rect>\n", escape(title));
}

void canvas::line(double x1, double y1, double x2, double y2, std::string_view cls) {
  m_body += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" class="{}"/>)", num(x1), num(y1),
                        num(x2), num(y2), cls);
  m_body += '\n';
}

void canvas::path(std::string_view d, std::string_view cls, std::string_view title) {
  if (d.empty()) return;
  m_body += fmt::format(R"(<path d="{}" class="{}")", d, cls);
  m_body += title.empty() ? "/>\n" : fmt::format("><title>{}</title></path>\n", escape(title));
}

void canvas::circle(double cx, double cy, double r, std::string_view cls, std::string_view title) {
  m_body +=
      fmt::format(R"(<circle cx="{}" cy="{}" r="{}" class="{}")", num(cx), num(cy), num(r), cls);
  m_body += title.empty() ? "/>\n" : fmt::format("><title>{}</title></circle>\n", escape(title));
}

void canvas::text(double x, double y, std::string_view text, std::string_view cls,
                  std::string_view anchor) {
  m_body += fmt::format(R"(<text x="{}" y="{}" class="{}" text-anchor="{}">{}</text>)", num(x),
                        num(y), cls, anchor, escape(text));
  m_body += '\n';
}

void canvas::open_group(std::string_view cls) {
  m_body += fmt::format("<g class=\"{}\">\n", cls);
  ++m_open_groups;
}

void canvas::close_group() {
  if (m_open_groups == 0) return;
  m_body += "</g>\n";
  --m_open_groups;
}

std::string canvas::str() const {
  std::string out = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0}" height="{1}" viewBox="0 0 {0} {1}" role="img" aria-label="{2}">)",
      m_width, m_height, escape(m_label));
  out += fmt::format("\n<title>{}</title>\n", escape(m_label));
  out += m_body;
  for (int i = 0; i < m_open_groups; ++i) out += "</g>\n";
  return out + "</svg>\n";
}

plot_area make_area(double left, double top, double width, double height,
                    std::pair<double, double> x_range, std::pair<double, double> y_range) {
  plot_area a{left, top, width, height, {}, {}};
  a.x = scale{x_range.first, x_range.second, left, left + width};
  a.y = scale{y_range.first, y_range.second, top + height, top};  // up is larger
  return a;
}

namespace {

void draw_axis_ticks(canvas& c, const plot_area& area, bool horizontal) {
  const scale& s = horizontal ? area.x : area.y;
  const auto ticks = nice_ticks(s.d0, s.d1, horizontal ? 8 : 4);
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 0;
  for (const double t : ticks) {
    const double p = s(t);
    if (horizontal) {
      c.line(p, area.top, p, area.bottom(), "grid");
      c.line(p, area.bottom(), p, area.bottom() + 4, "tick");
      c.text(p, area.bottom() + 16, tick_label(t, step), "tick-label", "middle");
    } else {
      c.line(area.left, p, area.right(), p, "grid");
      c.line(area.left - 4, p, area.left, p, "tick");
      c.text(area.left - 6, p + 4, tick_label(t, step), "tick-label", "end");
    }
  }
}

}  // namespace

void draw_axes(canvas& c, const plot_area& area, std::string_view x_label, std::string_view y_label,
               bool x_ticks, bool y_ticks) {
  c.open_group("axis x-axis");
  if (x_ticks) draw_axis_ticks(c, area, true);
  c.line(area.left, area.bottom(), area.right(), area.bottom(), "domain");
  if (!x_label.empty()) {
    c.text(area.left + area.width / 2, area.bottom() + 34, x_label, "axis-title", "middle");
  }
  c.close_group();
  c.open_group("axis y-axis");
  if (y_ticks) draw_axis_ticks(c, area, false);
  c.line(area.left, area.top, area.left, area.bottom(), "domain");
  if (!y_label.empty()) c.text(area.left, area.top - 6, y_label, "axis-title", "start");
  c.close_group();
}

std::vector<column_range> min_max_columns(std::span<const double> xs, std::span<const double> ys,
                                          const plot_area& area) {
  const int columns = std::max(1, static_cast<int>(std::ceil(area.width)));
  std::vector<column_range> by_column(static_cast<std::size_t>(columns));
  const std::size_t n = std::min(xs.size(), ys.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isnan(xs[i]) || std::isnan(ys[i])) continue;
    const double offset = area.x(xs[i]) - area.left;
    if (offset < -0.5 || offset > area.width + 0.5) continue;
    const int col = std::clamp(static_cast<int>(offset), 0, columns - 1);
    auto& cr = by_column[static_cast<std::size_t>(col)];
    if (cr.count == 0) {
      cr = {col, ys[i], ys[i], 1};
    } else {
      cr.lo = std::min(cr.lo, ys[i]);
      cr.hi = std::max(cr.hi, ys[i]);
      ++cr.count;
    }
  }
  std::erase_if(by_column, [](const column_range& cr) { return cr.count == 0; });
  return by_column;
}

std::string column_strokes(const std::vector<column_range>& columns, const plot_area& area) {
  std::string d;
  d.reserve(columns.size() * 24);
  for (const auto& cr : columns) {
    const double x = area.left + cr.column + 0.5;
    const double top = area.y(cr.hi);
    const double bottom = std::max(area.y(cr.lo), top + 0.01);  // a dot with round caps
    d += fmt::format("M{} {}V{}", num(x), num(bottom), num(top));
  }
  return d;
}

}  // namespace coolbench::report::svg

// A small SVG writer for the HTML report: a canvas that collects elements,
// linear scales with readable ticks, axes, and the min/max-per-pixel-column
// decimation that keeps a million-sample plot to a few thousand elements.
// Decimation is for drawing only; statistics always see every sample.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace coolbench::report::svg {

/// `text` with &, <, >, " and ' escaped for XML text and attribute values.
[[nodiscard]] std::string escape(std::string_view text);

/// A coordinate or length with at most two decimals and no trailing zeros.
[[nodiscard]] std::string num(double v);

/// Maps [d0, d1] linearly onto [r0, r1]; a degenerate domain maps to the middle.
struct scale {
  double d0 = 0, d1 = 1, r0 = 0, r1 = 1;
  [[nodiscard]] double operator()(double v) const;
};

/// About `target` round tick values (1, 2 or 5 times a power of ten apart)
/// within [lo, hi].
[[nodiscard]] std::vector<double> nice_ticks(double lo, double hi, int target);

/// A tick's label with as many decimals as the tick step needs.
[[nodiscard]] std::string tick_label(double value, double step);

/// [lo, hi] widened by `fraction` of its width on both sides (by 1 when the
/// width is 0), so points on the edge stay visible.
[[nodiscard]] std::pair<double, double> padded(double lo, double hi, double fraction = 0.04);

/// One SVG image. Elements are written in the order added; `cls` is the CSS
/// class (the page's stylesheet gives colours), `title` a tooltip.
class canvas {
 public:
  canvas(int width, int height, std::string_view label);
  void rect(double x, double y, double w, double h, std::string_view cls,
            std::string_view title = {});
  void line(double x1, double y1, double x2, double y2, std::string_view cls);
  void path(std::string_view d, std::string_view cls, std::string_view title = {});
  void circle(double cx, double cy, double r, std::string_view cls, std::string_view title = {});
  /// anchor: "start", "middle" or "end".
  void text(double x, double y, std::string_view text, std::string_view cls,
            std::string_view anchor = "start");
  void open_group(std::string_view cls);
  void close_group();
  /// The whole <svg> element.
  [[nodiscard]] std::string str() const;

 private:
  int m_width;
  int m_height;
  int m_open_groups = 0;
  std::string m_label;
  std::string m_body;
};

/// A plot's area on the canvas and its two scales.
struct plot_area {
  double left = 0, top = 0, width = 0, height = 0;
  scale x, y;
  [[nodiscard]] double right() const { return left + width; }
  [[nodiscard]] double bottom() const { return top + height; }
};

/// A plot area at (left, top) of (width × height) for the data ranges given.
[[nodiscard]] plot_area make_area(double left, double top, double width, double height,
                                  std::pair<double, double> x_range,
                                  std::pair<double, double> y_range);

/// The frame, grid lines, ticks and tick labels of both axes and their titles,
/// in groups of class "axis x-axis" and "axis y-axis". `x_label` or `y_label`
/// empty: that axis gets no title; `x_ticks` false: no x ticks (a panel that
/// shares the x axis of the one below); `y_ticks` false: rows, not values.
void draw_axes(canvas& c, const plot_area& area, std::string_view x_label, std::string_view y_label,
               bool x_ticks = true, bool y_ticks = true);

/// The lowest and highest y of the points that fall in one pixel column.
struct column_range {
  int column = 0;
  double lo = 0;
  double hi = 0;
  std::size_t count = 0;
};

/// Points (xs[i], ys[i]) grouped by the pixel column x(xs[i]) falls in, in
/// column order, each column's min and max y. Points outside the area's x
/// range or with a NaN are left out.
[[nodiscard]] std::vector<column_range> min_max_columns(std::span<const double> xs,
                                                        std::span<const double> ys,
                                                        const plot_area& area);

/// One vertical stroke per column from lo to hi (at least a dot): a path "d"
/// for points decimated by min_max_columns.
[[nodiscard]] std::string column_strokes(const std::vector<column_range>& columns,
                                         const plot_area& area);

}  // namespace coolbench::report::svg

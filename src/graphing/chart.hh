// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A static chart (lines, dashed lines, filled areas, dots; linear or logarithmic y) drawn with
// cairo and pango, written as SVG or PNG. The legend goes below the plot area, never on it.
#include <optional>
#include <string>
#include <utility>
#include <vector>

typedef struct _cairo cairo_t;

struct Color {
  double r, g, b;
};

struct Series {
  // Dots: small, for thousands of points (a log's packets); Markers: a circle per point, for a
  // few (a run each), drawn over everything else.
  enum class Style { Line, DashedLine, DottedLine, DashDotLine, Area, Dots, Markers };
  std::string label;
  Style style;
  Color color;
  std::vector<std::pair<double, double>> points;  // (x, y), x increasing for lines and areas
};

struct Chart {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_y = false;
  std::vector<Series> series;
  std::string note;  // drawn in the middle of the plot area when not empty ("no packets delivered")
  // Fixed axis ranges (a live meter's scrolling time window and smoothed scale); unset, the axes
  // are fitted to the points. For a logarithmic y, both ends must be positive.
  std::optional<std::pair<double, double>> x_range, y_range;
};

// The plot area (the frame the series are drawn in) of a chart of width x height pixels.
struct Rect {
  double x, y, width, height;
};
Rect plot_frame(int width, int height);

// The legend: one entry (a sample of the series' style, then its label) per series, flowing
// left to right in rows that wrap at `width`, starting at (left, top): below the plot area
// and its axis label, so that it never covers data. label_widths are the labels' widths in
// pixels; entries are 18 pixels high.
struct LegendLayout {
  std::vector<Rect> entries;  // one per label, each holding its sample and its label
  double height;              // of all the rows, 0 for no entry
};
LegendLayout layout_legend(const std::vector<double>& label_widths, double left, double top, double width);

// output: a path ending in .svg or .png, or "" for SVG on standard output. The image is width
// pixels wide and height pixels high plus the legend's rows. Throws UsageError for another
// extension and UserError if the file cannot be written.
void render_chart(const Chart& chart, const std::string& output, int width = 1024, int height = 560);
// Several charts in one image, one under the other, each width x height plus its legend's rows.
void render_charts(const std::vector<Chart>& charts, const std::string& output, int width = 1024, int height = 560);
// Draws the chart on cr in a box of width x height pixels at its origin: the plot and its
// labels, and the legend's rows below them (the plot shrinks to make room for them). For a
// window of a given size.
void paint_chart(cairo_t* cr, const Chart& chart, int width, int height);
// Throws UsageError unless output is "" or ends in .svg or .png.
void check_chart_output(const std::string& output);

// Ten well-distinguished colours, one per log when several share a chart (index modulo ten).
Color palette_color(size_t index);

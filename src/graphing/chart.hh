#pragma once
// A static chart (lines, filled areas, dots; linear or logarithmic y) drawn with cairo and
// pango, written as SVG or PNG.
#include <string>
#include <utility>
#include <vector>

struct Color {
  double r, g, b;
};

struct Series {
  enum class Style { Line, Area, Dots };
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
};

// output: a path ending in .svg or .png, or "" for SVG on standard output. Throws UsageError
// for another extension and UserError if the file cannot be written.
void render_chart(const Chart& chart, const std::string& output, int width = 1024, int height = 560);
// Throws UsageError unless output is "" or ends in .svg or .png.
void check_chart_output(const std::string& output);

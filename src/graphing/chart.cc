// SPDX-License-Identifier: GPL-3.0-or-later
// Line, area and dot charts drawn with cairo and pango, written as SVG or PNG (see chart.hh).
#include "graphing/chart.hh"

#include <cairo-svg.h>
#include <cairo.h>
#include <fcntl.h>
#include <pango/pangocairo.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <tuple>

#include "util/exception.hh"
#include "util/file_descriptor.hh"

namespace {

// The legend's geometry (see layout_legend).
constexpr double kEntryHeight = 18, kRowGap = 4, kSampleWidth = 18, kSampleGap = 6, kEntryGap = 24, kLegendGap = 6;
constexpr double kMarkerRadius = 4.5;  // a Markers point
constexpr int kLegendFontSize = 10;
constexpr double kSampleDash[] = {4, 3};
constexpr double kSampleDot[] = {1.5, 2.5};
constexpr double kSampleDashDot[] = {5, 2, 1.5, 2};

// Where cairo's output goes: a file descriptor, with the first write error kept for the message.
struct Sink {
  int fd;
  int error = 0;
};
cairo_status_t write_to_sink(void* closure, const unsigned char* data, unsigned int length) {
  auto* sink = static_cast<Sink*>(closure);
  while (length > 0 && sink->error == 0) {
    const ssize_t n = ::write(sink->fd, data, length);
    if (n < 0) {
      if (errno == EINTR) continue;
      sink->error = errno;
      return CAIRO_STATUS_WRITE_ERROR;
    }
    data += n;
    length -= static_cast<unsigned int>(n);
  }
  return sink->error ? CAIRO_STATUS_WRITE_ERROR : CAIRO_STATUS_SUCCESS;
}

// 1, 2 or 5 times a power of ten, about range/count.
double nice_step(double range, int count) {
  const double raw = range / count;
  const double power = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * power) return m * power;
  }
  return 10 * power;
}

std::string format_tick(double v) {
  if (std::abs(v) < 1e-12) v = 0;  // not "-0"
  char text[32];
  if (std::abs(v) >= 1 || v == 0)
    std::snprintf(text, sizeof text, "%g", std::round(v * 1000) / 1000);
  else
    std::snprintf(text, sizeof text, "%g", v);
  return text;
}

class Painter {
 public:
  explicit Painter(cairo_t* cr) : cr_(cr) {}
  // The width in pixels of s as text() draws it.
  double width(const std::string& s, int size = 11, bool bold = false) {
    PangoLayout* layout = make_layout(s, size, bold);
    int w, h;
    pango_layout_get_pixel_size(layout, &w, &h);
    g_object_unref(layout);
    return w;
  }
  void text(const std::string& s, double x, double y, double align_x, double align_y, int size = 11, bool bold = false,
            bool vertical = false) {
    PangoLayout* layout = make_layout(s, size, bold);
    int w, h;
    pango_layout_get_pixel_size(layout, &w, &h);
    cairo_save(cr_);
    cairo_translate(cr_, x, y);
    if (vertical) cairo_rotate(cr_, -M_PI / 2);
    cairo_move_to(cr_, -align_x * w, -align_y * h);
    pango_cairo_show_layout(cr_, layout);
    cairo_restore(cr_);
    g_object_unref(layout);
  }

 private:
  PangoLayout* make_layout(const std::string& s, int size, bool bold) {
    PangoLayout* layout = pango_cairo_create_layout(cr_);
    const std::string font = std::string("DejaVu Sans") + (bold ? " Bold " : " ") + std::to_string(size);
    PangoFontDescription* description = pango_font_description_from_string(font.c_str());
    pango_layout_set_font_description(layout, description);
    pango_font_description_free(description);
    pango_layout_set_text(layout, s.c_str(), -1);
    return layout;
  }

  cairo_t* cr_;
};

// The plot area inside the margins, and the mapping of data to its pixels.
struct Plot {
  static constexpr double left = 80, right = 24, top = 48, bottom = 58;
  double pw, ph;  // plot width and height
  double x_min, x_max, y_lo, y_hi;
  bool log_y;

  double px(double x) const { return left + (x - x_min) / (x_max - x_min) * pw; }
  double py(double y) const {
    if (log_y) {
      const double v = std::log10(std::max(y, y_lo));
      return top + ph - (v - std::log10(y_lo)) / (std::log10(y_hi) - std::log10(y_lo)) * ph;
    }
    return top + ph - (y - y_lo) / (y_hi - y_lo) * ph;
  }
};

// Axes that hold every point of every series (NaN values are gaps): y from 0 (or, on a
// logarithmic scale, from the power of ten below the smallest positive value).
Plot fit_plot(const Chart& chart, int width, int height) {
  Plot plot{};
  plot.pw = width - Plot::left - Plot::right;
  plot.ph = height - Plot::top - Plot::bottom;
  plot.log_y = chart.log_y;
  double x_min = INFINITY, x_max = -INFINITY, y_max = 0, y_min_positive = INFINITY;
  for (const auto& s : chart.series) {
    for (auto [x, y] : s.points) {
      if (std::isnan(y)) continue;
      x_min = std::min(x_min, x);
      x_max = std::max(x_max, x);
      y_max = std::max(y_max, y);
      if (y > 0) y_min_positive = std::min(y_min_positive, y);
    }
  }
  if (!std::isfinite(x_min)) x_min = 0, x_max = 1;
  if (x_max <= x_min) x_max = x_min + 1;
  if (chart.x_range && chart.x_range->second > chart.x_range->first) std::tie(x_min, x_max) = *chart.x_range;
  plot.x_min = x_min;
  plot.x_max = x_max;
  const bool fixed_y =
      chart.y_range && chart.y_range->second > chart.y_range->first && (!chart.log_y || chart.y_range->first > 0);
  if (fixed_y) {
    std::tie(plot.y_lo, plot.y_hi) = *chart.y_range;
  } else if (chart.log_y) {
    if (!std::isfinite(y_min_positive)) y_min_positive = 1;
    plot.y_lo = std::pow(10, std::floor(std::log10(y_min_positive)));
    plot.y_hi = std::pow(10, std::ceil(std::log10(std::max(y_max, plot.y_lo * 10))));
  } else {
    plot.y_lo = 0;
    plot.y_hi = y_max > 0 ? y_max * 1.08 : 1;
  }
  return plot;
}

void draw_grid(cairo_t* cr, Painter& painter, const Plot& plot) {
  const double left = Plot::left, top = Plot::top;
  cairo_set_line_width(cr, 1);
  const double x_step = nice_step(plot.x_max - plot.x_min, 10);
  for (double x = std::ceil(plot.x_min / x_step) * x_step; x <= plot.x_max + 1e-9; x += x_step) {
    cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
    cairo_move_to(cr, plot.px(x), top);
    cairo_line_to(cr, plot.px(x), top + plot.ph);
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    painter.text(format_tick(x), plot.px(x), top + plot.ph + 6, 0.5, 0);
  }
  std::vector<double> y_ticks;
  if (plot.log_y) {
    for (double y = std::pow(10, std::ceil(std::log10(plot.y_lo) - 1e-9)); y <= plot.y_hi * 1.001; y *= 10)
      y_ticks.push_back(y);
  } else {
    const double y_step = nice_step(plot.y_hi - plot.y_lo, 6);
    for (double y = std::ceil(plot.y_lo / y_step - 1e-9) * y_step; y <= plot.y_hi + 1e-9; y += y_step)
      y_ticks.push_back(y);
  }
  for (double y : y_ticks) {
    cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
    cairo_move_to(cr, left, plot.py(y));
    cairo_line_to(cr, left + plot.pw, plot.py(y));
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    painter.text(format_tick(y), left - 6, plot.py(y), 1, 0.5);
  }
}

void draw_markers(cairo_t* cr, const Plot& plot, const Series& s) {
  for (auto [x, y] : s.points) {
    if (std::isnan(x) || std::isnan(y)) continue;
    cairo_arc(cr, plot.px(x), plot.py(y), kMarkerRadius, 0, 2 * M_PI);
    cairo_fill(cr);
  }
}

void draw_dots(cairo_t* cr, const Plot& plot, const Series& s) {
  // Each point is a 2x2 square on whole pixels (as round as a dot can be at this size), marked
  // in a bitmap of the plot area; the marked pixels are then filled as one rectangle per run
  // in each column, in one fill. A live delay chart has tens of thousands of points 30 times a
  // second; this draws them in a few thousand rectangles, and keeps big logs' SVGs small.
  const int left = static_cast<int>(Plot::left), top = static_cast<int>(Plot::top);
  const int width = static_cast<int>(plot.pw) + 2, height = static_cast<int>(plot.ph) + 2;
  std::vector<bool> marked(static_cast<size_t>(width) * static_cast<size_t>(height));
  auto cell = [&](int x, int y) {
    return static_cast<size_t>(x) * static_cast<size_t>(height) + static_cast<size_t>(y);
  };
  for (auto [x, y] : s.points) {
    if (std::isnan(y)) continue;
    const int cx = static_cast<int>(plot.px(x)) - left, cy = static_cast<int>(plot.py(y)) - top;
    for (int dx = 0; dx < 2; dx++) {
      for (int dy = 0; dy < 2; dy++) {
        if (cx + dx >= 0 && cy + dy >= 0 && cx + dx < width && cy + dy < height) marked[cell(cx + dx, cy + dy)] = true;
      }
    }
  }
  for (int x = 0; x < width; x++) {
    for (int y = 0; y < height;) {
      if (!marked[cell(x, y)]) {
        y++;
        continue;
      }
      const int start = y;
      while (y < height && marked[cell(x, y)]) y++;
      cairo_rectangle(cr, left + x, top + start, 1, y - start);
    }
  }
  cairo_fill(cr);
}

constexpr double kDash[] = {6, 4};
constexpr double kDot[] = {1.6, 3};
constexpr double kDashDot[] = {8, 3, 1.6, 3};

// The highest pixel (least y) of the line through the points (NaN values skipped) in each
// pixel column of the plot; INFINITY where the line does not pass.
std::vector<double> column_tops(const Plot& plot, const Series& s) {
  const int first = static_cast<int>(Plot::left), columns = static_cast<int>(plot.pw);
  std::vector<double> top(static_cast<size_t>(columns), INFINITY);
  auto reach = [&](double px, double py) {
    const int c = static_cast<int>(std::floor(px)) - first;
    if (c >= 0 && c < columns) top[static_cast<size_t>(c)] = std::min(top[static_cast<size_t>(c)], py);
  };
  bool have_previous = false;
  double x0 = 0, y0 = 0;
  for (auto [x, y] : s.points) {
    if (std::isnan(y)) continue;
    const double x1 = plot.px(x), y1 = plot.py(y);
    reach(x1, y1);
    if (have_previous) {
      for (double c = std::ceil(x0 - 0.5) + 0.5; c < x1; c += 1) reach(c, y0 + (y1 - y0) * (c - x0) / (x1 - x0));
    }
    have_previous = true;
    x0 = x1, y0 = y1;
  }
  return top;
}

// A dense area (a live delay chart's signal delay: a point per 20 ms) as boxes on whole
// pixels, which cairo draws many times faster than the jagged polygon and its outline: per
// pixel column, the fill from the line down to the x axis, and the line itself as the step
// from the column before.
void draw_dense_area(cairo_t* cr, const Plot& plot, const Series& s) {
  const std::vector<double> top = column_tops(plot, s);
  const double bottom = Plot::top + plot.ph;
  const int first = static_cast<int>(Plot::left);
  for (size_t c = 0; c < top.size(); c++) {
    const double t = std::round(top[c]);
    if (std::isfinite(t) && t < bottom) cairo_rectangle(cr, first + static_cast<int>(c), t, 1, bottom - t);
  }
  cairo_set_source_rgba(cr, s.color.r, s.color.g, s.color.b, 0.25);
  cairo_fill(cr);
  for (size_t c = 0; c < top.size(); c++) {
    if (!std::isfinite(top[c])) continue;
    const double here = std::round(top[c]);
    const double before = c > 0 && std::isfinite(top[c - 1]) ? std::round(top[c - 1]) : here;
    cairo_rectangle(cr, first + static_cast<int>(c), std::min(here, before), 1, std::abs(here - before) + 1);
  }
  cairo_set_source_rgba(cr, s.color.r, s.color.g, s.color.b, 0.8);
  cairo_fill(cr);
}

// A line through the points (NaN values skipped); for an area, filled down to the x axis too.
void draw_line_or_area(cairo_t* cr, const Plot& plot, const Series& s) {
  bool started = false;
  double first_x = 0, last_x = 0;
  for (auto [x, y] : s.points) {
    if (std::isnan(y)) continue;
    if (!started) {
      cairo_move_to(cr, plot.px(x), plot.py(y));
      first_x = x;
      started = true;
    } else {
      cairo_line_to(cr, plot.px(x), plot.py(y));
    }
    last_x = x;
  }
  if (!started) return;
  if (s.style == Series::Style::Area && s.points.size() >= plot.pw / 4) {
    cairo_new_path(cr);
    draw_dense_area(cr, plot, s);
    return;
  }
  if (s.style == Series::Style::Area) {
    cairo_path_t* outline = cairo_copy_path(cr);
    cairo_line_to(cr, plot.px(last_x), Plot::top + plot.ph);
    cairo_line_to(cr, plot.px(first_x), Plot::top + plot.ph);
    cairo_close_path(cr);
    cairo_set_source_rgba(cr, s.color.r, s.color.g, s.color.b, 0.25);
    cairo_fill(cr);
    cairo_append_path(cr, outline);
    cairo_path_destroy(outline);
    cairo_set_source_rgba(cr, s.color.r, s.color.g, s.color.b, 0.8);
  }
  cairo_set_line_width(cr, s.style == Series::Style::Area ? 1 : 1.6);
  if (s.style == Series::Style::DashedLine) cairo_set_dash(cr, kDash, 2, 0);
  if (s.style == Series::Style::DottedLine) cairo_set_dash(cr, kDot, 2, 0);
  if (s.style == Series::Style::DashDotLine) cairo_set_dash(cr, kDashDot, 4, 0);
  cairo_stroke(cr);
  cairo_set_dash(cr, nullptr, 0, 0);
}

// Every series, clipped to the plot area: areas first, then dots, then lines, so that no line
// disappears under another series' dots or fill.
void draw_series(cairo_t* cr, const Plot& plot, const Chart& chart) {
  cairo_save(cr);
  cairo_rectangle(cr, Plot::left, Plot::top, plot.pw, plot.ph);
  cairo_clip(cr);
  for (int layer = 0; layer < 3; layer++) {
    for (const auto& s : chart.series) {
      const int own_layer = s.style == Series::Style::Area ? 0 : s.style == Series::Style::Dots ? 1 : 2;
      if (own_layer != layer) continue;
      cairo_set_source_rgba(cr, s.color.r, s.color.g, s.color.b, 1);
      if (s.style == Series::Style::Dots) {
        draw_dots(cr, plot, s);
      } else if (s.style == Series::Style::Markers) {
        draw_markers(cr, plot, s);
      } else {
        draw_line_or_area(cr, plot, s);
      }
    }
  }
  cairo_restore(cr);
}

void draw_frame_and_labels(cairo_t* cr, Painter& painter, const Plot& plot, const Chart& chart, int height) {
  const double left = Plot::left, top = Plot::top, pw = plot.pw, ph = plot.ph;
  cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
  cairo_rectangle(cr, left, top, pw, ph);
  cairo_stroke(cr);
  painter.text(chart.title, left + pw / 2, 14, 0.5, 0, 13, true);
  painter.text(chart.x_label, left + pw / 2, height - 8, 0.5, 1);
  painter.text(chart.y_label, 18, top + ph / 2, 0.5, 0.5, 11, false, true);
  if (!chart.note.empty()) {
    cairo_set_source_rgb(cr, 0.35, 0.35, 0.35);
    painter.text(chart.note, left + pw / 2, top + ph / 2, 0.5, 0.5, 14);
  }
}

// A sample of the series' style, in a box of kSampleWidth x kEntryHeight at (x, y).
void draw_legend_sample(cairo_t* cr, const Series& s, double x, double y) {
  const double mid = y + kEntryHeight / 2;
  if (s.style == Series::Style::Area) {
    cairo_set_source_rgba(cr, s.color.r, s.color.g, s.color.b, 0.5);
    cairo_rectangle(cr, x, mid - 4, kSampleWidth, 8);
    cairo_fill(cr);
    return;
  }
  cairo_set_source_rgb(cr, s.color.r, s.color.g, s.color.b);
  if (s.style == Series::Style::Markers) {
    cairo_arc(cr, x + kSampleWidth / 2, mid, kMarkerRadius, 0, 2 * M_PI);
    cairo_fill(cr);
    return;
  }
  if (s.style == Series::Style::Dots) {
    for (double dx : {3.0, 9.0, 15.0}) {
      cairo_arc(cr, x + dx, mid, 1.8, 0, 2 * M_PI);
      cairo_fill(cr);
    }
    return;
  }
  cairo_set_line_width(cr, 2);
  if (s.style == Series::Style::DashedLine) cairo_set_dash(cr, kSampleDash, 2, 0);
  if (s.style == Series::Style::DottedLine) cairo_set_dash(cr, kSampleDot, 2, 0);
  if (s.style == Series::Style::DashDotLine) cairo_set_dash(cr, kSampleDashDot, 4, 0);
  cairo_move_to(cr, x, mid);
  cairo_line_to(cr, x + kSampleWidth, mid);
  cairo_stroke(cr);
  cairo_set_dash(cr, nullptr, 0, 0);
}

void draw_legend(cairo_t* cr, Painter& painter, const Chart& chart, const LegendLayout& legend) {
  for (size_t i = 0; i < chart.series.size(); i++) {
    const Rect& entry = legend.entries[i];
    draw_legend_sample(cr, chart.series[i], entry.x, entry.y);
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    painter.text(chart.series[i].label, entry.x + kSampleWidth + kSampleGap, entry.y + kEntryHeight / 2, 0, 0.5,
                 kLegendFontSize);
  }
}

// The legend's place below a chart of width x height (the legend not included).
LegendLayout measure_legend(cairo_t* cr, const Chart& chart, int width, int height) {
  Painter painter(cr);
  std::vector<double> widths;
  for (const auto& s : chart.series) widths.push_back(painter.width(s.label, kLegendFontSize));
  const Rect frame = plot_frame(width, height);
  return layout_legend(widths, frame.x, height + kLegendGap, frame.width);
}

// The same, measured with a scratch surface, since the image's height depends on it.
LegendLayout measure_legend(const Chart& chart, int width, int height) {
  cairo_surface_t* scratch = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1);
  cairo_t* cr = cairo_create(scratch);
  LegendLayout legend = measure_legend(cr, chart, width, height);
  cairo_destroy(cr);
  cairo_surface_destroy(scratch);
  return legend;
}

// The height of the legend's rows and the gaps around them (0 without a legend).
int legend_rows_height(const LegendLayout& legend) {
  return legend.height > 0 ? static_cast<int>(std::ceil(legend.height + 2 * kLegendGap)) : 0;
}

void draw(cairo_t* cr, const Chart& chart, int width, int height, const LegendLayout& legend) {
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_rectangle(cr, 0, 0, width, height + legend_rows_height(legend));  // this chart's box only
  cairo_fill(cr);
  const Plot plot = fit_plot(chart, width, height);
  Painter painter(cr);
  draw_grid(cr, painter, plot);
  draw_series(cr, plot, chart);
  draw_frame_and_labels(cr, painter, plot, chart, height);
  draw_legend(cr, painter, chart, legend);
}

}  // namespace

Color palette_color(size_t index) {
  static constexpr Color kPalette[] = {{0.12, 0.47, 0.71}, {1.0, 0.5, 0.05},   {0.17, 0.63, 0.17}, {0.84, 0.15, 0.16},
                                       {0.58, 0.4, 0.74},  {0.55, 0.34, 0.29}, {0.89, 0.47, 0.76}, {0.5, 0.5, 0.5},
                                       {0.74, 0.74, 0.13}, {0.09, 0.75, 0.81}};
  return kPalette[index % std::size(kPalette)];
}

Rect plot_frame(int width, int height) {
  return {Plot::left, Plot::top, width - Plot::left - Plot::right, height - Plot::top - Plot::bottom};
}

LegendLayout layout_legend(const std::vector<double>& label_widths, double left, double top, double width) {
  LegendLayout legend{{}, 0};
  double x = left, y = top;
  for (double label_width : label_widths) {
    const double entry_width = kSampleWidth + kSampleGap + label_width;
    // A new row when this entry would pass the right edge (unless it starts the row).
    if (x > left && x + entry_width > left + width) {
      x = left;
      y += kEntryHeight + kRowGap;
    }
    legend.entries.push_back({x, y, entry_width, kEntryHeight});
    x += entry_width + kEntryGap;
  }
  if (!legend.entries.empty()) legend.height = y + kEntryHeight - top;
  return legend;
}

void check_chart_output(const std::string& output) {
  if (!output.empty() && !output.ends_with(".svg") && !output.ends_with(".png")) {
    throw UsageError("output file " + output + " must end in .svg or .png (the type is taken from the name)");
  }
}

void paint_chart(cairo_t* cr, const Chart& chart, int width, int height) {
  // The legend's rows are measured for the full height, then the plot is shortened by them
  // (their count depends on the width only).
  const int rows = legend_rows_height(measure_legend(cr, chart, width, height));
  const int plot_height = std::max(height - rows, static_cast<int>(Plot::top + Plot::bottom) + 20);
  draw(cr, chart, width, plot_height, measure_legend(cr, chart, width, plot_height));
}

void render_chart(const Chart& chart, const std::string& output, int width, int height) {
  render_charts({chart}, output, width, height);
}

void render_charts(const std::vector<Chart>& charts, const std::string& output, int width, int height) {
  check_chart_output(output);
  FileDescriptor file;
  if (!output.empty()) {
    file = FileDescriptor(::open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666));
    if (!file.valid()) throw UserError("cannot write " + output + ": " + std::strerror(errno));
  }
  Sink sink{output.empty() ? 1 : file.get()};
  const bool png = output.ends_with(".png");
  std::vector<LegendLayout> legends;
  int image_height = 0;
  for (const Chart& chart : charts) {
    legends.push_back(measure_legend(chart, width, height));
    image_height += height + legend_rows_height(legends.back());
  }
  image_height = std::max(image_height, 1);
  cairo_surface_t* surface = png ? cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, image_height)
                                 : cairo_svg_surface_create_for_stream(write_to_sink, &sink, width, image_height);
  cairo_t* cr = cairo_create(surface);
  for (size_t i = 0; i < charts.size(); i++) {
    draw(cr, charts[i], width, height, legends[i]);
    cairo_translate(cr, 0, height + legend_rows_height(legends[i]));
  }
  cairo_destroy(cr);
  cairo_status_t status = png ? cairo_surface_write_to_png_stream(surface, write_to_sink, &sink) : CAIRO_STATUS_SUCCESS;
  cairo_surface_finish(surface);
  if (status == CAIRO_STATUS_SUCCESS) status = cairo_surface_status(surface);
  cairo_surface_destroy(surface);
  if (sink.error)
    throw UserError("cannot write " + (output.empty() ? std::string("standard output") : output) + ": " +
                    std::strerror(sink.error));
  if (status != CAIRO_STATUS_SUCCESS) throw UserError(std::string("drawing failed: ") + cairo_status_to_string(status));
}

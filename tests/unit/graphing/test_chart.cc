// SPDX-License-Identifier: GPL-3.0-or-later
// Charts: the output file's type comes from its name; an SVG is drawn from a chart's series.
#include <cairo.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "expect.hh"
#include "graphing/chart.hh"
#include "temp_files.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"

TEST(Chart, output_must_be_svg_or_png) {
  check_chart_output("");  // SVG on standard output
  check_chart_output("a.svg");
  check_chart_output("dir/b.png");
  EXPECT_THROW_WITH(UsageError, check_chart_output("c.pdf"), "output file c.pdf must end in .svg or .png");
  EXPECT_THROW_WITH(UsageError, check_chart_output("svg"), "must end in .svg or .png");
}

TEST(Chart, draws_an_svg_file_with_its_labels) {
  char dir[] = "/tmp/mm-unit-chart.XXXXXX";
  ASSERT_TRUE(::mkdtemp(dir) != nullptr);
  const std::string path = std::string(dir) + "/c.svg";
  Chart chart;
  chart.title = "Throughput";
  chart.x_label = "time (s)";
  chart.y_label = "Mbit/s";
  chart.series = {Series{"capacity", Series::Style::Area, {0.5, 0.5, 0.5}, {{0, 1}, {1, NAN}, {2, 3}}},
                  Series{"packets", Series::Style::Dots, {0, 0, 1}, {{0, 2}, {2, 2}}}};
  render_chart(chart, path);
  const std::string svg = read_small_file(path);
  ::unlink(path.c_str());
  ::rmdir(dir);
  ASSERT_EQ(svg.rfind("<?xml", 0), 0u);
  ASSERT_TRUE(svg.find("</svg>") != std::string::npos);
}

TEST(Chart, legend_flows_in_rows_below_the_plot_without_overlaps) {
  const Rect frame = plot_frame(1024, 560);
  const double top = 566;  // below the plot area and its axis label
  ASSERT_GT(top, frame.y + frame.height + 40);
  const std::vector<double> widths = {200, 300, 250, 400, 100, 1200};
  const LegendLayout legend = layout_legend(widths, frame.x, top, frame.width);
  ASSERT_EQ(legend.entries.size(), widths.size());
  for (size_t i = 0; i < legend.entries.size(); i++) {
    const Rect& e = legend.entries[i];
    EXPECT_GE(e.y, top);
    EXPECT_GE(e.x, frame.x);
    // Within the plot's width, unless a label alone is wider (then it has a row of its own).
    if (e.x > frame.x) {
      EXPECT_LE(e.x + e.width, frame.x + frame.width) << i;
    }
    for (size_t j = 0; j < i; j++) {
      const Rect& o = legend.entries[j];
      const bool apart = e.x >= o.x + o.width || o.x >= e.x + e.width || e.y >= o.y + o.height || o.y >= e.y + e.height;
      EXPECT_TRUE(apart) << i << " overlaps " << j;
    }
  }
  EXPECT_EQ(legend.entries[0].y, legend.entries[2].y);  // 200 + 300 + 250 and gaps fit in one row
  EXPECT_GT(legend.entries[3].y, legend.entries[2].y);  // 400 more does not
  EXPECT_EQ(legend.entries[5].x, frame.x);              // the widest starts a row
  EXPECT_DOUBLE_EQ(legend.height, legend.entries[5].y + 18 - top);
  EXPECT_EQ(layout_legend({}, frame.x, top, frame.width).height, 0.0);
}

// The legend never covers data: a chart whose area fills the whole plot, with many legend
// entries, has no legend text (dark pixels) in its plot area, and its legend below.
TEST(Chart, legend_does_not_cover_the_data) {
  TempDir dir;
  const std::string path = (dir.path / "full.png").string();
  Chart chart;
  chart.title = "Full";
  Series full{"a series that fills the plot", Series::Style::Area, {0, 0, 1}, {}};
  for (int x = 0; x <= 10; x++) full.points.emplace_back(x, 10);
  chart.series = {full};
  for (int i = 0; i < 8; i++)
    chart.series.push_back({"line " + std::to_string(i), Series::Style::Line, {0, 0.6, 0}, {{0, 1}}});
  render_chart(chart, path, 1024, 560);
  cairo_surface_t* image = cairo_image_surface_create_from_png(path.c_str());
  ASSERT_EQ(cairo_surface_status(image), CAIRO_STATUS_SUCCESS);
  const int height = cairo_image_surface_get_height(image), stride = cairo_image_surface_get_stride(image);
  const unsigned char* data = cairo_image_surface_get_data(image);
  auto dark = [&](int x, int y) {
    const uint32_t pixel = *reinterpret_cast<const uint32_t*>(data + y * stride + x * 4);
    return ((pixel >> 16) & 0xff) < 100 && ((pixel >> 8) & 0xff) < 100 && (pixel & 0xff) < 100;
  };
  const Rect frame = plot_frame(1024, 560);
  int dark_in_plot = 0, dark_below = 0;
  for (int y = static_cast<int>(frame.y) + 3; y < static_cast<int>(frame.y + frame.height) - 3; y++) {
    for (int x = static_cast<int>(frame.x) + 3; x < static_cast<int>(frame.x + frame.width) - 3; x++)
      dark_in_plot += dark(x, y);
  }
  for (int y = 560; y < height; y++) {
    for (int x = 0; x < 1024; x++) dark_below += dark(x, y);
  }
  cairo_surface_destroy(image);
  EXPECT_EQ(dark_in_plot, 0);
  EXPECT_GT(height, 560);  // the image grew to hold the legend
  EXPECT_GT(dark_below, 100);
}

TEST(Chart, a_note_is_drawn_and_dashed_lines_render_dashed) {
  TempDir dir;
  Chart chart;
  chart.series = {Series{"ingress", Series::Style::DashedLine, {0, 0, 1}, {{0, 1}, {1, 2}}}};
  render_chart(chart, (dir.path / "plain.svg").string());
  chart.note = "no packets delivered";
  render_chart(chart, (dir.path / "note.svg").string());
  const std::string plain = read_small_file((dir.path / "plain.svg").string());
  EXPECT_NE(plain.find("stroke-dasharray"), std::string::npos);
  EXPECT_GT(read_small_file((dir.path / "note.svg").string()).size(), plain.size() + 500);  // the note's glyphs
}

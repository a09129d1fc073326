// Charts: the output file's type comes from its name; an SVG is drawn from a chart's series.
#include <unistd.h>

#include <cmath>
#include <string>

#include "expect.hh"
#include "graphing/chart.hh"
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

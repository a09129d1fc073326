// SPDX-License-Identifier: GPL-3.0-or-later
// Where the live meters are drawn without a display: --meter-output's files (one
// image of every graph, or a directory of PNGs), replaced whole; and the message a display
// that cannot be opened gives.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "expect.hh"
#include "graphing/meter_display.hh"
#include "temp_files.hh"
#include "util/exception.hh"

namespace {
constexpr Nanos kMs = kNanosPerMs;

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool is_png(const std::filesystem::path& path) { return read_all(path).rfind("\x89PNG\r\n\x1a\n", 0) == 0; }

// A meter of a 12 Mbit/s link that carried a packet every ms for a second.
struct Carried {
  Carried() : meter(&trace, false, 0, "[link] uplink") {
    for (int t = 0; t < 1000; t++) {
      meter.add({t * kMs, 0, 1500, 1, '+'});
      meter.add({t * kMs + kMs, t * kMs, 1500, 1, '-'});
    }
    meter.advance(1000 * kMs);
  }
  const Trace trace = Trace::constant_rate(12e6, "rate:12Mbit/s");
  LinkMeter meter;
};
}  // namespace

TEST(MeterFiles, a_directory_gets_one_png_per_graph_and_a_file_all_of_them) {
  const Carried run;
  const TempDir dir;
  const std::vector<MeterGraph> graphs{{&run.meter, MeterGraph::Kind::Throughput, "uplink"},
                                       {&run.meter, MeterGraph::Kind::Delay, "uplink-delay"}};
  {
    MeterFiles files(graphs, (dir.path / "graphs").string(), 0, "mm-link");  // made if need be
    files.write_final();
  }
  EXPECT_TRUE(is_png(dir.path / "graphs" / "uplink.png"));
  EXPECT_TRUE(is_png(dir.path / "graphs" / "uplink-delay.png"));
  // Nothing else: the files were written aside and renamed.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path / "graphs"), {}), 2);

  MeterFiles(graphs, (dir.path / "all.svg").string(), 0, "mm-link").write_final();
  const std::string svg = read_all(dir.path / "all.svg");
  EXPECT_EQ(svg.find("<svg"), svg.rfind("<svg"));        // one image
  EXPECT_NE(svg.find("height=\"1"), std::string::npos);  // two charts of 560 px and their legends: over 1000
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path), {}), 2);
}

TEST(MeterFiles, a_place_that_cannot_be_written_fails_at_the_start) {
  const Carried run;
  const TempDir dir;
  std::ofstream(dir.path / "file") << "x";
  const std::vector<MeterGraph> graphs{{&run.meter, MeterGraph::Kind::Throughput, "uplink"}};
  EXPECT_THROW_WITH(UserError, MeterFiles(graphs, (dir.path / "file").string(), 0, "mm-link"),
                    "is neither a directory nor a name ending in .png or .svg");
  EXPECT_THROW_WITH(UserError, MeterFiles(graphs, (dir.path / "no" / "such.png").string(), 0, "mm-link"),
                    "cannot write");
}

TEST(MeterDisplay, a_display_that_cannot_be_opened_says_how_to_draw_without_one) {
  const Carried run;
  const char* saved = ::getenv("DISPLAY");
  const std::string before = saved ? saved : "";
  ::setenv("DISPLAY", ":987", 1);
  EXPECT_THROW_WITH(UserError, MeterDisplay({{&run.meter, MeterGraph::Kind::Throughput, "uplink"}}, "mm-link"),
                    "cannot open the X display \":987\" for the live graphs (--meter-*); check DISPLAY and "
                    "XAUTHORITY, or draw them without a display with --meter-output=FILE.png");
  if (saved) {
    ::setenv("DISPLAY", before.c_str(), 1);
  } else {
    ::unsetenv("DISPLAY");
  }
}

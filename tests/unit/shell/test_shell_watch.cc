// SPDX-License-Identifier: GPL-3.0-or-later
// The options of a shell's logs and live meters: --meter-output's names, the combinations the
// scan leaves, and the logs' file names.
#include <string>
#include <vector>

#include "expect.hh"
#include "shell/shell_watch.hh"
#include "util/exception.hh"

namespace {
// Scans `words` with the meters' and logs' options (with mm-link's delay graphs).
void scan(std::vector<std::string> words, MeterOptions& meters, LogOptions& logs) {
  std::vector<ArgScanner::Option> options;
  meters.add_options(options, true);
  logs.add_options(options);
  static const ProgramInfo kInfo{"mm-test", "[OPTION]...", "A test.\n"};
  std::vector<char*> argv{const_cast<char*>("mm-test")};
  for (std::string& w : words) argv.push_back(w.data());
  ArgScanner(kInfo, std::move(options)).scan(static_cast<int>(argv.size()), argv.data(), [](std::string_view) {
    return false;
  });
}
}  // namespace

TEST(MeterOptions, output_names_say_the_type_or_a_directory) {
  for (const char* ok : {"graphs.png", "out/graphs.svg", "graphs", "out/graphs/", "./a.b/graphs"})
    EXPECT_NO_THROW(MeterOptions::check_output(ok)) << ok;
  EXPECT_THROW_WITH(UsageError, MeterOptions::check_output("graphs.jpg"),
                    "--meter-output=graphs.jpg: the type is taken from the name; give FILE.png or FILE.svg");
  EXPECT_THROW_WITH(UsageError, MeterOptions::check_output(""), "--meter-output needs a file");
}

TEST(MeterOptions, an_output_alone_draws_both_directions_and_snapshots_need_an_output) {
  MeterOptions meters;
  LogOptions logs;
  scan({"--meter-output=g.svg", "-u", "up.log"}, meters, logs);
  ShellSpec spec;
  meters.finish(spec, false);
  EXPECT_TRUE(meters.uplink && meters.downlink && !meters.uplink_delay);
  EXPECT_TRUE(meters.metered(0) && meters.metered(1));
  EXPECT_TRUE(spec.display_needed.empty());  // files, no windows
  EXPECT_EQ(logs.path(0), "up.log");
  EXPECT_EQ(logs.path(1), "");

  MeterOptions snapshots;
  scan({"--meter-snapshot-interval=5"}, snapshots, logs);
  EXPECT_THROW_WITH(UsageError, snapshots.finish(spec, false), "give that too");
  EXPECT_THROW_WITH(UsageError, scan({"--meter-snapshot-interval=0.01"}, snapshots, logs), "from 0.1 to 86400");
  EXPECT_THROW_WITH(UsageError, scan({"--uplink-log="}, snapshots, logs), "--uplink-log needs a file name");
}

TEST(MeterOptions, windows_need_a_display_and_meter_all_takes_the_delay_graphs) {
  MeterOptions meters;
  LogOptions logs;
  scan({"--meter-all"}, meters, logs);
  ShellSpec spec;
  meters.finish(spec, false);
  EXPECT_TRUE(meters.uplink && meters.downlink && meters.uplink_delay && meters.downlink_delay);
  EXPECT_NE(spec.display_needed.find("DISPLAY is not set"), std::string::npos);
}

// SPDX-License-Identifier: GPL-3.0-or-later
// The command line of mm-throughput-graph and mm-delay-graph: the original's syntax, --title,
// --csv, --label per log, several logs, and the usage errors around them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "expect.hh"
#include "graphing/graph_tool.hh"
#include "temp_files.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"

namespace {
const ProgramInfo kInfo{"mm-test-graph", "[OPTIONS] [LOG...]", "help\n"};

// Runs run_graph_tool on words; returns its exit status, the command its body got, and stderr.
struct ToolRun {
  int status;
  GraphCommand command;
  std::string errors;
};
ToolRun run(std::vector<std::string> words) {
  words.insert(words.begin(), "mm-test-graph");
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  ToolRun result{};
  testing::internal::CaptureStderr();
  result.status = run_graph_tool(static_cast<int>(words.size()), argv.data(), kInfo,
                                 [&](const GraphCommand& command) { result.command = command; });
  result.errors = testing::internal::GetCapturedStderr();
  return result;
}

const char kLog[] = "# mahimahi mm-link (Uplink) [x] > u.log\n0 # 1500\n";
}  // namespace

TEST(GraphTool, the_original_syntax_and_the_new_options) {
  ToolRun r = run({"500", "up.log", "-o", "t.svg"});
  ASSERT_EQ(r.status, 0) << r.errors;
  EXPECT_EQ(r.command.operands, (std::vector<std::string>{"500", "up.log"}));
  EXPECT_EQ(r.command.output, "t.svg");
  r = run({"--title", "Two links", "500", "a.log", "--label=first", "b.log", "--label", "second", "--csv=t.csv"});
  ASSERT_EQ(r.status, 0) << r.errors;
  EXPECT_EQ(r.command.title, "Two links");
  EXPECT_EQ(r.command.csv, "t.csv");
  EXPECT_EQ(r.command.labels, (std::vector<std::string>{"first", "second"}));
  EXPECT_EQ(r.command.operands, (std::vector<std::string>{"500", "a.log", "b.log"}));
  EXPECT_EQ(r.command.output, "");
  // After "--", a file name may start with '-'; "-" is standard input.
  r = run({"--output=t.png", "-", "--", "-odd.log"});
  ASSERT_EQ(r.status, 0) << r.errors;
  EXPECT_EQ(r.command.operands, (std::vector<std::string>{"-", "-odd.log"}));
  EXPECT_EQ(r.command.output, "t.png");
  EXPECT_TRUE(legend_names_logs(GraphCommand{{}, "", "", "", {"x"}}, 1));
  EXPECT_FALSE(legend_names_logs(GraphCommand{}, 1));
  EXPECT_TRUE(legend_names_logs(GraphCommand{}, 2));
}

TEST(GraphTool, usage_errors_name_the_fix) {
  ToolRun r = run({"500", "a.log", "--csv", "-"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.errors.find("--csv - and the chart would both go to standard output; give the chart a file with -o"),
            std::string::npos)
      << r.errors;
  EXPECT_EQ(run({"500", "a.log", "--csv", "-", "-o", "t.svg"}).status, 0);
  r = run({"a.log", "--csv", "same.svg", "-o", "same.svg"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.errors.find("--csv and -o name the same file same.svg"), std::string::npos) << r.errors;
  r = run({"a.log", "--color=red"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.errors.find("unknown option \"--color=red\""), std::string::npos) << r.errors;
  r = run({"a.log", "-o", "t.pdf"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.errors.find("must end in .svg or .png"), std::string::npos) << r.errors;
}

TEST(GraphTool, logs_are_read_with_their_labels) {
  TempFile a(kLog), b(kLog);
  GraphCommand command;
  std::vector<LabeledLog> logs = read_graph_logs({a.path, b.path}, command);
  ASSERT_EQ(logs.size(), 2u);
  EXPECT_EQ(logs[0].label, a.path);  // the file name as given
  EXPECT_EQ(logs[1].log.opportunities.size(), 1u);
  command.labels = {"fast", "slow"};
  logs = read_graph_logs({a.path, b.path}, command);
  EXPECT_EQ(logs[1].label, "slow");
  command.labels = {"fast"};
  EXPECT_THROW_WITH(UsageError, read_graph_logs({a.path, b.path}, command),
                    "2 logs but 1 --label; give one --label per LOG, in order, or none");
  command.labels = {};
  EXPECT_THROW_WITH(UsageError, read_graph_logs({"-", a.path, "-"}, command), "standard input (-) named twice");
  EXPECT_THROW_WITH(UsageError, read_graph_logs(std::vector<std::string>(11, a.path), command),
                    "11 logs given; one chart holds at most 10 (one colour each)");
  EXPECT_THROW_WITH(UserError, read_graph_logs({a.path, "/nonexistent.log"}, command),
                    "cannot read log /nonexistent.log");
}

TEST(GraphTool, csv_goes_to_its_file) {
  TempDir dir;
  GraphCommand command;
  command.csv = (dir.path / "t.csv").string();
  write_graph_csv(command, "log,x\nup.log,1\n");
  EXPECT_EQ(read_small_file(command.csv), "log,x\nup.log,1\n");
  command.csv = (dir.path / "missing" / "t.csv").string();
  EXPECT_THROW_WITH(UserError, write_graph_csv(command, "x\n"), "cannot write CSV file " + command.csv);
  write_graph_csv(GraphCommand{}, "nothing, as there is no --csv\n");
}

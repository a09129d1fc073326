// SPDX-License-Identifier: GPL-3.0-or-later
// A command sweep's grid: schemes, links, congestion controls, ids, a run's command line and the
// manifest read back.
#include "expect.hh"
#include "sweep/command_grid.hh"
#include "util/exception.hh"

namespace {
CommandSweepSettings two_schemes() {
  CommandSweepSettings s;
  s.schemes = {parse_scheme("a=iperf3 -c $MAHIMAHI_BASE -p $MM_SWEEP_PORT", "--scheme"),
               parse_scheme("b=./sender", "--scheme")};
  s.links = {parse_link("lte=/traces/Verizon-LTE.up,/traces/Verizon-LTE.down"), rate_link(12)};
  s.rtts_ms = {40};
  s.losses = {0};
  s.ccs = {"reno", "bbr"};
  s.runs = 2;
  return s;
}
}  // namespace

TEST(CommandGrid, schemes_are_named_commands) {
  const CommandScheme s = parse_scheme("bbr-v1=iperf3 -c x -C bbr", "--scheme");
  EXPECT_EQ(s.name, "bbr-v1");
  EXPECT_EQ(s.command, "iperf3 -c x -C bbr");
  EXPECT_THROW_WITH(UsageError, parse_scheme("iperf3 -c x", "--scheme"), "--scheme takes NAME=COMMAND");
  EXPECT_THROW_WITH(UsageError, parse_scheme("Big Name=x", "--scheme"), "must be up to 40 of a-z");
  EXPECT_THROW_WITH(UsageError, parse_scheme("a=", "--scheme"), "--scheme needs a command");
  EXPECT_THROW_WITH(UsageError, parse_scheme("a=   ", "--scheme"), "--scheme needs a command");
  EXPECT_THROW_WITH(UsageError, parse_scheme("a=" + std::string(8193, 'x'), "--scheme"), "up to 8192 bytes");
}

TEST(CommandGrid, links_take_traces_or_rates_and_a_name) {
  CommandLink l = parse_link("/t/Verizon-LTE-short.up,/t/Verizon-LTE-short.down");
  EXPECT_EQ(l.name, "verizon-lte-short");
  EXPECT_EQ(l.up, "/t/Verizon-LTE-short.up");
  EXPECT_EQ(l.down, "/t/Verizon-LTE-short.down");
  l = parse_link("same.trace");
  EXPECT_EQ(l.name, "same");
  EXPECT_EQ(l.down, "same.trace");
  l = parse_link("rate:12Mbit/s");
  EXPECT_EQ(l.name, "12mbit");
  EXPECT_EQ(l.down, "rate:12Mbit/s");
  l = parse_link("wired=rate:100Mbit/s,rate:20Mbit/s");
  EXPECT_EQ(l.name, "wired");
  EXPECT_EQ(l.up, "rate:100Mbit/s");
  EXPECT_EQ(l.down, "rate:20Mbit/s");
  EXPECT_EQ(rate_link(0.5).up, "rate:0.5Mbit/s");
  EXPECT_EQ(rate_link(0.5).name, "0.5mbit");
  EXPECT_THROW_WITH(UsageError, parse_link("a,b,c"), "give [NAME=]UP[,DOWN]");
  EXPECT_THROW_WITH(UsageError, parse_link("x=,b"), "give [NAME=]UP[,DOWN]");
  EXPECT_THROW_WITH(UsageError, parse_link("Bad Name=a"), "the name \"Bad Name\"");
}

TEST(CommandGrid, congestion_controls_are_kernel_names_each_once) {
  EXPECT_EQ(parse_cc_list("reno,bbr"), (std::vector<std::string>{"reno", "bbr"}));
  EXPECT_THROW_WITH(UsageError, parse_cc_list("reno,reno"), "lists reno twice");
  EXPECT_THROW_WITH(UsageError, parse_cc_list("re no"), "as the kernel names them");
  EXPECT_THROW_WITH(UsageError, parse_cc_list(""), "as the kernel names them");
  EXPECT_THROW_WITH(UsageError, parse_cc_list("reno,"), "as the kernel names them");
}

TEST(CommandGrid, configurations_nest_paths_losses_queues_ccs_schemes) {
  CommandSweepSettings s = two_schemes();
  s.queues = {"", "droptail:packets=100"};
  s.preset_paths = {{"wpt:3g", {"wpt-3g", "rate:0.768Mbit/s", "rate:1.6Mbit/s"}, 300}};
  const std::vector<CommandConfiguration> configs = command_configurations(s);
  ASSERT_EQ(configs.size(), 3u * 2 * 2 * 2);
  EXPECT_EQ(configs[0].id(), "a-reno-lte-40ms-loss0-infinite");
  EXPECT_EQ(configs[1].id(), "b-reno-lte-40ms-loss0-infinite");
  EXPECT_EQ(configs[2].id(), "a-bbr-lte-40ms-loss0-infinite");
  EXPECT_EQ(configs[4].id(), "a-reno-lte-40ms-loss0-droptail-packets-100");
  EXPECT_EQ(configs[8].id(), "a-reno-12mbit-40ms-loss0-infinite");
  EXPECT_EQ(configs[16].id(), "a-reno-wpt-3g-300ms-loss0-infinite");
  EXPECT_EQ(configs[16].path_id(), "wpt-3g-300ms-loss0-infinite");
  s.ccs.clear();
  EXPECT_EQ(command_configurations(s)[0].id(), "a-default-lte-40ms-loss0-infinite");
  s.links.push_back(parse_link("lte=/other/Verizon-LTE.up,/other/Verizon-LTE.down"));
  EXPECT_THROW_WITH(UsageError, command_configurations(s), "name the links apart");
  s.links.pop_back();
  s.rtts_ms.clear();
  for (int i = 0; i < 100; i++) s.rtts_ms.push_back(i);
  s.losses = {0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.1, 0.2, 0.3};
  EXPECT_THROW_WITH(UsageError, command_configurations(s), "more than 10000");
}

TEST(CommandGrid, a_run_is_the_shells_around_sh_c) {
  CommandSweepSettings s = two_schemes();
  s.tcp_ecn = "on";
  CommandConfiguration c = command_configurations(s)[2];  // a, bbr, lte
  c.loss = 0.01;
  c.queue = "codel:target=5";
  const CommandPrograms p{"/bin/mm-delay", "/bin/mm-loss", "/bin/mm-link"};
  EXPECT_EQ(command_run_argv(s, c, p, "/r/up.log", "/r/down.log"),
            (std::vector<std::string>{"/bin/mm-delay",
                                      "20",
                                      "--tcp-ecn=on",
                                      "/bin/mm-loss",
                                      "uplink",
                                      "0.01",
                                      "downlink",
                                      "0.01",
                                      "/bin/mm-link",
                                      "/traces/Verizon-LTE.up",
                                      "/traces/Verizon-LTE.down",
                                      "--uplink-queue=codel",
                                      "--uplink-queue-args=target=5",
                                      "--downlink-queue=codel",
                                      "--downlink-queue-args=target=5",
                                      "--uplink-log=/r/up.log",
                                      "--downlink-log=/r/down.log",
                                      "--tcp-congestion-control=bbr",
                                      "--",
                                      "sh",
                                      "-c",
                                      "iperf3 -c $MAHIMAHI_BASE -p $MM_SWEEP_PORT"}));
}

TEST(CommandGrid, manifest_reads_back_its_configurations) {
  const CommandSweepSettings s = two_schemes();
  const nlohmann::json manifest = command_manifest(s);
  EXPECT_TRUE(is_command_manifest(manifest));
  EXPECT_EQ(command_manifest_configurations(manifest, "m"), command_configurations(s));
  nlohmann::json bad = manifest;
  bad["configurations"][0]["rtt_ms"] = 41;
  EXPECT_THROW_WITH(UserError, command_manifest_configurations(bad, "m"), "m is not a command sweep's manifest");
  bad = manifest;
  bad["configurations"][0]["scheme"] = "../x";
  bad["configurations"][0]["id"] = "../x-reno-lte-40ms-loss0-infinite";
  EXPECT_THROW_WITH(UserError, command_manifest_configurations(bad, "m"), "does not match its fields");
  bad = manifest;
  bad["format"] = "mm-sweep 1";
  EXPECT_THROW_WITH(UserError, command_manifest_configurations(bad, "m"), "not a command sweep's manifest");
}

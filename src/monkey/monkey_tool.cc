// SPDX-License-Identifier: GPL-3.0-or-later
// mm-monkey see and serve, after their arguments are scanned (monkey_tool.hh).
#include "monkey/monkey_tool.hh"

#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
#include <vector>

#include "monkey/capture_reader.hh"
#include "monkey/monkey_plots.hh"
#include "monkey/monkey_see.hh"
#include "monkey/monkey_server.hh"
#include "monkey/workload.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/statistics.hh"
#include "util/text.hh"

namespace {
std::string median_text(std::vector<double> values, double scale, const char* unit) {
  const std::optional<double> m = percentile(std::move(values), 50);
  if (!m) return "-";
  char text[64];
  std::snprintf(text, sizeof text, "%.3g %s", *m * scale, unit);
  return text;
}

}  // namespace

int monkey_see_command(const std::string& capture, const std::string& output, bool force) {
  CaptureReader reader(capture);
  FileDescriptor out = create_output_file(output, force);
  std::string description = printable(capture, 200) + ", " + reader.link_name() + ", timestamps to " +
                            (reader.resolution() == 1 ? "1 ns" : "1 us");
  write_all(out.get(), workload_header(description));
  std::vector<double> rtts, bandwidths, losses;
  std::map<std::string, uint64_t> flagged;
  uint64_t exchanges = 0;
  MonkeySee see([&](MonkeyConnection&& c) {
    if (c.rtt) rtts.push_back(static_cast<double>(*c.rtt));
    if (c.bandwidth_bps) bandwidths.push_back(*c.bandwidth_bps);
    if (c.loss) losses.push_back(*c.loss);
    for (const std::string& f : c.flags) flagged[f]++;
    exchanges += c.exchanges.size();
    write_all(out.get(), workload_lines(c));
  });
  const SeenCapture seen = see_capture(reader, see);
  std::cerr << "mm-monkey: " << capture << ": " << count_of(reader.frames(), "frame") << ", "
            << count_of(seen.segments, "TCP segment") << " (" << count_of(seen.other + reader.skipped(), "other frame")
            << "), " << count_of(see.reported(), "connection") << ", " << count_of(exchanges, "exchange") << "\n";
  if (!reader.ended_early().empty())
    std::cerr << "mm-monkey: warning: the capture ends inside a packet (" << reader.ended_early()
              << "): read up to there\n";
  std::cerr << "mm-monkey: medians: RTT " << median_text(rtts, 1e-6, "ms") << ", bandwidth "
            << median_text(bandwidths, 1e-6, "Mbit/s") << ", loss " << median_text(losses, 100, "%") << "\n";
  if (!flagged.empty()) {
    std::string list;
    for (const auto& [f, n] : flagged) list += (list.empty() ? "" : ", ") + f + " " + std::to_string(n);
    std::cerr << "mm-monkey: flagged connections: " << list << "\n";
  }
  if (output != "-") std::cerr << "mm-monkey: wrote " << output << "\n";
  return 0;
}

int monkey_serve_command(uint16_t port, const std::string& congestion_control, const std::string& plan_file) {
  ifaddrs* list = nullptr;
  std::optional<Ipv4> address;
  if (::getifaddrs(&list) == 0) {
    for (ifaddrs* a = list; a; a = a->ifa_next)
      if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET && std::string_view(a->ifa_name) == "ingress")
        address = Ipv4::from_in_addr(reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr);
    ::freeifaddrs(list);
  }
  if (!address)
    throw UserError(
        "serve runs inside a shell (it listens on the address of the device ingress); "
        "mm-monkey do starts it so");
  MonkeyServerOptions options{*address, port, 100'000, congestion_control, {}};
  if (!plan_file.empty())
    options.plan =
        parse_server_plan(read_user_file(plan_file, "server plan", uint64_t{1} << 30, "give mm-monkey do's plan"),
                          user_file_name(plan_file));
  return run_monkey_server(options, [] {});
}

int monkey_plot_command(const std::string& workload, const std::string& results, const std::string& directory,
                        bool svg) {
  const std::vector<WorkloadConnection> connections =
      parse_workload(read_user_file(workload, "workload", uint64_t{1} << 30, "give a workload of mm-monkey see"),
                     user_file_name(workload));
  std::vector<ReplayedRow> rows;
  if (!results.empty())
    rows = parse_replay_results(read_user_file(results, "results", uint64_t{1} << 30, "give mm-monkey do's RESULTS"),
                                user_file_name(results));
  if (::mkdir(directory.c_str(), 0755) != 0 && errno != EEXIST)
    throw UserError("cannot make the directory " + directory + ": " + std::strerror(errno));
  for (const std::string& file : plot_monkey(connections, rows, directory, svg ? "svg" : "png"))
    std::cerr << "mm-monkey: wrote " << file << "\n";
  return 0;
}

// SPDX-License-Identifier: GPL-3.0-or-later
#include "graphing/meter_viewer.hh"

#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "graphing/local_meters.hh"
#include "shell/meter_viewer.hh"
#include "util/exception.hh"

namespace {
// A reply the ferry waits for before the command starts.
void answer(const std::string& text) { (void)!::send(meter_view::kSocketFd, text.data(), text.size(), MSG_NOSIGNAL); }

}  // namespace

int run_meter_viewer(int argc, char** argv) {
  if (argc != 9 || std::strlen(argv[2]) != 4) {
    std::cerr << "mm-meter-view: this draws the live graphs of mm-delay and mm-loss (--meter-*) and is started by "
                 "them, not by hand\n";
    return 2;
  }
  const char* program = argv[1];
  const std::string graphs = argv[2];
  MeterOptions options;
  options.uplink = graphs[0] == '1';
  options.downlink = graphs[1] == '1';
  options.uplink_delay = graphs[2] == '1';
  options.downlink_delay = graphs[3] == '1';
  options.output = argv[3];
  options.snapshot_interval_s = std::strtod(argv[4], nullptr);
  options.stats = std::strcmp(argv[5], "1") == 0;
  const Nanos origin = std::strtoll(argv[6], nullptr, 10);
  LocalMeters meters(program, options, origin);
  for (int d : {0, 1}) {
    if (options.metered(d)) meters.add_direction(d, argv[7 + d], nullptr, false);
  }
  try {
    meters.start();
  } catch (const UserError& e) {
    answer(std::string("E") + e.what());
    return 1;
  }
  answer("K");
  std::string message(meter_view::kMaxMessage, '\0');
  Nanos end = 0;
  for (;;) {
    const ssize_t n = ::recv(meter_view::kSocketFd, message.data(), message.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the ferry is gone: draw what came
    if (static_cast<size_t>(n) < meter_view::kHeaderBytes) continue;
    Nanos now;
    std::memcpy(&now, message.data() + 8, sizeof now);
    if (message[0] == 'X') {
      end = now;
      break;
    }
    const int d = message[1];
    if (message[0] != 'F' || (d != 0 && d != 1)) continue;
    const size_t count = (static_cast<size_t>(n) - meter_view::kHeaderBytes) / sizeof(LinkEvent);
    std::vector<LinkEvent> events(count);
    std::memcpy(events.data(), message.data() + meter_view::kHeaderBytes, count * sizeof(LinkEvent));
    meters.feed(d, events, now);
  }
  try {
    meters.finish(end ? end : monotonic_now());
  } catch (const UserError& e) {
    std::cerr << program << ": " << e.what() << "\n";
    return 1;
  }
  return 0;
}

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The meter viewer: mm-delay's and mm-loss's live graphs drawn by a process of their own,
// mm-meter-view (installed in PKGLIBEXECDIR; graphing/meter_viewer.hh is its side), so that these shells load no
// graphing library (cairo, pango, xcb: 36 libraries) and start as fast as without graphs. The ferry process (the
// user's, after the privilege drop) starts it with the user's environment (DISPLAY, XAUTHORITY) and a SOCK_SEQPACKET
// socket as its descriptor 3, the only one it inherits, and hands it the events the windows and files need.
//
// Protocol, one message per datagram:
//   viewer -> ferry, once, after opening the windows or files: "K", or "E" and the message
//   ferry -> viewer: 'F', direction, 6 bytes of padding, then NOW (int64 ns) and LinkEvents
//                    (a drain's events of one direction; the ferry never waits for the viewer:
//                    a batch the socket has no room for is dropped, the graph shows a gap)
//                    'X', 7 bytes of padding, END (int64 ns): the shell ended; the viewer draws
//                    the last figures, writes the final files, prints --meter-stats and exits
// The viewer's arguments: PROGRAM GRAPHS(4 digits 0/1: uplink, downlink, uplink delay, downlink
// delay) OUTPUT("" for windows) SNAPSHOT-INTERVAL-S STATS(0/1) ORIGIN-NS UPLINK-TITLE DOWNLINK-TITLE
#include <span>
#include <string>

#include "shell/shell_watch.hh"
#include "util/file_descriptor.hh"

namespace meter_view {
constexpr size_t kHeaderBytes = 16;            // type, direction, padding, time
constexpr size_t kMaxEventsPerMessage = 4096;  // 128 KiB of events
constexpr size_t kMaxMessage = kHeaderBytes + kMaxEventsPerMessage * sizeof(LinkEvent);
constexpr int kSocketFd = 3;
constexpr int kStartSeconds = 20;  // to open the windows (an X server over SSH can be slow)
}  // namespace meter_view

// The ferry's side.
class RemoteMeters final : public EventViewer {
 public:
  RemoteMeters(const char* program, const MeterOptions& options, Nanos origin);
  ~RemoteMeters() override { stop(); }

  void add_direction(int d, const std::string& title, const Trace*, bool) override { titles_[d] = title; }
  void start() override;
  void feed(int d, std::span<const LinkEvent> events, Nanos now) override;
  void finish(Nanos end) override;

 private:
  // The installed viewer, or (a build tree) the one next to this program.
  static std::string viewer_path();
  void send(size_t bytes);
  void wait();
  void stop();  // a viewer that failed to start, or hangs

  const char* program_;
  MeterOptions options_;
  Nanos origin_;
  std::string titles_[2];
  FileDescriptor socket_;
  pid_t pid_ = -1;
  std::string message_;
};

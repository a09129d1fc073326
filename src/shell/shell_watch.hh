// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What watches a shell's two directions, in its ferry process: the logs (-u/--uplink-log,
// -d/--downlink-log, in mm-link's format) and the live meters (--meter-*), their options, and
// the drain of the queues' event rings into them. The meters are drawn by an EventViewer: in
// this process (graphing/local_meters.hh: mm-link, mm-meter, which link the graphing libraries)
// or in the meter viewer, a process of its own (shell/meter_viewer.hh: mm-delay and mm-loss,
// which then load no graphing library at all, so that they start as fast as before).
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "packet/link_log.hh"
#include "packet/trace.hh"
#include "shell/ferry_pair.hh"
#include "shell/packet_shell.hh"
#include "util/args.hh"

struct MeterOptions {
  bool uplink = false, downlink = false, uplink_delay = false, downlink_delay = false;
  std::string output;              // --meter-output ("": windows)
  double snapshot_interval_s = 0;  // --meter-snapshot-interval (0: at the end only)
  bool stats = false;              // --meter-stats

  bool any() const { return uplink || downlink || uplink_delay || downlink_delay; }
  // Direction d (0 uplink, 1 downlink) has a graph.
  bool metered(int d) const { return d == 0 ? uplink || uplink_delay : downlink || downlink_delay; }

  // The options, for an ArgScanner; with_delay: mm-link's delay graphs too.
  void add_options(std::vector<ArgScanner::Option>& options, bool with_delay);
  // After the scan: the combinations, and whether the shell needs an X display.
  void finish(ShellSpec& spec, bool graphs_by_default);
  // --meter-output's value: a file whose name gives the type (.png, .svg) or a directory.
  static void check_output(const std::string& output);
};

// The logs of a shell's two directions (-u/--uplink-log, -d/--downlink-log), in mm-link's format.
struct LogOptions {
  std::string uplink, downlink;  // paths ("": no log)
  std::string command_line;      // the shell's, for the headers

  void add_options(std::vector<ArgScanner::Option>& options);
  void set_command_line(int ac, char** av);
  const std::string& path(int direction) const { return direction == 0 ? uplink : downlink; }
};

// Draws what the meters show, from the events of the directions: windows or files.
class EventViewer {
 public:
  virtual ~EventViewer() = default;
  // Direction d (0 uplink, 1 downlink) is metered: its title, and the link's trace (nullptr
  // for a shell without a link). Before start().
  virtual void add_direction(int d, const std::string& title, const Trace* trace, bool once) = 0;
  // Opens the windows or the files; throws UserError if they cannot be (before the command starts).
  virtual void start() = 0;
  // The ferry's main thread, once per drain: a direction's new events, and the time.
  virtual void feed(int d, std::span<const LinkEvent> events, Nanos now) = 0;
  // The shell ended at `end`: the last figures, the final files, --meter-stats.
  virtual void finish(Nanos end) = 0;
};

// Both directions' consumers of the ferry's events: a log writer each, and the viewer for the
// metered ones. The ferry's main thread drains them.
class LinkEventSinks final : public FerryLogs {
 public:
  LinkEventSinks();

  // The ring the queue of direction d pushes to, or nullptr if neither a log nor the viewer wants it.
  LinkEventRing* add(int d, std::unique_ptr<LinkLogWriter> writer, EventViewer* viewer);
  bool empty() const { return directions_.empty(); }
  bool viewed() const;

  Nanos period() const override { return viewed() ? 20 * kNanosPerMs : 100 * kNanosPerMs; }
  int wake_fd() const override { return wake_.get(); }
  void drain() override;
  void finish(Nanos end) override;
  Nanos ended() const { return ended_; }  // when finish() was called (0: not yet)

 private:
  struct Direction {
    int index;
    std::unique_ptr<LinkEventRing> ring;
    std::unique_ptr<LinkLogWriter> writer;
    EventViewer* viewer;
    std::vector<LinkEvent> batch;  // the viewer's events of one drain
  };
  FileDescriptor wake_;
  std::vector<Direction> directions_;
  Nanos ended_ = 0;
};

// The logs and meters of a shell's two directions, set up in its ferry process (as the user: the
// logs are opened with the user's rights). Their times count from `origin`: for a shell that
// follows a trace, and by default, the outermost trace-following shell's start
// (MAHIMAHI_CLOCK_BASE; this shell's own if it is that one), so that stacked shells' traces,
// logs and graphs line up; the logs' init timestamp is that instant's wall time. `viewer` draws
// the meters (nullptr: no --meter-* option).
class ShellWatch {
 public:
  ShellWatch(const char* program, const LogOptions& logs, const FerryEndpoints& endpoints,
             std::unique_ptr<EventViewer> viewer, Nanos origin);
  ShellWatch(const char* program, const LogOptions& logs, const FerryEndpoints& endpoints,
             std::unique_ptr<EventViewer> viewer)
      : ShellWatch(program, logs, endpoints, std::move(viewer), trace_start(endpoints)) {}
  Nanos origin() const { return origin_; }

  // One direction (0 uplink, 1 downlink): the ring its queue pushes to, or nullptr if neither a
  // log nor a meter watches it. `what` goes in the log header's brackets (the trace's name, the
  // shell's settings), `detail` is a header line of its own ("queue: ...", or none); `trace`
  // is the link's (the log's opportunity lines, the graph's capacity), nullptr for a shell
  // without a link. `metered`: this direction has a --meter-* graph.
  LinkEventRing* direction(int d, bool metered, const std::string& what, const std::string& detail,
                           const std::string& meter_title, const Trace* trace = nullptr, bool once = false);

  // Runs the ferry pair with the logs written and the graphs on show: they open before
  // ready(), so that a display that cannot be used fails the shell before the command starts.
  template <class Uplink, class Downlink>
  int run(Uplink& uplink, Downlink& downlink, const std::function<void()>& ready) {
    if (viewer_) viewer_->start();
    const int status = run_ferry_pair(endpoints_, uplink, downlink, ready, sinks_.empty() ? nullptr : &sinks_);
    if (viewer_) viewer_->finish(sinks_.ended() ? sinks_.ended() : monotonic_now());
    return status;
  }

 private:
  const char* program_;
  const LogOptions& logs_;
  const FerryEndpoints& endpoints_;
  std::unique_ptr<EventViewer> viewer_;
  Nanos origin_;
  int64_t epoch_ms_;
  LinkEventSinks sinks_;
};

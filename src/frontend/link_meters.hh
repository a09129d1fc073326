// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The logs and live meters of mm-link, mm-delay, mm-loss and mm-meter: their options, and their
// place in the ferry process (the drains of the queues' event rings into the logs and the
// meters, the windows, the files).
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graphing/meter.hh"
#include "graphing/meter_display.hh"
#include "packet/link_log.hh"
#include "shell/ferry_pair.hh"
#include "shell/packet_shell.hh"
#include "util/args.hh"
#include "util/text.hh"

struct MeterOptions {
  bool uplink = false, downlink = false, uplink_delay = false, downlink_delay = false;
  std::string output;              // --meter-output ("": windows)
  double snapshot_interval_s = 0;  // --meter-snapshot-interval (0: at the end only)
  bool stats = false;              // --meter-stats

  bool any() const { return uplink || downlink || uplink_delay || downlink_delay; }

  // The options, for an ArgScanner; with_delay: mm-link's delay graphs too.
  void add_options(std::vector<ArgScanner::Option>& options, bool with_delay) {
    options.push_back({"meter-uplink", false, [this](std::string_view) { uplink = true; }});
    options.push_back({"meter-downlink", false, [this](std::string_view) { downlink = true; }});
    if (with_delay) {
      options.push_back({"meter-uplink-delay", false, [this](std::string_view) { uplink_delay = true; }});
      options.push_back({"meter-downlink-delay", false, [this](std::string_view) { downlink_delay = true; }});
    }
    options.push_back({"meter-all", false, [this, with_delay](std::string_view) {
                         uplink = downlink = true;
                         if (with_delay) uplink_delay = downlink_delay = true;
                       }});
    options.push_back({"meter-output", true, [this](std::string_view v) {
                         output = v;
                         MeterFiles::check_output(output);
                       }});
    options.push_back({"meter-snapshot-interval", true, [this](std::string_view v) {
                         snapshot_interval_s = parse_nonnegative(v, "--meter-snapshot-interval");
                         if (snapshot_interval_s < 0.1 || snapshot_interval_s > 86400)
                           throw UsageError("--meter-snapshot-interval=" + std::string(v) +
                                            ": give seconds from 0.1 to 86400");
                       }});
    options.push_back({"meter-stats", false, [this](std::string_view) { stats = true; }});
  }

  // After the scan: the combinations, and whether the shell needs an X display.
  void finish(ShellSpec& spec, bool graphs_by_default) {
    if (!any() && (graphs_by_default || !output.empty())) uplink = downlink = true;
    if (snapshot_interval_s > 0 && output.empty())
      throw UsageError(
          "--meter-snapshot-interval writes the graphs to --meter-output=FILE.png (or .svg, or a "
          "directory): give that too");
    if (any() && output.empty())
      spec.display_needed =
          "the live graphs (--meter-*) open X windows, and DISPLAY is not set; to draw them without a display, give "
          "--meter-output=FILE.png (or FILE.svg, or a directory for one PNG per graph), written when the shell ends "
          "(and every S seconds with --meter-snapshot-interval=S)";
  }
};

// The logs of a shell's two directions (-u/--uplink-log, -d/--downlink-log), in mm-link's format.
struct LogOptions {
  std::string uplink, downlink;  // paths ("": no log)
  std::string command_line;      // the shell's, for the headers

  void add_options(std::vector<ArgScanner::Option>& options) {
    for (const char* name : {"uplink-log", "u"})
      options.push_back({name, true, [this](std::string_view v) { uplink = checked(v, "--uplink-log"); }});
    for (const char* name : {"downlink-log", "d"})
      options.push_back({name, true, [this](std::string_view v) { downlink = checked(v, "--downlink-log"); }});
  }
  void set_command_line(int ac, char** av) {
    for (int i = 0; i < ac; i++) command_line += (i ? " " : "") + shell_quote(av[i]);
  }
  const std::string& path(int direction) const { return direction == 0 ? uplink : downlink; }

 private:
  static std::string checked(std::string_view v, const char* option) {
    if (v.empty()) throw UsageError(std::string(option) + " needs a file name");
    return std::string(v);
  }
};

// Both directions' consumers of the ferry's events: a log writer and a meter each, either
// optional. The ferry's main thread drains them; windows and files draw from the meters.
class LinkEventSinks final : public FerryLogs {
 public:
  LinkEventSinks() : wake_(check_syscall("eventfd", ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK))) {}

  // The ring the queue of one direction pushes to, or nullptr if neither a log nor a meter wants it.
  LinkEventRing* add(std::unique_ptr<LinkLogWriter> writer, std::unique_ptr<LinkMeter> meter) {
    if (!writer && !meter) return nullptr;
    directions_.push_back({std::make_unique<LinkEventRing>(wake_.get()), std::move(writer), std::move(meter)});
    return directions_.back().ring.get();
  }
  bool empty() const { return directions_.empty(); }
  bool metered() const {
    for (const auto& d : directions_) {
      if (d.meter) return true;
    }
    return false;
  }

  Nanos period() const override { return metered() ? 20 * kNanosPerMs : 100 * kNanosPerMs; }
  int wake_fd() const override { return wake_.get(); }
  void drain() override {
    const Nanos now = monotonic_now();
    for (auto& d : directions_) {
      if (!d.meter) {
        d.writer->drain(*d.ring);
        continue;
      }
      d.meter->feed(
          [&](auto&& to_meter) {
            d.ring->drain([&](const LinkEvent& e) {
              if (d.writer) d.writer->add(e);
              to_meter(e);
            });
          },
          now);
      if (d.writer) d.writer->drained();
    }
  }
  void finish(Nanos end) override {
    for (auto& d : directions_) {
      if (d.writer) d.writer->finish(end);
      if (d.meter) d.meter->advance(end);
    }
  }

 private:
  struct Direction {
    std::unique_ptr<LinkEventRing> ring;
    std::unique_ptr<LinkLogWriter> writer;
    std::unique_ptr<LinkMeter> meter;
  };
  FileDescriptor wake_;
  std::vector<Direction> directions_;
};

// The logs and meters of a shell's two directions, set up in its ferry process (as the user: the
// logs are opened with the user's rights). Their times count from the outermost
// trace-following shell's start (MAHIMAHI_CLOCK_BASE; this shell's own if it is that one), so
// that stacked shells' traces, logs and graphs line up; the logs' init timestamp is that
// instant's wall time.
class ShellWatch {
 public:
  ShellWatch(const char* program, const LogOptions& logs, const MeterOptions& meters, const FerryEndpoints& endpoints)
      : program_(program), logs_(logs), meters_(meters), endpoints_(endpoints), origin_(trace_start(endpoints)) {
    timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    const Nanos now = monotonic_now();
    epoch_ms_ = (static_cast<int64_t>(wall.tv_sec) * 1'000'000'000 + wall.tv_nsec - (now - origin_)) / 1'000'000;
  }
  Nanos origin() const { return origin_; }

  // One direction (0 uplink, 1 downlink): the ring its queue pushes to, or nullptr if neither a
  // log nor a meter watches it. `what` goes in the log header's brackets (the trace's name, the
  // shell's settings), `detail` is a header line of its own ("queue: ...", or none); `trace`
  // is the link's (the log's opportunity lines, the graph's capacity), nullptr for a shell
  // without a link.
  LinkEventRing* direction(int d, const std::string& what, const std::string& detail, const std::string& meter_title,
                           const Trace* trace = nullptr, bool once = false) {
    const char* name = d == 0 ? "Uplink" : "Downlink";
    const std::string& path = logs_.path(d);
    std::unique_ptr<LinkLogWriter> writer;
    if (!path.empty()) {
      FileDescriptor file(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666));
      if (!file.valid()) throw UserError("cannot write log " + path + ": " + std::strerror(errno));
      std::string header = "# mahimahi " + std::string(program_) + " (" + name + ") [" + what + "] > " + path +
                           "\n# command line: " + logs_.command_line + "\n";
      if (!detail.empty()) header += "# " + detail + "\n";
      header += "# init timestamp: " + std::to_string(epoch_ms_) + "\n# base timestamp: 0\n";
      if (!endpoints_.outer_prefix.empty()) header += "# mahimahi config: " + endpoints_.outer_prefix + "\n";
      writer = std::make_unique<LinkLogWriter>(std::move(file), trace, origin_, origin_, once, header,
                                               "the " + ascii_lowercase(name) + " log " + path);
    }
    std::unique_ptr<LinkMeter> meter;
    const bool metered = d == 0 ? meters_.uplink || meters_.uplink_delay : meters_.downlink || meters_.downlink_delay;
    if (metered) {
      meter = std::make_unique<LinkMeter>(trace, once, origin_, endpoints_.outer_prefix + meter_title);
      graphs_[d] = meter.get();
    }
    return sinks_.add(std::move(writer), std::move(meter));
  }

  // Runs the ferry pair with the logs written and the graphs on show.
  template <class Uplink, class Downlink>
  int run(Uplink& uplink, Downlink& downlink, const std::function<void()>& ready);

 private:
  const char* program_;
  const LogOptions& logs_;
  const MeterOptions& meters_;
  const FerryEndpoints& endpoints_;
  Nanos origin_;
  int64_t epoch_ms_;
  LinkEventSinks sinks_;
  const LinkMeter* graphs_[2] = {nullptr, nullptr};
};

// The graphs chosen, in the order of --meter-all: uplink, downlink, uplink delay, downlink delay.
inline std::vector<MeterGraph> chosen_graphs(const MeterOptions& options, const LinkMeter* up, const LinkMeter* down) {
  std::vector<MeterGraph> graphs;
  if (options.uplink) graphs.push_back({up, MeterGraph::Kind::Throughput, "uplink"});
  if (options.downlink) graphs.push_back({down, MeterGraph::Kind::Throughput, "downlink"});
  if (options.uplink_delay) graphs.push_back({up, MeterGraph::Kind::Delay, "uplink-delay"});
  if (options.downlink_delay) graphs.push_back({down, MeterGraph::Kind::Delay, "downlink-delay"});
  return graphs;
}

// Runs the ferry pair with the chosen graphs on show (windows, or files written at the end and
// every --meter-snapshot-interval): they open before ready(), so that a display that cannot be
// used fails the shell before the command starts.
template <class Uplink, class Downlink>
int run_metered_ferry_pair(const char* program, const MeterOptions& options, const FerryEndpoints& endpoints,
                           Uplink& uplink, Downlink& downlink, const std::function<void()>& ready,
                           LinkEventSinks& sinks, const LinkMeter* up, const LinkMeter* down) {
  std::unique_ptr<MeterDisplay> display;
  std::unique_ptr<MeterFiles> files;
  if (options.any()) {
    const std::vector<MeterGraph> graphs = chosen_graphs(options, up, down);
    if (options.output.empty()) {
      display = std::make_unique<MeterDisplay>(graphs, program);
    } else {
      files = std::make_unique<MeterFiles>(graphs, options.output, options.snapshot_interval_s, program);
    }
  }
  timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  const int status = run_ferry_pair(endpoints, uplink, downlink, ready, sinks.empty() ? nullptr : &sinks);
  if (options.stats && display) {
    timespec end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    const double seconds =
        static_cast<double>(end.tv_sec - start.tv_sec) + static_cast<double>(end.tv_nsec - start.tv_nsec) / 1e9;
    rusage usage;
    ::getrusage(RUSAGE_SELF, &usage);
    char line[200];
    std::snprintf(line, sizeof line,
                  "%s: meter: %llu frames in %.1f s (%.1f per second), drawing CPU %.2f s (%.1f %%), ferry "
                  "process peak RSS %ld MB\n",
                  program, static_cast<unsigned long long>(display->frames()), seconds,
                  static_cast<double>(display->frames()) / seconds, display->cpu_seconds(),
                  100 * display->cpu_seconds() / seconds, usage.ru_maxrss / 1024);
    std::cerr << line;
  }
  display.reset();
  if (files) files->write_final();
  return status;
}

template <class Uplink, class Downlink>
int ShellWatch::run(Uplink& uplink, Downlink& downlink, const std::function<void()>& ready) {
  return run_metered_ferry_pair(program_, meters_, endpoints_, uplink, downlink, ready, sinks_, graphs_[0], graphs_[1]);
}

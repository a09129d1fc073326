// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Where a shell's live meters are drawn: X windows (xcb, cairo, pango), one per graph, redrawn
// 32 times a second by a thread of their own; and image files (--meter-output), written by
// another thread every few seconds (--meter-snapshot-interval) and when the shell ends. Both
// run in the ferry process, with the user's rights only: the X connection is the user's, made
// with the user's DISPLAY and XAUTHORITY, and the files are written as the user.
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "graphing/meter.hh"
#include "util/exception.hh"

// One graph: a meter's throughput or its delay.
struct MeterGraph {
  enum class Kind { Throughput, Delay };
  const LinkMeter* meter;
  Kind kind;
  std::string name;  // for a file of its own: "uplink", "downlink-delay"

  // "[delay 50 ms] [link ...] uplink", "... uplink delay": the shell's prefix and the direction.
  std::string window_title() const { return meter->title() + (kind == Kind::Delay ? " delay" : ""); }
  Chart chart(MeterScope scope) const {
    return kind == Kind::Throughput ? meter->throughput_chart(scope) : meter->delay_chart(scope);
  }
};

// The windows. The constructor connects and opens them (throws UserError, naming
// --meter-output, if there is no display it can use); the destructor closes them and stops
// the thread. Closing a window (or its connection failing) stops only the drawing.
class MeterDisplay {
 public:
  // A little over 30, so that a frame drawn late now and then still leaves 30 a second.
  static constexpr double kFramesPerSecond = 32;

  MeterDisplay(std::vector<MeterGraph> graphs, const std::string& program);
  ~MeterDisplay();
  MeterDisplay(const MeterDisplay&) = delete;
  MeterDisplay& operator=(const MeterDisplay&) = delete;

  uint64_t frames() const { return frames_.load(std::memory_order_relaxed); }
  // The drawing thread's CPU time so far.
  double cpu_seconds() const;

 private:
  struct Windows;
  void run();
  bool draw(size_t window);  // one window's next frame; false if skipped

  std::unique_ptr<Windows> windows_;
  std::string program_;
  int stop_fd_ = -1;  // eventfd: ends the thread
  std::atomic<uint64_t> frames_{0};
  std::atomic<bool> finished_{false};
  std::atomic<double> final_cpu_seconds_{0};
  std::thread thread_;
};

// --meter-output: one image of every graph (FILE.png or FILE.svg, one under the other), or a
// directory with one PNG per graph (uplink.png, uplink-delay.png, ...). Each file is replaced
// whole (written aside, then renamed), so a viewer never sees half of one. (The option's value
// is checked with the shell's other options: MeterOptions::check_output, shell/shell_watch.hh.)
class MeterFiles {
 public:
  // interval_s: 0 for the shell's end only.
  MeterFiles(std::vector<MeterGraph> graphs, std::string output, double interval_s, std::string program);
  ~MeterFiles();  // stops the snapshot thread (write_final() writes the last images)
  MeterFiles(const MeterFiles&) = delete;
  MeterFiles& operator=(const MeterFiles&) = delete;

  // Writes the images once more, with everything the meters hold; throws UserError if a file
  // cannot be written.
  void write_final();

 private:
  void write();
  void snapshots();

  std::vector<MeterGraph> graphs_;
  std::string output_;
  bool directory_;
  double interval_s_;
  std::string program_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

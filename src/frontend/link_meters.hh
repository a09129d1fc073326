// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The live meters drawn in the ferry process itself (mm-link, mm-meter, and the meter viewer
// that draws mm-delay's and mm-loss's): a LinkMeter per direction, fed by the ferry's main
// thread, drawn into X windows or files by the graphing layer.
#include <sys/resource.h>
#include <time.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "frontend/shell_watch.hh"
#include "graphing/meter.hh"
#include "graphing/meter_display.hh"

class LocalMeters final : public EventViewer {
 public:
  // pass_through: mm-meter's (what arrives leaves at once: one line, "Traffic").
  LocalMeters(const char* program, const MeterOptions& options, Nanos origin, bool pass_through = false)
      : program_(program), options_(options), origin_(origin), pass_through_(pass_through) {}

  void add_direction(int d, const std::string& title, const Trace* trace, bool once) override {
    meters_[d] = std::make_unique<LinkMeter>(trace, once, origin_, title, pass_through_);
  }
  void start() override {
    const std::vector<MeterGraph> graphs = chosen_graphs();
    if (graphs.empty()) return;
    if (options_.output.empty()) {
      display_ = std::make_unique<MeterDisplay>(graphs, program_);
    } else {
      files_ = std::make_unique<MeterFiles>(graphs, options_.output, options_.snapshot_interval_s, program_);
    }
    clock_gettime(CLOCK_MONOTONIC, &start_);
  }
  void feed(int d, std::span<const LinkEvent> events, Nanos now) override {
    if (!meters_[d]) return;
    meters_[d]->feed(
        [&](auto&& take) {
          for (const LinkEvent& e : events) take(e);
        },
        now);
  }
  void finish(Nanos end) override {
    for (auto& m : meters_) {
      if (m) m->advance(end);
    }
    if (options_.stats && display_) print_stats();
    display_.reset();
    if (files_) files_->write_final();
  }

 private:
  // The graphs chosen, in the order of --meter-all: uplink, downlink, uplink delay, downlink delay.
  std::vector<MeterGraph> chosen_graphs() const {
    std::vector<MeterGraph> graphs;
    const LinkMeter* up = meters_[0].get();
    const LinkMeter* down = meters_[1].get();
    if (options_.uplink && up) graphs.push_back({up, MeterGraph::Kind::Throughput, "uplink"});
    if (options_.downlink && down) graphs.push_back({down, MeterGraph::Kind::Throughput, "downlink"});
    if (options_.uplink_delay && up) graphs.push_back({up, MeterGraph::Kind::Delay, "uplink-delay"});
    if (options_.downlink_delay && down) graphs.push_back({down, MeterGraph::Kind::Delay, "downlink-delay"});
    return graphs;
  }
  void print_stats() const {
    timespec end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    const double seconds =
        static_cast<double>(end.tv_sec - start_.tv_sec) + static_cast<double>(end.tv_nsec - start_.tv_nsec) / 1e9;
    rusage usage;
    ::getrusage(RUSAGE_SELF, &usage);
    char line[200];
    std::snprintf(line, sizeof line,
                  "%s: meter: %llu frames in %.1f s (%.1f per second), drawing CPU %.2f s (%.1f %%), ferry "
                  "process peak RSS %ld MB\n",
                  program_, static_cast<unsigned long long>(display_->frames()), seconds,
                  static_cast<double>(display_->frames()) / seconds, display_->cpu_seconds(),
                  100 * display_->cpu_seconds() / seconds, usage.ru_maxrss / 1024);
    std::cerr << line;
  }

  const char* program_;
  MeterOptions options_;
  Nanos origin_;
  bool pass_through_;
  std::unique_ptr<LinkMeter> meters_[2];
  std::unique_ptr<MeterDisplay> display_;
  std::unique_ptr<MeterFiles> files_;
  timespec start_{};
};

// SPDX-License-Identifier: GPL-3.0-or-later
#include "graphing/local_meters.hh"

#include <sys/resource.h>

#include <cstdio>
#include <iostream>

void LocalMeters::add_direction(int d, const std::string& title, const Trace* trace, bool once) {
  meters_[d] = std::make_unique<LinkMeter>(trace, once, origin_, title, pass_through_);
}

void LocalMeters::start() {
  const std::vector<MeterGraph> graphs = chosen_graphs();
  if (graphs.empty()) return;
  if (options_.output.empty()) {
    display_ = std::make_unique<MeterDisplay>(graphs, program_);
  } else {
    files_ = std::make_unique<MeterFiles>(graphs, options_.output, options_.snapshot_interval_s, program_);
  }
  clock_gettime(CLOCK_MONOTONIC, &start_);
}

void LocalMeters::feed(int d, std::span<const LinkEvent> events, Nanos now) {
  if (!meters_[d]) return;
  meters_[d]->feed(
      [&](auto&& take) {
        for (const LinkEvent& e : events) take(e);
      },
      now);
}

void LocalMeters::finish(Nanos end) {
  for (auto& m : meters_) {
    if (m) m->advance(end);
  }
  if (options_.stats && display_) print_stats();
  display_.reset();
  if (files_) files_->write_final();
}

std::vector<MeterGraph> LocalMeters::chosen_graphs() const {
  std::vector<MeterGraph> graphs;
  const LinkMeter* up = meters_[0].get();
  const LinkMeter* down = meters_[1].get();
  if (options_.uplink && up) graphs.push_back({up, MeterGraph::Kind::Throughput, "uplink"});
  if (options_.downlink && down) graphs.push_back({down, MeterGraph::Kind::Throughput, "downlink"});
  if (options_.uplink_delay && up) graphs.push_back({up, MeterGraph::Kind::Delay, "uplink-delay"});
  if (options_.downlink_delay && down) graphs.push_back({down, MeterGraph::Kind::Delay, "downlink-delay"});
  return graphs;
}

void LocalMeters::print_stats() const {
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

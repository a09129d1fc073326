// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The live meters drawn in the ferry process itself (mm-link, mm-meter, and the meter viewer
// that draws mm-delay's and mm-loss's): a LinkMeter per direction, fed by the ferry's main
// thread, drawn into X windows or files (graphing/meter_display.hh).
#include <time.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "graphing/meter.hh"
#include "graphing/meter_display.hh"
#include "shell/shell_watch.hh"

class LocalMeters final : public EventViewer {
 public:
  // pass_through: mm-meter's (what arrives leaves at once: one line, "Traffic").
  LocalMeters(const char* program, const MeterOptions& options, Nanos origin, bool pass_through = false)
      : program_(program), options_(options), origin_(origin), pass_through_(pass_through) {}

  void add_direction(int d, const std::string& title, const Trace* trace, bool once) override;
  void start() override;
  void feed(int d, std::span<const LinkEvent> events, Nanos now) override;
  void finish(Nanos end) override;

 private:
  // The graphs chosen, in the order of --meter-all: uplink, downlink, uplink delay, downlink delay.
  std::vector<MeterGraph> chosen_graphs() const;
  void print_stats() const;

  const char* program_;
  MeterOptions options_;
  Nanos origin_;
  bool pass_through_;
  std::unique_ptr<LinkMeter> meters_[2];
  std::unique_ptr<MeterDisplay> display_;
  std::unique_ptr<MeterFiles> files_;
  timespec start_{};
};

// SPDX-License-Identifier: GPL-3.0-or-later
#include "shell/shell_watch.hh"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <time.h>

#include <cerrno>
#include <cstring>

#include "util/exception.hh"
#include "util/text.hh"

void MeterOptions::add_options(std::vector<ArgScanner::Option>& options, bool with_delay) {
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
                       check_output(output);
                     }});
  options.push_back({"meter-snapshot-interval", true, [this](std::string_view v) {
                       snapshot_interval_s = parse_nonnegative(v, "--meter-snapshot-interval");
                       if (snapshot_interval_s < 0.1 || snapshot_interval_s > 86400)
                         throw UsageError("--meter-snapshot-interval=" + std::string(v) +
                                          ": give seconds from 0.1 to 86400");
                     }});
  options.push_back({"meter-stats", false, [this](std::string_view) { stats = true; }});
}

void MeterOptions::finish(ShellSpec& spec, bool graphs_by_default) {
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

void MeterOptions::check_output(const std::string& output) {
  if (output.empty()) throw UsageError("--meter-output needs a file (FILE.png, FILE.svg) or a directory");
  const std::string base = output.substr(output.find_last_of('/') + 1);
  if (base.find('.') != std::string::npos && !output.ends_with(".png") && !output.ends_with(".svg"))
    throw UsageError("--meter-output=" + output +
                     ": the type is taken from the name; give FILE.png or FILE.svg, or a directory for one PNG per "
                     "graph");
}

namespace {
std::string checked_log(std::string_view v, const char* option) {
  if (v.empty()) throw UsageError(std::string(option) + " needs a file name");
  return std::string(v);
}
}  // namespace

void LogOptions::add_options(std::vector<ArgScanner::Option>& options) {
  for (const char* name : {"uplink-log", "u"})
    options.push_back({name, true, [this](std::string_view v) { uplink = checked_log(v, "--uplink-log"); }});
  for (const char* name : {"downlink-log", "d"})
    options.push_back({name, true, [this](std::string_view v) { downlink = checked_log(v, "--downlink-log"); }});
}

void LogOptions::set_command_line(int ac, char** av) {
  for (int i = 0; i < ac; i++) command_line += (i ? " " : "") + shell_quote(av[i]);
}

LinkEventSinks::LinkEventSinks() : wake_(check_syscall("eventfd", ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK))) {}

LinkEventRing* LinkEventSinks::add(int d, std::unique_ptr<LinkLogWriter> writer, EventViewer* viewer) {
  if (!writer && !viewer) return nullptr;
  directions_.push_back({d, std::make_unique<LinkEventRing>(wake_.get()), std::move(writer), viewer, {}});
  if (viewer) directions_.back().batch.reserve(LinkEventRing::kCapacity);  // no allocation in a drain
  return directions_.back().ring.get();
}

bool LinkEventSinks::viewed() const {
  for (const auto& d : directions_) {
    if (d.viewer) return true;
  }
  return false;
}

void LinkEventSinks::drain() {
  const Nanos now = monotonic_now();
  for (auto& d : directions_) {
    d.ring->drain([&](const LinkEvent& e) {
      if (d.writer) d.writer->add(e);
      if (d.viewer) d.batch.push_back(e);
    });
    if (d.writer) d.writer->drained();
    if (d.viewer) {
      d.viewer->feed(d.index, d.batch, now);
      d.batch.clear();
    }
  }
}

void LinkEventSinks::finish(Nanos end) {
  ended_ = end;
  for (auto& d : directions_) {
    if (d.writer) d.writer->finish(end);
  }
}

ShellWatch::ShellWatch(const char* program, const LogOptions& logs, const FerryEndpoints& endpoints,
                       std::unique_ptr<EventViewer> viewer, Nanos origin)
    : program_(program), logs_(logs), endpoints_(endpoints), viewer_(std::move(viewer)), origin_(origin) {
  timespec wall;
  clock_gettime(CLOCK_REALTIME, &wall);
  const Nanos now = monotonic_now();
  epoch_ms_ = (static_cast<int64_t>(wall.tv_sec) * 1'000'000'000 + wall.tv_nsec - (now - origin_)) / 1'000'000;
}

LinkEventRing* ShellWatch::direction(int d, bool metered, const std::string& what, const std::string& detail,
                                     const std::string& meter_title, const Trace* trace, bool once) {
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
  EventViewer* viewer = metered && viewer_ ? viewer_.get() : nullptr;
  if (viewer) viewer->add_direction(d, endpoints_.outer_prefix + meter_title, trace, once);
  return sinks_.add(d, std::move(writer), viewer);
}

// SPDX-License-Identifier: GPL-3.0-or-later
// Reading mm-link logs for the graphs, with bounds, and their summary and signal delay (see
// link_log_reader.hh).
#include "graphing/link_log_reader.hh"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/statistics.hh"

namespace {
// Sets `value` only to a number it accepts (fuzz-link-log: a refused base timestamp of 5e19
// was kept anyway, and times minus it overflowed the signal delay's integer milliseconds).
bool parse_number(std::string_view& rest, double& value) {
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  double number = 0;
  auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), number);
  if (ec != std::errc() || !std::isfinite(number) || std::abs(number) > LinkLog::kMaxValue) return false;
  value = number;
  rest.remove_prefix(static_cast<size_t>(ptr - rest.data()));
  return true;
}

std::string quoted(std::string_view line) {
  return "\"" + std::string(line.substr(0, 60)) + (line.size() > 60 ? "...\"" : "\"");
}
}  // namespace

LinkLog LinkLog::read(const std::string& path) {
  return parse(read_user_file(path, "log", kMaxFileBytes,
                              "plot a part of it, e.g. awk '/^#/ || $1 < 3600000' LOG for the first hour"),
               user_file_name(path));
}

LinkLog LinkLog::parse(std::string_view text, const std::string& path) {
  LinkLog log;
  double base = 0;
  bool any = false, header = false;
  size_t position = 0;
  uint64_t line_number = 0;
  while (position < text.size()) {
    line_number++;
    size_t end = text.find('\n', position);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + position, end - position);
    position = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (line.front() == '#') {
      header = true;
      constexpr std::string_view kBase = "# base timestamp:";
      if (line.rfind(kBase, 0) == 0) {
        std::string_view rest = line.substr(kBase.size());
        parse_number(rest, base);
      }
      continue;
    }
    const std::string where = path + ":" + std::to_string(line_number) + ": ";
    if (line.size() > kMaxLineLength) {
      throw UserError(where + "line of " + std::to_string(line.size()) + " characters, longer than any event line (" +
                      std::to_string(kMaxLineLength) + "): " + quoted(line) + " (is this an mm-link log?)");
    }
    std::string_view rest = line;
    double t = 0, a = 0, b = 0;
    if (!parse_number(rest, t))
      throw UserError(where + "expected a time (a number of ms up to 1e15), found " + quoted(line));
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    if (rest.empty()) throw UserError(where + "missing event type");
    const char kind = rest.front();
    rest.remove_prefix(1);
    t -= base;
    bool ok = parse_number(rest, a);
    switch (kind) {
      case '#':
        log.opportunities.push_back({t, a});
        break;
      case '+':
        log.arrivals.push_back({t, a});
        break;
      case '-':
        ok = ok && parse_number(rest, b);
        log.departures.push_back({t, a, b});
        break;
      case 'd':
        ok = ok && parse_number(rest, b);
        log.drops.push_back({t, a, b});
        break;
      case 'm':
        ok = ok && parse_number(rest, b);
        log.marks.push_back({t, a, b});
        break;
      default:
        throw UserError(where + "unknown event type '" + std::string(1, kind) + "'");
    }
    // Sizes, counts and delays are never negative in what mm-link writes (a negative count of
    // dropped packets would wrap around when summed as a whole number).
    if (!ok || a < 0 || b < 0)
      throw UserError(where + "malformed '" + std::string(1, kind) + "' line " + quoted(line) +
                      " (sizes, counts and delays are numbers from 0 to 1e15)");
    if (!any || t < log.first) log.first = t;
    if (!any || t > log.last) log.last = t;
    any = true;
  }
  // A log of a link that carried nothing still has mm-link's header lines; a file with neither
  // header nor events is something else.
  if (!any && !header)
    throw UserError(path + ": empty, not an mm-link log (mm-link's logs begin with \"# mahimahi mm-link\" lines)");
  if (log.last - log.first > kMaxSpanMs) {
    char span[64];
    std::snprintf(span, sizeof span, "%.1f hours (%.0f to %.0f ms)", (log.last - log.first) / 3.6e6, log.first,
                  log.last);
    throw UserError(
        path + ": its events span " + span +
        ", more than the 24 hours the graphs can cover; plot a part of it, e.g. awk '/^#/ || $1 < 3600000' " + path +
        " for the first hour");
  }
  return log;
}

std::vector<double> signal_delays(const LinkLog& log) {
  // For each ms t: the least (departure - t) over packets that arrived at or after t. One value
  // per ms of the log's span (at most kMaxSpanMs, bounded by read), computed in place.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const long first = static_cast<long>(std::floor(log.first)), last = static_cast<long>(std::floor(log.last));
  std::vector<double> out(static_cast<size_t>(last - first + 1), std::numeric_limits<double>::infinity());
  for (const auto& d : log.departures) {
    const long arrival = static_cast<long>(std::floor(d.time - d.delay));
    if (arrival < first || arrival > last) continue;
    double& b = out[static_cast<size_t>(arrival - first)];
    b = std::min(b, d.time - static_cast<double>(arrival));
  }
  double next = std::numeric_limits<double>::infinity();
  for (size_t i = out.size(); i-- > 0;) {
    next = std::min(out[i], next + 1);
    out[i] = std::isinf(next) ? nan : next;
  }
  return out;
}

LinkSummary summarize(const LinkLog& log) {
  LinkSummary s{};
  const double span_ms = std::max(log.last - log.first, 1.0);
  s.duration_s = span_ms / 1000;
  double capacity = 0, delivered = 0;
  for (const auto& o : log.opportunities) capacity += o.bytes;
  for (const auto& d : log.departures) delivered += d.bytes;
  s.capacity_mbps = capacity * 8 / (span_ms / 1000) / 1e6;
  s.throughput_mbps = delivered * 8 / (span_ms / 1000) / 1e6;
  s.utilization_percent = capacity > 0 ? 100 * delivered / capacity : 0;
  std::vector<double> delays;
  delays.reserve(log.departures.size());
  for (const auto& d : log.departures) delays.push_back(d.delay);
  const double none = std::numeric_limits<double>::quiet_NaN();
  s.queueing_delay_p95_ms = percentile(delays, 95).value_or(none);
  s.signal_delay_p95_ms = percentile(signal_delays(log), 95).value_or(none);
  for (const auto& d : log.drops) s.dropped_packets += static_cast<uint64_t>(d.packets);
  for (const auto& m : log.marks) s.marked_packets += static_cast<uint64_t>(m.packets);
  return s;
}

std::string delay_text(double ms, const LinkLog& log) {
  if (std::isnan(ms)) {
    return log.departures.empty() ? "- (no packets delivered)" : "- (no packet sent within the log was delivered)";
  }
  char text[64];
  std::snprintf(text, sizeof text, "%.0f ms", ms);
  return text;
}

std::string empty_logs_note(const std::vector<LabeledLog>& logs) {
  bool delivered = false, events = false;
  for (const auto& l : logs) {
    delivered = delivered || !l.log.departures.empty();
    events = events || !l.log.empty();
  }
  if (!events) return logs.size() > 1 ? "no events in these logs" : "no events in this log";
  return delivered ? "" : "no packets delivered";
}

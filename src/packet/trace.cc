// Traces: loading and parsing with their bounds, rates, and the opportunity cursor (see trace.hh).
#include "packet/trace.hh"

#include <charconv>
#include <cmath>

#include "util/exception.hh"
#include "util/file_descriptor.hh"

Trace Trace::load(const std::string& path) {
  return parse(read_user_file(path, "trace", kMaxFileBytes,
                              "a trace holds at most 10000000 lines (opportunities); use a shorter one"),
               user_file_name(path));
}

Trace Trace::parse(std::string_view text, const std::string& name) {
  Trace trace;
  trace.name_ = name;
  uint64_t line_number = 0;
  uint64_t previous = 0;
  size_t position = 0;
  while (position < text.size()) {
    line_number++;
    size_t end = text.find('\n', position);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(position, end - position);
    position = end + 1;
    const std::string where = name + ":" + std::to_string(line_number) + ": ";
    if (line.empty()) throw UserError(where + "empty line (each line must hold one timestamp in ms)");
    if (line.back() == '\r') throw UserError(where + "DOS line ending (carriage return); convert it with dos2unix");
    if (line.size() > kMaxLineLength) {
      throw UserError(where + "line of " + std::to_string(line.size()) + " characters (\"" +
                      std::string(line.substr(0, 20)) + "...\"); each line holds one time in ms, at most " +
                      std::to_string(kMaxMs) + " (is this a trace file?)");
    }
    if (line_number > kMaxOpportunities) {
      throw UserError(
          where + "more than " + std::to_string(kMaxOpportunities) +
          " lines; a trace holds at most that many opportunities: use a shorter trace (its period repeats)");
    }
    uint64_t ms = 0;
    auto [ptr, ec] = std::from_chars(line.data(), line.data() + line.size(), ms);
    if (ec == std::errc::result_out_of_range ||
        (ec == std::errc() && ptr == line.data() + line.size() && ms > kMaxMs)) {
      throw UserError(where + "timestamp " + std::string(line) + " is too large: times are at most " +
                      std::to_string(kMaxMs) + " ms (24.8 days)");
    }
    if (ec != std::errc() || ptr != line.data() + line.size() || line[0] == '+') {
      throw UserError(where + "\"" + std::string(line.substr(0, 40)) +
                      "\" is not a non-negative integer number of milliseconds");
    }
    if (ms < previous) {
      throw UserError(where + "timestamps must not decrease (" + std::to_string(ms) + " after " +
                      std::to_string(previous) + ")");
    }
    previous = ms;
    trace.offsets_.push_back(static_cast<Nanos>(ms) * kNanosPerMs);
  }
  if (trace.offsets_.empty()) throw UserError(name + ": empty trace (it needs at least one timestamp)");
  if (previous == 0) {
    throw UserError(name + ":" + std::to_string(line_number) +
                    ": the last timestamp must be greater than 0 (it is the period after which the trace repeats)");
  }
  // n opportunities in the same millisecond T are spread over it, at T + k/n ms, as a link
  // sends them one after the other; a single one stays at T.
  for (size_t first = 0; first < trace.offsets_.size();) {
    size_t end = first + 1;
    while (end < trace.offsets_.size() && trace.offsets_[end] == trace.offsets_[first]) end++;
    const Nanos n = static_cast<Nanos>(end - first);
    for (size_t k = first + 1; k < end; k++) trace.offsets_[k] += static_cast<Nanos>(k - first) * kNanosPerMs / n;
    first = end;
  }
  trace.period_ = static_cast<Nanos>(previous) * kNanosPerMs;
  return trace;
}

Trace Trace::constant_rate(double bits_per_second, const std::string& name) {
  Trace trace;
  trace.name_ = name;
  trace.period_ = static_cast<Nanos>(std::llround(kOpportunityBytes * 8 * 1e9 / bits_per_second));
  if (trace.period_ <= 0) trace.period_ = 1;
  trace.offsets_.push_back(trace.period_);
  return trace;
}

double Trace::parse_rate(std::string_view text) {
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  const std::string_view unit = text.substr(static_cast<size_t>(ptr - text.data()));
  struct Unit {
    std::string_view name;
    double factor;
  };
  static constexpr Unit kUnits[] = {{"bit/s", 1},    {"bps", 1},    {"kbit/s", 1e3}, {"kbps", 1e3},
                                    {"Mbit/s", 1e6}, {"Mbps", 1e6}, {"Gbit/s", 1e9}, {"Gbps", 1e9}};
  double scale = 0;
  for (const Unit& u : kUnits) {
    if (unit == u.name) scale = u.factor;
  }
  if (ec != std::errc() || scale == 0 || !std::isfinite(value) || value <= 0) {
    throw UsageError(
        "\"" + std::string(text) +
        "\" is not a rate; write e.g. 12Mbit/s, 500kbit/s or 1Gbit/s (units bit/s, kbit/s, Mbit/s, Gbit/s)");
  }
  const double bps = value * scale;
  if (bps < 1 || bps > 1e12) throw UsageError("rate " + std::string(text) + " is out of range (1 bit/s to 1 Tbit/s)");
  return bps;
}

Trace Trace::from_argument(const std::string& argument) {
  if (is_rate(argument)) return constant_rate(parse_rate(std::string_view(argument).substr(5)), argument);
  return load(argument);
}

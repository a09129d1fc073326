// SPDX-License-Identifier: GPL-3.0-or-later
// Traces: loading and parsing with their bounds, rates, and the opportunity cursor (see trace.hh).
#include "packet/trace.hh"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/text.hh"

#ifndef MAHIMAHI_TRACE_DIR
#error "MAHIMAHI_TRACE_DIR (where the bundled traces are installed) comes from src/Makefile.am"
#endif

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
  // sends them one after the other; a single one stays at T. The last millisecond (the period)
  // and the first (0) of the next period are one millisecond of the repeating trace: its m + z
  // opportunities are spread over it together, the period's m first, so that the opportunities
  // stay in time order from one period to the next (the z of millisecond 0 begin m/(m+z) ms in).
  const Nanos period = static_cast<Nanos>(previous) * kNanosPerMs;
  const auto& offsets = trace.offsets_;
  const size_t at_zero =
      static_cast<size_t>(std::upper_bound(offsets.begin(), offsets.end(), Nanos{0}) - offsets.begin());
  const size_t at_period =
      static_cast<size_t>(offsets.end() - std::lower_bound(offsets.begin(), offsets.end(), period));
  for (size_t first = 0; first < trace.offsets_.size();) {
    size_t end = first + 1;
    while (end < trace.offsets_.size() && trace.offsets_[end] == trace.offsets_[first]) end++;
    // This group's share of its millisecond: `skip` opportunities of the other group go first.
    Nanos n = static_cast<Nanos>(end - first), skip = 0;
    if (trace.offsets_[first] == 0) n += static_cast<Nanos>(at_period), skip = static_cast<Nanos>(at_period);
    if (trace.offsets_[first] == period) n += static_cast<Nanos>(at_zero);
    for (size_t k = first; k < end; k++) trace.offsets_[k] += (skip + static_cast<Nanos>(k - first)) * kNanosPerMs / n;
    first = end;
  }
  trace.period_ = period;
  trace.whole_milliseconds_ = true;
  return trace;
}

Trace Trace::constant_rate(double bits_per_second, const std::string& name) {
  Trace trace;
  trace.name_ = name;
  trace.constant_bits_per_second_ = bits_per_second;
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
  return load(find_trace_file(argument, TraceSearch::from_environment()));
}

std::string Trace::format_rate(double bits_per_second) {
  struct Unit {
    double factor;
    const char* name;
  };
  static constexpr Unit kUnits[] = {{1e9, "Gbit/s"}, {1e6, "Mbit/s"}, {1e3, "kbit/s"}, {1, "bit/s"}};
  for (const Unit& unit : kUnits) {
    if (bits_per_second >= unit.factor || unit.factor == 1) {
      char number[32];
      std::snprintf(number, sizeof number, "%.10g", bits_per_second / unit.factor);
      return number + std::string(unit.name);
    }
  }
  return {};  // not reached: the last unit takes any rate
}

std::optional<double> Trace::guess_rate(std::string_view text) {
  text = trim_blanks(text);
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr == text.data() || !std::isfinite(value) || value <= 0) return std::nullopt;
  std::string_view unit = trim_blanks(text.substr(static_cast<size_t>(ptr - text.data())));
  double scale = 1;
  if (!unit.empty()) {
    const char prefix = static_cast<char>(unit.front() | 0x20);  // ASCII lowercase
    if (prefix == 'k' || prefix == 'm' || prefix == 'g' || prefix == 't') {
      scale = prefix == 'k' ? 1e3 : prefix == 'm' ? 1e6 : prefix == 'g' ? 1e9 : 1e12;
      unit.remove_prefix(1);
    }
  }
  if (unit.empty()) return std::nullopt;  // "12", "12M": no sign that it is a rate of bits
  const bool bytes = unit.front() == 'B' && !starts_with_ignoring_case(unit, "bit") &&
                     !equals_ignoring_case(unit, "bps");  // "MB/s", "MBps": bytes
  static constexpr std::string_view kBitUnits[] = {"b", "bit", "bits", "bps", "b/s", "bit/s", "bits/s", "bitps", "ps"};
  const std::string lower = ascii_lowercase(unit);
  if (std::find(std::begin(kBitUnits), std::end(kBitUnits), lower) == std::end(kBitUnits)) return std::nullopt;
  const double bps = value * scale * (bytes ? 8 : 1);
  if (bps < 1 || bps > 1e12) return std::nullopt;
  return bps;
}

std::string Trace::label(std::string_view argument) {
  constexpr size_t kMaxLabel = 24;
  if (is_rate(argument)) {
    try {
      return format_rate(parse_rate(argument.substr(5)));
    } catch (const UsageError&) {
      return std::string(argument.substr(5, kMaxLabel));
    }
  }
  if (argument == "-") return "stdin";
  std::string_view base = argument;
  while (base.size() > 1 && base.back() == '/') base.remove_suffix(1);
  if (const size_t slash = base.rfind('/'); slash != std::string_view::npos && slash + 1 < base.size())
    base.remove_prefix(slash + 1);
  if (base.size() > kMaxLabel) return std::string(base.substr(0, kMaxLabel - 3)) + "...";
  return std::string(base);
}

namespace {

// Names with their runs of digits compared as numbers: constant-3Mbps before constant-12Mbps.
bool numbers_in_order(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j])) {
      size_t end_a = i, end_b = j;
      while (end_a < a.size() && is_digit(a[end_a])) end_a++;
      while (end_b < b.size() && is_digit(b[end_b])) end_b++;
      std::string_view run_a(a.data() + i, end_a - i), run_b(b.data() + j, end_b - j);
      while (run_a.size() > 1 && run_a.front() == '0') run_a.remove_prefix(1);
      while (run_b.size() > 1 && run_b.front() == '0') run_b.remove_prefix(1);
      if (run_a.size() != run_b.size()) return run_a.size() < run_b.size();
      if (run_a != run_b) return run_a < run_b;
      i = end_a;
      j = end_b;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      i++;
      j++;
    }
  }
  return a.size() - i < b.size() - j;
}

}  // namespace

TraceSearch TraceSearch::from_environment() {
  TraceSearch search;
  search.installed_directory = MAHIMAHI_TRACE_DIR;
  if (const char* path = std::getenv(kPathVariable)) {
    search.path_set = true;
    std::string_view rest = path;
    while (true) {
      const size_t colon = rest.find(':');
      const std::string_view directory = rest.substr(0, colon);
      if (!directory.empty()) search.path_directories.emplace_back(directory);
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  return search;
}

std::vector<std::string> TraceSearch::bundled_names() const {
  std::vector<std::string> names;
  DIR* directory = installed_directory.empty() ? nullptr : ::opendir(installed_directory.c_str());
  if (!directory) return names;
  while (const dirent* entry = ::readdir(directory)) {
    const std::string name = entry->d_name;
    if (name.empty() || name[0] == '.' || name == "README") continue;
    names.push_back(name);
  }
  ::closedir(directory);
  std::sort(names.begin(), names.end(), numbers_in_order);
  return names;
}

namespace {

// Where find_trace_file looked, for its message: "the current directory, MAHIMAHI_TRACE_PATH
// (not set) and /usr/share/mahimahi/traces".
std::string places_searched(const TraceSearch& search) {
  std::string places = "the current directory, ";
  places += TraceSearch::kPathVariable;
  if (!search.path_set) {
    places += " (not set)";
  } else if (search.path_directories.empty()) {
    places += " (empty)";
  } else {
    places += " (";
    for (size_t i = 0; i < search.path_directories.size(); i++) places += (i ? ", " : "") + search.path_directories[i];
    places += ")";
  }
  return places + " and " + search.installed_directory + " (the bundled traces)";
}

// What the user may have meant by a name that is no file: a rate, a bundled trace.
std::string trace_suggestions(const std::string& argument, const std::vector<std::string>& bundled) {
  std::vector<std::string> meant;
  if (const auto bps = Trace::guess_rate(argument)) meant.push_back("rate:" + Trace::format_rate(*bps));
  for (const std::string& name : bundled) {
    const bool same = equals_ignoring_case(name, argument);
    const bool suffix = name.size() > argument.size() + 1 && name[name.size() - argument.size() - 1] == '-' &&
                        equals_ignoring_case(std::string_view(name).substr(name.size() - argument.size()), argument);
    if (same || suffix) meant.push_back(name);
  }
  if (meant.empty()) return "for a constant rate write rate:RATE, e.g. rate:12Mbit/s";
  std::string text = "did you mean ";
  for (size_t i = 0; i < meant.size(); i++) text += (i == 0 ? "" : i + 1 == meant.size() ? " or " : ", ") + meant[i];
  return text + "?";
}

}  // namespace

std::string find_trace_file(const std::string& argument, const TraceSearch& search) {
  if (argument == "-" || argument.find('/') != std::string::npos) return argument;
  struct stat status;
  // In the current directory: also when it cannot be looked at (the read then says why).
  if (::stat(argument.c_str(), &status) == 0 || (errno != ENOENT && errno != ENOTDIR)) return argument;
  std::vector<std::string> directories = search.path_directories;
  if (!search.installed_directory.empty()) directories.push_back(search.installed_directory);
  for (const std::string& directory : directories) {
    const std::string candidate = directory + "/" + argument;
    if (::stat(candidate.c_str(), &status) == 0) return candidate;
  }
  const std::vector<std::string> bundled = search.bundled_names();
  std::string message = "cannot find trace \"" + printable(argument, 64) + "\": no such file in " +
                        places_searched(search) + "; " + trace_suggestions(argument, bundled);
  if (bundled.empty()) {
    message += "\n  (no bundled traces are installed in " + search.installed_directory + ")";
  } else {
    message += "\n  bundled traces:";
    for (const std::string& name : bundled) message += " " + name;
  }
  throw UserError(message);
}

std::string short_once_warning(const Trace& uplink, const Trace& downlink) {
  constexpr Nanos kShort = 1'000'000'000;  // a second: shorter than most commands take
  auto length = [](Nanos period) {
    char text[40];
    std::snprintf(text, sizeof text, "%.10g ms", nanos_to_ms(period));
    return std::string(text);
  };
  const Nanos end = std::max(uplink.period(), downlink.period());
  std::string lengths, consequences;
  for (const auto& [direction, trace] : {std::pair{"uplink", &uplink}, std::pair{"downlink", &downlink}}) {
    if (trace->period() >= kShort) continue;
    lengths += std::string(lengths.empty() ? "" : ", ") + "the " + direction + " trace " + trace->name() + " lasts " +
               length(trace->period());
    if (trace->period() < end) {
      consequences += std::string("; the ") + direction + " carries nothing after " + length(trace->period());
    }
  }
  if (lengths.empty()) return {};
  return "--once with a short trace: " + lengths + ". With --once the shell, and your command with it, ends after " +
         length(end) + ", when both traces have played once" + consequences +
         ". Leave out --once to repeat the traces for as long as the command runs.";
}

uint64_t Trace::opportunities_until(Nanos elapsed, bool once) const {
  if (elapsed < 0 || offsets_.empty()) return 0;
  const uint64_t cycles = static_cast<uint64_t>(elapsed / period_);
  if (once && cycles > 0) {
    // Offsets reach up to period_ (and a little past, when the last millisecond is spread).
    return static_cast<uint64_t>(std::upper_bound(offsets_.begin(), offsets_.end(), elapsed) - offsets_.begin());
  }
  const Nanos within = elapsed - static_cast<Nanos>(cycles) * period_;
  // Earlier cycles count whole (the few opportunities of a spread last millisecond that fall
  // past period_ count up to 1 ms early).
  return cycles * offsets_.size() +
         static_cast<uint64_t>(std::upper_bound(offsets_.begin(), offsets_.end(), within) - offsets_.begin());
}

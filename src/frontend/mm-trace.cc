// mm-trace: make, convert, describe and check link traces (no privileges needed).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>

#include "packet/trace.hh"
#include "util/args.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"

namespace {
const char* kUsage =
    "Usage: mm-trace constant RATE [-o FILE]\n"
    "       mm-trace convert [--format=kbps-per-ms|ms-kbps|csv] INPUT [-o FILE]\n"
    "       mm-trace info TRACE...\n"
    "       mm-trace check TRACE...\n";
const char* kHelp =
    "Makes and inspects mm-link traces: one integer per line, a time in ms; each line is one\n"
    "opportunity to deliver 1500 bytes, and the trace repeats with the last time as period.\n"
    "\n"
    "  constant RATE   a trace of RATE (e.g. 12Mbit/s, 500kbit/s, 1Gbit/s): the shortest period\n"
    "                  of whole milliseconds that holds the rate exactly (within 1000 ms;\n"
    "                  otherwise the nearest rate a 1000 ms period holds, with a note)\n"
    "  convert INPUT   a trace from a rate series (INPUT - reads standard input):\n"
    "                  kbps-per-ms  one number per line, the rate in kbit/s during each\n"
    "                               successive millisecond (default)\n"
    "                  ms-kbps      lines \"MS KBIT/S\": from time MS the rate is KBIT/S\n"
    "                  csv          lines \"SECONDS,MBIT/S\" (a header line is skipped)\n"
    "                  In the last two, each rate holds until the next line's time, the last\n"
    "                  one for as long as the interval before it. Fractions of an opportunity\n"
    "                  carry over from one millisecond to the next.\n"
    "  info TRACE      duration, opportunities, mean/min/max rate over 100 ms windows,\n"
    "                  the busiest millisecond and the longest gap (outage)\n"
    "  check TRACE     validate; errors name the file and line\n"
    "\n"
    "  Limits: a trace has at most 10000000 lines (128 MiB) and times up to 2147483647 ms;\n"
    "  a rate series at most 10000000 lines (128 MiB) and rates up to 1 Tbit/s.\n"
    "\n"
    "  -o FILE         write the trace to FILE instead of standard output\n"
    "  --help, --version\n";

[[noreturn]] void usage_error(const std::string& message) { throw UsageError(message); }

void write_output(const std::optional<std::string>& path, const std::string& text) {
  if (!path) {
    write_all(1, text);
    return;
  }
  FileDescriptor fd(::open(path->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666));
  if (!fd.valid()) throw UserError("cannot write " + *path + ": " + std::strerror(errno));
  write_all(fd.get(), text);
}

// Opportunities at whole milliseconds from a rate per millisecond (bit/s), keeping the
// fractions of an opportunity from one millisecond to the next. The trace it makes stays within
// Trace's bounds (times up to Trace::kMaxMs, at most Trace::kMaxOpportunities lines).
class TraceBuilder {
 public:
  explicit TraceBuilder(std::string source) : source_(std::move(source)) {}
  void add_millisecond(double bits_per_second) { add_milliseconds(1, bits_per_second); }
  // `count` milliseconds at one rate.
  void add_milliseconds(uint64_t count, double bits_per_second) {
    if (count > Trace::kMaxMs - ms_) {
      throw UserError(source_ + ": the trace would last more than " + std::to_string(Trace::kMaxMs) +
                      " ms (24.8 days), the longest a trace can be; convert a shorter stretch");
    }
    if (bits_per_second == 0) {  // nothing to deliver: skip ahead at once
      ms_ += count;
      return;
    }
    const double per_ms = bits_per_second / 1000.0;
    for (uint64_t i = 0; i < count;) {
      // A slow rate: the milliseconds that cannot complete an opportunity pass in one step (a
      // day of 1 bit/s is not 86 million iterations).
      const double room = kBits - 1e-9 - reserve_ - per_ms;
      if (room > 2 * per_ms) {
        const uint64_t jump =
            static_cast<uint64_t>(std::min(static_cast<double>(count - i), std::floor(room / per_ms) - 1));
        ms_ += jump;
        reserve_ += static_cast<double>(jump) * per_ms;
        i += jump;
        continue;
      }
      i++;
      ms_++;
      reserve_ += per_ms;
      while (reserve_ >= kBits - 1e-9) {
        if (count_ == Trace::kMaxOpportunities) {
          throw UserError(source_ + ": the trace would hold more than " + std::to_string(Trace::kMaxOpportunities) +
                          " opportunities (lines), the most a trace can; convert a shorter stretch or lower rates");
        }
        out_ += std::to_string(ms_) + "\n";
        reserve_ -= kBits;
        count_++;
      }
    }
  }
  std::string finish() {
    if (count_ == 0) throw UserError(source_ + ": the rates are too low to give a single 1500-byte opportunity");
    return out_;
  }

 private:
  static constexpr double kBits = Trace::kOpportunityBytes * 8;
  std::string source_;
  uint64_t ms_ = 0;
  double reserve_ = 0;
  uint64_t count_ = 0;
  std::string out_;
};

// A trace file of `count` lines is refused beyond Trace::kMaxOpportunities (mm-link's rate:
// takes any rate up to 1 Tbit/s without a file).
void check_constant_count(uint64_t count, double bps) {
  if (count <= Trace::kMaxOpportunities) return;
  char rate[32];
  std::snprintf(rate, sizeof rate, "%.12g", bps / 1e9);
  throw UserError("a trace of " + std::string(rate) + " Gbit/s would hold " + std::to_string(count) +
                  " opportunities per period, more than the " + std::to_string(Trace::kMaxOpportunities) +
                  " a trace can; give mm-link rate:" + rate + "Gbit/s instead of a trace file");
}

std::string constant_trace(double bps) {
  // N opportunities in P ms: N = bps * P / 12e6. Find the smallest whole P giving a whole N.
  for (uint64_t period = 1; period <= 1000; period++) {
    const double n = bps * static_cast<double>(period) / 12e6;
    if (std::abs(n - std::round(n)) < 1e-9 && std::round(n) >= 1) {
      const uint64_t count = static_cast<uint64_t>(std::round(n));
      check_constant_count(count, bps);
      std::string out;
      for (uint64_t k = 1; k <= count; k++) out += std::to_string((k * period + count - 1) / count) + "\n";
      return out;
    }
  }
  if (bps < 12e6 / 1000) {  // under one opportunity per second: one every P ms
    const uint64_t period = static_cast<uint64_t>(std::llround(12e6 / bps));
    std::cerr << "mm-trace: note: the trace has one opportunity every " << period << " ms, "
              << 12e6 / static_cast<double>(period) << " bit/s\n";
    return std::to_string(period) + "\n";
  }
  const uint64_t count = static_cast<uint64_t>(std::llround(bps * 1000 / 12e6));
  check_constant_count(count, bps);
  std::cerr << "mm-trace: note: no period of up to 1000 ms holds this rate exactly; the trace gives "
            << static_cast<double>(count) * 12e3 / 1e6 << " Mbit/s (" << count << " opportunities per second)\n";
  std::string out;
  for (uint64_t k = 1; k <= count; k++) out += std::to_string((k * 1000 + count - 1) / count) + "\n";
  return out;
}

std::vector<std::string> fields_of(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  for (char c : line) {
    if (c == ',' || c == ' ' || c == '\t' || c == ';') {
      if (!field.empty()) fields.push_back(field);
      field.clear();
    } else if (c != '\r') {
      field += c;
    }
  }
  if (!field.empty()) fields.push_back(field);
  return fields;
}

double number(const std::string& text, const std::string& where) {
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(value) || value < 0)
    throw UserError(where + "\"" + text + "\" is not a non-negative number");
  return value;
}

// Bounds on a rate series: its size and lines (the trace made from it has Trace's bounds).
constexpr uint64_t kMaxRatesFileBytes = 128ULL << 20;
constexpr size_t kMaxRatesLineLength = 256;
constexpr uint64_t kMaxRatesLines = 10'000'000;
constexpr double kMaxRateBitsPerSecond = 1e12;  // 1 Tbit/s, as mm-link's rate:

// Adds the milliseconds of a series of (time in ms, bit/s) steps to `builder`: from the first
// step's time on, each at the rate of the last step at or before it; the last step lasts as long
// as the one before it (1 s if it is the only one).
void add_steps(TraceBuilder& builder, const std::vector<std::pair<double, double>>& steps, const std::string& source) {
  if (steps.empty()) throw UserError(source + ": no rates");
  const double last_interval = steps.size() > 1 ? steps.back().first - steps[steps.size() - 2].first : 1000;
  const double end = steps.back().first + last_interval;
  // Milliseconds from the first time on, each at the rate of the last step at or before it.
  const double start = steps.front().first;
  const double total = std::ceil(end - start - 1e-9);
  if (total > static_cast<double>(Trace::kMaxMs)) {
    throw UserError(source + ": the trace would last " + std::to_string(static_cast<uint64_t>(total)) +
                    " ms, more than " + std::to_string(Trace::kMaxMs) +
                    " ms (24.8 days), the longest a trace can be; convert a shorter stretch");
  }
  uint64_t done = 0;
  const uint64_t count = static_cast<uint64_t>(total);
  for (size_t step = 0; step < steps.size() && done < count; step++) {
    // The milliseconds start + done, ... that fall before the next step's time.
    uint64_t until = count;
    if (step + 1 < steps.size()) {
      const double next = steps[step + 1].first;
      until = std::min<uint64_t>(count, static_cast<uint64_t>(std::max(0.0, std::ceil(next - start - 1e-9))));
    }
    if (until > done) {
      builder.add_milliseconds(until - done, steps[step].second);
      done = until;
    }
  }
}

std::string convert(const std::string& format, const std::string& path) {
  const std::string source = user_file_name(path);
  if (format != "kbps-per-ms" && format != "ms-kbps" && format != "csv")
    usage_error("unknown --format \"" + format + "\" (kbps-per-ms, ms-kbps or csv)");
  const std::string text =
      read_user_file(path, "rate series", kMaxRatesFileBytes, "convert a shorter stretch (at most 10000000 lines)");
  std::istringstream lines(text);
  std::string line;
  TraceBuilder builder(source);
  uint64_t number_of_line = 0;
  auto next_line = [&]() -> bool {
    if (!std::getline(lines, line)) return false;
    number_of_line++;
    const std::string where = source + ":" + std::to_string(number_of_line) + ": ";
    if (number_of_line > kMaxRatesLines)
      throw UserError(where + "more than " + std::to_string(kMaxRatesLines) + " lines; convert a shorter stretch");
    if (line.size() > kMaxRatesLineLength)
      throw UserError(where + "line of " + std::to_string(line.size()) + " characters, longer than " +
                      std::to_string(kMaxRatesLineLength) + " (is this a rate series?)");
    return true;
  };
  auto rate = [&](double value, double factor, const char* unit, const std::string& where) {
    const double bps = value * factor;
    if (bps > kMaxRateBitsPerSecond) {
      std::ostringstream m;
      m << where << "rate " << value << " " << unit << " is above 1 Tbit/s, the highest rate a trace can have";
      throw UserError(m.str());
    }
    return bps;
  };
  if (format == "kbps-per-ms") {
    while (next_line()) {
      auto f = fields_of(line);
      if (f.empty()) continue;
      const std::string where = source + ":" + std::to_string(number_of_line) + ": ";
      if (f.size() != 1) throw UserError(where + "expected one number (kbit/s)");
      builder.add_millisecond(rate(number(f[0], where), 1e3, "kbit/s", where));
    }
    return builder.finish();
  }
  // (time in ms, bit/s) steps
  std::vector<std::pair<double, double>> steps;
  while (next_line()) {
    auto f = fields_of(line);
    if (f.empty()) continue;
    const std::string where = source + ":" + std::to_string(number_of_line) + ": ";
    if (f.size() != 2)
      throw UserError(where + "expected two fields: " + (format == "csv" ? "SECONDS,MBIT/S" : "MS KBIT/S"));
    if (format == "csv" && steps.empty() && !std::isdigit(static_cast<unsigned char>(f[0][0]))) continue;  // header
    const double t = number(f[0], where) * (format == "csv" ? 1000 : 1);
    if (t > static_cast<double>(Trace::kMaxMs)) {
      throw UserError(where + "time " + f[0] + (format == "csv" ? " s" : " ms") + " is past " +
                      std::to_string(Trace::kMaxMs) + " ms (24.8 days), the longest a trace can be");
    }
    const double bps = format == "csv" ? rate(number(f[1], where), 1e6, "Mbit/s", where)
                                       : rate(number(f[1], where), 1e3, "kbit/s", where);
    if (!steps.empty() && t <= steps.back().first) throw UserError(where + "times must increase");
    steps.emplace_back(t, bps);
  }
  add_steps(builder, steps, source);
  return builder.finish();
}

// A trace named on the command line: a file, rate:RATE, or - for standard input.
Trace load_trace(const std::string& argument) { return Trace::from_argument(argument); }

void info(const std::string& argument) {
  const Trace trace = load_trace(argument);
  const auto& offsets = trace.offsets();
  const Nanos window = 100 * kNanosPerMs;
  // Up to Trace::kMaxMs / 100 (21 million) windows, counted as the sorted offsets are walked:
  // no per-window array.
  const uint64_t windows = static_cast<uint64_t>((trace.period() + window - 1) / window);
  auto window_of = [&](Nanos offset) {
    return std::min<uint64_t>(static_cast<uint64_t>(std::max<Nanos>(offset - 1, 0) / window), windows - 1);
  };
  uint64_t busiest = 0, run = 0;
  Nanos longest_gap = offsets.front(), previous = offsets.front();
  for (size_t i = 0; i < offsets.size(); i++) {
    // Opportunities of one trace millisecond are spread over it: count them by millisecond.
    run = (i > 0 && offsets[i] / kNanosPerMs == offsets[i - 1] / kNanosPerMs) ? run + 1 : 1;
    busiest = std::max(busiest, run);
    longest_gap = std::max(longest_gap, offsets[i] - previous);
    previous = offsets[i];
  }
  auto mbps = [&](uint64_t count, Nanos span) {
    return static_cast<double>(count) * 12000.0 / (static_cast<double>(span) / 1e9) / 1e6;
  };
  double low = 1e300, high = 0, sum = 0, sum2 = 0;
  size_t next = 0;
  for (uint64_t w = 0; w < windows; w++) {
    uint64_t count = 0;
    while (next < offsets.size() && window_of(offsets[next]) == w) {
      count++;
      next++;
    }
    const Nanos span = std::min(window, trace.period() - static_cast<Nanos>(w) * window);
    const double r = mbps(count, span);
    low = std::min(low, r);
    high = std::max(high, r);
    sum += r;
    sum2 += r * r;
  }
  const double mean_window = sum / static_cast<double>(windows);
  const double sd = std::sqrt(std::max(0.0, sum2 / static_cast<double>(windows) - mean_window * mean_window));
  std::printf("%s\n", trace.name().c_str());
  std::printf("  duration (period)      %.3f s\n", static_cast<double>(trace.period()) / 1e9);
  std::printf("  opportunities          %zu (1500 bytes each)\n", offsets.size());
  std::printf("  mean rate              %.3f Mbit/s\n", trace.mean_bits_per_second() / 1e6);
  std::printf("  100 ms windows         min %.3f, max %.3f Mbit/s, coefficient of variation %.2f\n", low, high,
              mean_window > 0 ? sd / mean_window : 0);
  std::printf("  busiest millisecond    %lu opportunities (%.1f Mbit/s)\n", static_cast<unsigned long>(busiest),
              static_cast<double>(busiest) * 12.0);
  std::printf("  longest gap            %.3f ms\n", nanos_to_ms(longest_gap));
}

int run(int argc, char** argv) {
  std::optional<ToolArgs> args = scan_tool_args(argc, argv, "mm-trace", kUsage, kHelp, {"format"});
  if (!args) return 0;
  std::vector<std::string>& words = args->operands;
  const std::optional<std::string>& output = args->output;
  const std::string format = args->values.contains("format") ? args->values["format"] : "kbps-per-ms";
  if (words.empty()) usage_error("missing command (constant, convert, info or check)");
  const std::string command = words[0];
  words.erase(words.begin());
  if (command == "constant") {
    if (words.size() != 1) usage_error("constant takes one RATE, e.g. mm-trace constant 12Mbit/s");
    write_output(output, constant_trace(Trace::parse_rate(Trace::is_rate(words[0]) ? words[0].substr(5) : words[0])));
    return 0;
  }
  if (command == "convert") {
    if (words.size() != 1) usage_error("convert takes one INPUT file (or - for standard input)");
    write_output(output, convert(format, words[0]));
    return 0;
  }
  if (command == "info" || command == "check") {
    if (words.empty()) usage_error(command + " needs at least one TRACE");
    int failures = 0;
    for (const auto& w : words) {
      try {
        if (command == "info") {
          info(w);
        } else {
          const Trace t = load_trace(w);
          std::printf("%s: ok (%zu opportunities, period %.3f ms, %.3f Mbit/s)\n", w.c_str(), t.offsets().size(),
                      nanos_to_ms(t.period()), t.mean_bits_per_second() / 1e6);
        }
      } catch (const UserError& e) {
        std::fflush(stdout);
        std::cerr << "mm-trace: " << e.what() << "\n";
        failures++;
      }
    }
    return failures ? 1 : 0;
  }
  usage_error("unknown command \"" + command + "\" (constant, convert, info or check)");
}
}  // namespace

int main(int argc, char** argv) {
  return run_tool("mm-trace", kUsage, [&] { return run(argc, argv); });
}

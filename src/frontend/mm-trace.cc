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

#include "args.hh"
#include "exception.hh"
#include "file_descriptor.hh"
#include "trace.hh"

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
    "  -o FILE         write the trace to FILE instead of standard output\n"
    "  --help, --version\n";

[[noreturn]] void usage_error(const std::string& message) {
  throw UsageError(message);
}

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
// fractions of an opportunity from one millisecond to the next.
class TraceBuilder {
 public:
  void add_millisecond(double bits_per_second) {
    ms_++;
    reserve_ += bits_per_second / 1000.0;
    while (reserve_ >= kBits - 1e-9) {
      out_ += std::to_string(ms_) + "\n";
      reserve_ -= kBits;
      count_++;
    }
  }
  std::string finish(const std::string& source) {
    if (count_ == 0) throw UserError(source + ": the rates are too low to give a single 1500-byte opportunity");
    return out_;
  }

 private:
  static constexpr double kBits = Trace::kOpportunityBytes * 8;
  uint64_t ms_ = 0;
  double reserve_ = 0;
  uint64_t count_ = 0;
  std::string out_;
};

std::string constant_trace(double bps) {
  // N opportunities in P ms: N = bps * P / 12e6. Find the smallest whole P giving a whole N.
  for (uint64_t period = 1; period <= 1000; period++) {
    const double n = bps * static_cast<double>(period) / 12e6;
    if (std::abs(n - std::round(n)) < 1e-9 && std::round(n) >= 1) {
      const uint64_t count = static_cast<uint64_t>(std::round(n));
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

std::string convert(const std::string& format, const std::string& path) {
  const std::string text = read_user_file(path, "rates");
  std::istringstream lines(text);
  std::string line;
  TraceBuilder builder;
  uint64_t number_of_line = 0;
  if (format == "kbps-per-ms") {
    while (std::getline(lines, line)) {
      number_of_line++;
      auto f = fields_of(line);
      if (f.empty()) continue;
      if (f.size() != 1) throw UserError(path + ":" + std::to_string(number_of_line) + ": expected one number (kbit/s)");
      builder.add_millisecond(number(f[0], path + ":" + std::to_string(number_of_line) + ": ") * 1000);
    }
    return builder.finish(path);
  }
  if (format != "ms-kbps" && format != "csv") usage_error("unknown --format \"" + format + "\" (kbps-per-ms, ms-kbps or csv)");
  // (time in ms, bit/s) steps
  std::vector<std::pair<double, double>> steps;
  while (std::getline(lines, line)) {
    number_of_line++;
    auto f = fields_of(line);
    if (f.empty()) continue;
    const std::string where = path + ":" + std::to_string(number_of_line) + ": ";
    if (f.size() != 2) throw UserError(where + "expected two fields: " + (format == "csv" ? "SECONDS,MBIT/S" : "MS KBIT/S"));
    if (format == "csv" && steps.empty() && !std::isdigit(static_cast<unsigned char>(f[0][0]))) continue;  // header
    const double t = number(f[0], where) * (format == "csv" ? 1000 : 1);
    const double bps = number(f[1], where) * (format == "csv" ? 1e6 : 1e3);
    if (!steps.empty() && t <= steps.back().first) throw UserError(where + "times must increase");
    steps.emplace_back(t, bps);
  }
  if (steps.empty()) throw UserError(path + ": no rates");
  const double last_interval = steps.size() > 1 ? steps.back().first - steps[steps.size() - 2].first : 1000;
  const double end = steps.back().first + last_interval;
  size_t step = 0;
  for (double ms = steps.front().first; ms < end - 1e-9; ms += 1) {
    while (step + 1 < steps.size() && steps[step + 1].first <= ms + 1e-9) step++;
    builder.add_millisecond(steps[step].second);
  }
  return builder.finish(path);
}

// A trace named on the command line: a file, rate:RATE, or - for standard input.
Trace load_trace(const std::string& argument) {
  if (argument == "-") return Trace::parse(read_user_file("-", "trace"), "standard input");
  return Trace::from_argument(argument);
}

void info(const std::string& argument) {
  const Trace trace = load_trace(argument);
  const auto& offsets = trace.offsets();
  const Nanos window = 100 * kNanosPerMs;
  const uint64_t windows = static_cast<uint64_t>((trace.period() + window - 1) / window);
  std::vector<uint64_t> per_window(windows, 0);
  uint64_t busiest = 0, run = 0;
  Nanos longest_gap = offsets.front(), previous = offsets.front();
  for (size_t i = 0; i < offsets.size(); i++) {
    per_window[std::min<uint64_t>(static_cast<uint64_t>(std::max<Nanos>(offsets[i] - 1, 0) / window), windows - 1)]++;
    run = (i > 0 && offsets[i] == offsets[i - 1]) ? run + 1 : 1;
    busiest = std::max(busiest, run);
    longest_gap = std::max(longest_gap, offsets[i] - previous);
    previous = offsets[i];
  }
  auto mbps = [&](uint64_t count, Nanos span) { return static_cast<double>(count) * 12000.0 / (static_cast<double>(span) / 1e9) / 1e6; };
  double low = 1e300, high = 0, sum = 0, sum2 = 0;
  for (uint64_t w = 0; w < windows; w++) {
    const Nanos span = std::min(window, trace.period() - static_cast<Nanos>(w) * window);
    const double r = mbps(per_window[w], span);
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
  std::vector<std::string> words;
  std::optional<std::string> output;
  std::string format = "kbps-per-ms";
  for (int i = 1; i < argc; i++) {
    const std::string_view w = argv[i];
    if (w == "--help" || w == "-h") {
      std::cout << kUsage << "\n" << kHelp;
      return 0;
    }
    if (w == "--version") {
      std::cout << "mm-trace (mahimahi) " << PACKAGE_VERSION << "\n";
      return 0;
    }
    if (w == "-o" || w == "--output") {
      if (i + 1 >= argc) usage_error("-o needs a file name");
      output = argv[++i];
    } else if (w.rfind("--output=", 0) == 0) {
      output = std::string(w.substr(9));
    } else if (w.rfind("--format=", 0) == 0) {
      format = w.substr(9);
    } else if (w.size() > 1 && w[0] == '-' && w != "-") {
      usage_error("unknown option \"" + std::string(w) + "\"");
    } else {
      words.emplace_back(w);
    }
  }
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
  try {
    return run(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "mm-trace: " << e.what() << "\n" << kUsage << "Try 'mm-trace --help' for more information.\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "mm-trace: " << e.what() << "\n";
    return 1;
  }
}

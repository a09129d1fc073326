// SPDX-License-Identifier: GPL-3.0-or-later
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

#include "packet/rattan_trace.hh"
#include "packet/trace.hh"
#include "packet/trace_convert.hh"
#include "packet/trace_stats.hh"
#include "util/args.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/text.hh"

namespace {
const char* kUsage =
    "Usage: mm-trace constant RATE [-o FILE]\n"
    "       mm-trace convert [--format=kbps-per-ms|ms-kbps|csv] INPUT [-o FILE]\n"
    "       mm-trace info TRACE...\n"
    "       mm-trace check TRACE...\n"
    "       mm-trace split SERIES -o PREFIX\n"
    "       mm-trace rattan CONFIG.json|CONFIG.toml [-o FILE]\n";
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
    "                  carry over from one millisecond to the next. Silence at the end is\n"
    "                  kept: one opportunity (the first or the last, whichever moves less)\n"
    "                  moves to its end, the trace's period; the mean rate is unchanged.\n"
    "  info TRACE      duration, opportunities, mean/min/max rate over 100 ms windows,\n"
    "                  the busiest millisecond (most lines of one time) and the longest gap\n"
    "                  (outage) between the lines' times, from the trace as written\n"
    "  check TRACE     validate; errors name the file and line\n"
    "  split SERIES -o PREFIX\n"
    "                  one time series of a path, \"SECONDS,MBIT/S[,DELAY-MS[,LOSS]]\" per line\n"
    "                  (a header line is skipped; each value holds until the next line's time),\n"
    "                  as the three shells' files: PREFIX.trace (mm-link), PREFIX.delay (mm-delay\n"
    "                  --delay-trace) and PREFIX.loss (mm-loss trace), times from the first line\n"
    "  rattan CONFIG   a trace file of Rattan (a netem-trace configuration, JSON or TOML by its\n"
    "                  extension) as the file of the shell that plays it: a delay as an\n"
    "                  mm-delay --delay-trace, a loss as an mm-loss trace, a bandwidth as an\n"
    "                  mm-link trace; standard error says which, and the command. Static,\n"
    "                  Repeated*Pattern (count 0: it repeats, as the shells' traces do) and\n"
    "                  TraceBw models; random and per-packet ones are drawn by Rattan as it\n"
    "                  runs and are refused\n"
    "\n"
    "  TRACE is a file, rate:RATE or - (standard input). A name without a '/' is looked for\n"
    "  as mm-link does: in the current directory, the directories of MAHIMAHI_TRACE_PATH\n"
    "  (colon-separated), then the bundled traces in\n"
    "  " MAHIMAHI_TRACE_DIR
    "\n"
    "\n"
    "  Limits: a trace has at most 10000000 lines (128 MiB) and times up to 2147483647 ms;\n"
    "  a rate series at most 10000000 lines (128 MiB) and rates up to 1 Tbit/s.\n"
    "\n"
    "  --format=FORMAT    the INPUT of convert: kbps-per-ms (default), ms-kbps or csv\n"
    "  -o, --output FILE  write the trace to FILE instead of standard output\n"
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
            << static_cast<double>(count) * 12e3 / 1e6 << " Mbit/s (" << count_of(count, "opportunity", "opportunities")
            << " per second)\n";
  std::string out;
  for (uint64_t k = 1; k <= count; k++) out += std::to_string((k * 1000 + count - 1) / count) + "\n";
  return out;
}

std::string convert(const std::string& format, const std::string& path) {
  if (!is_rate_series_format(format)) usage_error("unknown --format \"" + format + "\" (kbps-per-ms, ms-kbps or csv)");
  const std::string text =
      read_user_file(path, "rate series", kMaxRateSeriesBytes, "convert a shorter stretch (at most 10000000 lines)");
  return convert_rate_series(text, format, user_file_name(path));
}

// A trace named on the command line: a file, rate:RATE, or - for standard input.
Trace load_trace(const std::string& argument) { return Trace::from_argument(argument); }

// "2 ms" for whole milliseconds, "0.012 ms" otherwise.
std::string milliseconds_text(Nanos time) {
  char text[40];
  if (time % kNanosPerMs == 0) {
    std::snprintf(text, sizeof text, "%lld ms", static_cast<long long>(time / kNanosPerMs));
  } else {
    std::snprintf(text, sizeof text, "%.3f ms", nanos_to_ms(time));
  }
  return text;
}

void info(const std::string& argument) {
  const Trace trace = load_trace(argument);
  const TraceStatistics figures = trace_statistics(trace);
  std::printf("%s\n", trace.name().c_str());
  std::printf("  duration (period)      %.3f s\n", static_cast<double>(figures.period) / 1e9);
  std::printf("  opportunities          %llu (1500 bytes each)\n",
              static_cast<unsigned long long>(figures.opportunities));
  std::printf("  mean rate              %.3f Mbit/s\n", figures.mean_bits_per_second / 1e6);
  std::printf("  100 ms windows         min %.3f, max %.3f Mbit/s, coefficient of variation %.2f\n",
              figures.window_min_bits_per_second / 1e6, figures.window_max_bits_per_second / 1e6,
              figures.window_variation);
  std::printf("  busiest millisecond    %s (%.1f Mbit/s)\n",
              count_of(figures.busiest_millisecond, "opportunity", "opportunities").c_str(),
              static_cast<double>(figures.busiest_millisecond) * Trace::kOpportunityBytes * 8 / 1e3);
  std::printf("  longest gap            %s\n", milliseconds_text(figures.longest_gap).c_str());
}

int run(int argc, char** argv) {
  std::optional<ToolArgs> args = scan_tool_args(argc, argv, "mm-trace", kUsage, kHelp, {"format"});
  if (!args) return 0;
  std::vector<std::string>& words = args->operands;
  const std::optional<std::string>& output = args->output;
  const std::string format = args->values.contains("format") ? args->values["format"] : "kbps-per-ms";
  if (words.empty()) usage_error("missing command (constant, convert, info, check, split or rattan)");
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
  if (command == "split") {
    if (words.size() != 1) usage_error("split takes one SERIES file (or - for standard input)");
    if (!output) usage_error("split needs -o PREFIX (it writes PREFIX.trace, PREFIX.delay and PREFIX.loss)");
    const std::string text = read_user_file(words[0], "time series", kMaxRateSeriesBytes,
                                            "split a shorter stretch (at most 10000000 lines)");
    const SplitSeries split = split_time_series(text, user_file_name(words[0]));
    write_output(*output + ".trace", split.link_trace);
    std::string run = "mm-link " + *output + ".trace " + *output + ".trace";
    if (!split.delay_trace.empty()) {
      write_output(*output + ".delay", split.delay_trace);
      run = "mm-delay --delay-trace=" + *output + ".delay " + run;
    }
    if (!split.loss_trace.empty()) {
      write_output(*output + ".loss", split.loss_trace);
      run = "mm-loss downlink trace " + *output + ".loss " + run;
    }
    std::cerr << "mm-trace: wrote " << *output << ".trace"
              << (split.delay_trace.empty() ? "" : ", " + *output + ".delay")
              << (split.loss_trace.empty() ? "" : ", " + *output + ".loss")
              << "; for example (the same rate both ways):\n  " << run << " -- COMMAND\n";
    return 0;
  }
  if (command == "rattan") {
    if (words.size() != 1) usage_error("rattan takes one CONFIG file (.json or .toml)");
    const std::string& path = words[0];
    const bool toml = path.ends_with(".toml");
    if (!toml && !path.ends_with(".json"))
      usage_error(path + ": name Rattan's configuration .json or .toml, as Rattan reads it by its extension");
    const std::string text = read_user_file(path, "Rattan trace", kMaxRattanFileBytes, "give a trace configuration");
    const RattanTrace trace = convert_rattan_trace(text, toml, user_file_name(path));
    write_output(output, trace.text);
    const std::string file = output ? *output : "FILE";
    const char* what = trace.kind == RattanTrace::Kind::kDelay  ? "a delay trace"
                       : trace.kind == RattanTrace::Kind::kLoss ? "a loss trace"
                                                                : "a link trace";
    std::string run = trace.kind == RattanTrace::Kind::kDelay  ? "mm-delay --delay-trace=" + file
                      : trace.kind == RattanTrace::Kind::kLoss ? "mm-loss uplink trace " + file
                                                               : "mm-link " + file + " " + file;
    if (!trace.repeats) run += " --once";
    char figures[160];
    std::snprintf(figures, sizeof figures, "%s of %s over %.10g ms", what, count_of(trace.steps, "step").c_str(),
                  trace.period_ms);
    std::cerr << "mm-trace: " << figures
              << (trace.repeats ? ", repeating (as the shells' traces do by default)"
                  : trace.kind == RattanTrace::Kind::kBandwidth
                      ? ", played once (mm-link --once ends the shell at its end)"
                      : ", played once (--once holds its last value after its end)")
              << "; for example:\n  " << run << " -- COMMAND\n";
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
          std::printf("%s: ok (%s)\n", w.c_str(), trace_check_summary(t).c_str());
        }
      } catch (const UserError& e) {
        std::fflush(stdout);
        std::cerr << "mm-trace: " << e.what() << "\n";
        failures++;
      }
    }
    return failures ? 1 : 0;
  }
  usage_error("unknown command \"" + command + "\" (constant, convert, info, check, split or rattan)");
}
}  // namespace

int main(int argc, char** argv) {
  return run_tool("mm-trace", kUsage, [&] { return run(argc, argv); });
}

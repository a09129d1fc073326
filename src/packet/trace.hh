// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A link's delivery opportunities. Each lets 1500 bytes of IP packets through (no TUN header
// is charged, so a trace of one line "1" carries exactly 12 Mbit/s of IP packets). A trace
// repeats with its period, the last timestamp; every line is one opportunity in every period.
// Opportunities sharing a millisecond are spread evenly over it (the 84 of a ~1 Gbit/s trace
// come every 11.9 us, not all at once), which logs, at whole milliseconds, cannot tell apart.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/clock.hh"

class Trace {
 public:
  static constexpr uint32_t kOpportunityBytes = 1500;
  // Bounds on a trace, so that reading one (in the ferry too) and everything computed from it
  // (periods in ns, mm-trace info's windows) stay within memory and range: at most
  // kMaxOpportunities lines (80 MB in memory; 10 million is 2 minutes of a 1 Gbit/s link), each
  // at most kMaxLineLength bytes, times up to kMaxMs (2^31 - 1 ms, 24.8 days), in a file of at
  // most kMaxFileBytes.
  static constexpr uint64_t kMaxOpportunities = 10'000'000;
  static constexpr uint64_t kMaxMs = 2'147'483'647;
  static constexpr size_t kMaxLineLength = 32;
  static constexpr uint64_t kMaxFileBytes = 128ULL << 20;

  // A trace file: one non-negative integer (milliseconds) per line, non-decreasing, the last
  // greater than 0, within the bounds above. Throws UserError "PATH:LINE: what is wrong".
  static Trace load(const std::string& path);
  static Trace parse(std::string_view text, const std::string& name);
  // A constant rate: one opportunity every 12000/bits_per_second seconds, exactly.
  static Trace constant_rate(double bits_per_second, const std::string& name);
  // "rate:12Mbit/s" (units bit/s, kbit/s, Mbit/s, Gbit/s; also kbps, Mbps, Gbps), "-"
  // (standard input) or a trace file, found by find_trace_file. Reads files and the
  // environment: call it only with the user's rights (the ferry after the drop, mm-trace).
  static Trace from_argument(const std::string& argument);
  static bool is_rate(std::string_view argument) { return argument.rfind("rate:", 0) == 0; }
  // Bits per second of "12Mbit/s"; throws UsageError.
  static double parse_rate(std::string_view text);
  // "12Mbit/s", "500kbit/s", "1.5Gbit/s", "300bit/s": a rate as parse_rate reads it back.
  static std::string format_rate(double bits_per_second);
  // Bits per second of something a person may write for a rate, "12Mbps", "12mbit", "12 Mb/s",
  // "500k": for suggesting rate:RATE when such a word names no file. Nothing if it is no rate.
  static std::optional<double> guess_rate(std::string_view text);
  // A short label of a trace argument for the shell's prompt, read from the argument alone
  // (no file is opened): the rate of rate:RATE ("12Mbit/s"), or the file's base name, shortened.
  static std::string label(std::string_view argument);

  // Whether the offsets come from whole milliseconds written in a file (not rate:): then
  // written_ms(i) is the time the i-th line holds (the spreading of a millisecond's
  // opportunities moves them less than 1 ms).
  bool whole_milliseconds() const { return whole_milliseconds_; }
  uint64_t written_ms(size_t i) const { return static_cast<uint64_t>(offsets_[i] / kNanosPerMs); }

  // How many opportunities a link playing this trace from time 0 has offered by `elapsed`
  // (those at elapsed included): in O(log n), for a live meter's capacity.
  uint64_t opportunities_until(Nanos elapsed, bool once) const;

  const std::vector<Nanos>& offsets() const { return offsets_; }
  Nanos period() const { return period_; }
  const std::string& name() const { return name_; }
  // The rate of a constant-rate trace (rate:RATE), in bits per second; 0 for a trace file.
  double constant_bits_per_second() const { return constant_bits_per_second_; }
  double mean_bits_per_second() const {
    return static_cast<double>(offsets_.size()) * kOpportunityBytes * 8 / (static_cast<double>(period_) / 1e9);
  }

 private:
  std::vector<Nanos> offsets_;  // from the start of a period, non-decreasing, within (.., period_ + 1 ms)
  Nanos period_ = 0;
  std::string name_;
  bool whole_milliseconds_ = false;
  double constant_bits_per_second_ = 0;
};

// Where trace names without a '/' are looked for, in this order: the current directory, the
// directories of MAHIMAHI_TRACE_PATH (colon-separated), the installed traces. The variable only
// chooses which file the user's own process reads (it is read after the privilege drop).
struct TraceSearch {
  std::vector<std::string> path_directories;  // MAHIMAHI_TRACE_PATH's, in order
  bool path_set = false;                      // MAHIMAHI_TRACE_PATH is set (even empty)
  std::string installed_directory;            // the bundled traces (configure's datadir)
  static constexpr const char* kPathVariable = "MAHIMAHI_TRACE_PATH";
  static TraceSearch from_environment();
  // The names of the traces in installed_directory, numbers in order (constant-3Mbps before
  // constant-12Mbps), README left out.
  std::vector<std::string> bundled_names() const;
};

// The file a trace argument names: a path with a '/' (or "-") as it is; a bare name, the first
// of ./NAME, DIR/NAME for each directory of the search that exists. Throws UserError naming the
// argument, where it looked, a rate:RATE it may have meant, and the bundled traces.
std::string find_trace_file(const std::string& argument, const TraceSearch& search);

// For mm-link --once with traces shorter than about a second (a bundled constant trace lasts 1
// to 12 ms): a warning naming each short trace, its length and what --once will do; empty if
// none is short.
std::string short_once_warning(const Trace& uplink, const Trace& downlink);

// Walks a trace's opportunities from a start time, period after period (or once).
class OpportunityCursor {
 public:
  OpportunityCursor(const Trace& trace, Nanos start, bool once) : trace_(&trace), start_(start), once_(once) {}

  bool exhausted() const { return exhausted_; }
  // Time of the next opportunity (kNever once exhausted).
  Nanos next() const { return nth(1); }
  // Time of the k-th opportunity from here (k >= 1); kNever past the end of a --once trace.
  Nanos nth(uint64_t k) const {
    if (exhausted_) return kNever;
    const uint64_t size = trace_->offsets().size();
    const uint64_t position = index_ + k - 1;
    const uint64_t cycle = cycle_ + position / size;
    if (once_ && cycle > 0) return kNever;
    return start_ + static_cast<Nanos>(cycle) * trace_->period() + trace_->offsets()[position % size];
  }
  // Time of the last opportunity of a --once trace (kNever if it repeats).
  Nanos end() const { return once_ ? start_ + trace_->offsets().back() : kNever; }
  // Passes over whole periods whose opportunity at this position is at or before `now` (an
  // idle fast link: rate:1Tbit/s has 83 million opportunities a second). A --once trace has
  // only one period.
  void skip_periods_until(Nanos now) {
    const Nanos next_time = next();
    if (once_ || next_time == kNever || next_time > now) return;
    cycle_ += static_cast<uint64_t>((now - next_time) / trace_->period());
  }
  void advance() {
    if (++index_ == trace_->offsets().size()) {
      index_ = 0;
      cycle_++;
      if (once_) exhausted_ = true;
    }
  }
  Nanos start() const { return start_; }

 private:
  const Trace* trace_;
  Nanos start_;
  bool once_;
  uint64_t cycle_ = 0;
  uint64_t index_ = 0;
  bool exhausted_ = false;
};

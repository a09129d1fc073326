// SPDX-License-Identifier: GPL-3.0-or-later
// mm-trace convert's rate series to trace (see trace_convert.hh).
#include "packet/trace_convert.hh"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <sstream>
#include <utility>
#include <vector>

#include "packet/trace.hh"
#include "util/exception.hh"

namespace {

constexpr size_t kMaxRatesLineLength = 256;
constexpr double kMaxRateBitsPerSecond = 1e12;  // 1 Tbit/s, as mm-link's rate:

// Opportunities at whole milliseconds from a rate per millisecond (bit/s), keeping the
// fractions of an opportunity from one millisecond to the next. The trace it makes stays within
// Trace's bounds (times up to Trace::kMaxMs, at most `max_opportunities` lines).
class TraceBuilder {
 public:
  TraceBuilder(std::string source, uint64_t max_opportunities)
      : source_(std::move(source)), max_opportunities_(max_opportunities) {}
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
        if (times_.size() == max_opportunities_) {
          throw UserError(source_ + ": the trace would hold more than " + std::to_string(max_opportunities_) +
                          " opportunities (lines), the most a trace can; convert a shorter stretch or lower rates");
        }
        times_.push_back(static_cast<uint32_t>(ms_));
        reserve_ -= kBits;
      }
    }
  }
  std::string finish() {
    if (times_.empty()) throw UserError(source_ + ": the rates are too low to give a single 1500-byte opportunity");
    keep_final_silence();
    std::string out;
    out.reserve(times_.size() * 8);
    for (uint32_t ms : times_) out += std::to_string(ms) + "\n";
    return out;
  }

 private:
  // The period is the last time: silence after the last opportunity would vanish. One
  // opportunity moves to the period's end, ms_: the last (later by the silence), or the first
  // (a period's end is the next one's start: earlier, from its time to 0), whichever moves less.
  void keep_final_silence() {
    const uint32_t end = static_cast<uint32_t>(ms_);
    if (times_.back() == end) return;
    if (times_.front() < end - times_.back())
      times_.erase(times_.begin());
    else
      times_.pop_back();
    times_.push_back(end);
  }

  static constexpr double kBits = Trace::kOpportunityBytes * 8;
  std::string source_;
  uint64_t max_opportunities_;
  uint64_t ms_ = 0;
  double reserve_ = 0;
  std::vector<uint32_t> times_;  // up to Trace::kMaxMs, which fits
};

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

// Adds the milliseconds of a series of (time in ms, bit/s) steps to `builder`: from the first
// step's time on, each at the rate of the last step at or before it; the last step lasts as long
// as the one before it (1 s if it is the only one).
// end < 0: the last step lasts as long as the interval before it (1 s if it is the only one).
void add_steps(TraceBuilder& builder, const std::vector<std::pair<double, double>>& steps, const std::string& source,
               double end = -1) {
  if (steps.empty()) throw UserError(source + ": no rates");
  const double last_interval = steps.size() > 1 ? steps.back().first - steps[steps.size() - 2].first : 1000;
  if (end < 0) end = steps.back().first + last_interval;
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

// Reads a rate series line by line, checking its bounds; `where()` names the current line.
class SeriesLines {
 public:
  SeriesLines(std::string_view text, const std::string& source) : lines_(std::string(text)), source_(source) {}
  bool next() {
    if (!std::getline(lines_, line_)) return false;
    number_++;
    if (number_ > kMaxRateSeriesLines)
      throw UserError(where() + "more than " + std::to_string(kMaxRateSeriesLines) +
                      " lines; convert a shorter stretch");
    if (line_.size() > kMaxRatesLineLength)
      throw UserError(where() + "line of " + std::to_string(line_.size()) + " characters, longer than " +
                      std::to_string(kMaxRatesLineLength) + " (is this a rate series?)");
    return true;
  }
  const std::string& line() const { return line_; }
  std::string where() const { return source_ + ":" + std::to_string(number_) + ": "; }

 private:
  std::istringstream lines_;
  std::string source_;
  std::string line_;
  uint64_t number_ = 0;
};

double checked_rate(double value, double factor, const char* unit, const std::string& where) {
  const double bps = value * factor;
  if (bps > kMaxRateBitsPerSecond) {
    std::ostringstream m;
    m << where << "rate " << value << " " << unit << " is above 1 Tbit/s, the highest rate a trace can have";
    throw UserError(m.str());
  }
  return bps;
}

// (time in ms, bit/s) steps of an ms-kbps or csv series.
std::vector<std::pair<double, double>> read_steps(SeriesLines& lines, bool csv) {
  std::vector<std::pair<double, double>> steps;
  while (lines.next()) {
    auto f = fields_of(lines.line());
    if (f.empty()) continue;
    const std::string where = lines.where();
    if (f.size() != 2) throw UserError(where + "expected two fields: " + (csv ? "SECONDS,MBIT/S" : "MS KBIT/S"));
    if (csv && steps.empty() && !std::isdigit(static_cast<unsigned char>(f[0][0]))) continue;  // header
    const double t = number(f[0], where) * (csv ? 1000 : 1);
    if (t > static_cast<double>(Trace::kMaxMs)) {
      throw UserError(where + "time " + f[0] + (csv ? " s" : " ms") + " is past " + std::to_string(Trace::kMaxMs) +
                      " ms (24.8 days), the longest a trace can be");
    }
    const double bps = csv ? checked_rate(number(f[1], where), 1e6, "Mbit/s", where)
                           : checked_rate(number(f[1], where), 1e3, "kbit/s", where);
    if (!steps.empty() && t <= steps.back().first) throw UserError(where + "times must increase");
    steps.emplace_back(t, bps);
  }
  return steps;
}

}  // namespace

bool is_rate_series_format(std::string_view format) {
  return format == "kbps-per-ms" || format == "ms-kbps" || format == "csv";
}

std::string convert_rate_series(std::string_view text, std::string_view format, const std::string& source,
                                uint64_t max_opportunities) {
  if (!is_rate_series_format(format))
    throw UsageError("unknown --format \"" + std::string(format) + "\" (kbps-per-ms, ms-kbps or csv)");
  SeriesLines lines(text, source);
  TraceBuilder builder(source, std::min(max_opportunities, Trace::kMaxOpportunities));
  if (format == "kbps-per-ms") {
    while (lines.next()) {
      auto f = fields_of(lines.line());
      if (f.empty()) continue;
      const std::string where = lines.where();
      if (f.size() != 1) throw UserError(where + "expected one number (kbit/s)");
      builder.add_millisecond(checked_rate(number(f[0], where), 1e3, "kbit/s", where));
    }
    return builder.finish();
  }
  add_steps(builder, read_steps(lines, format == "csv"), source);
  return builder.finish();
}

SplitSeries split_time_series(std::string_view text, const std::string& source, uint64_t max_opportunities) {
  SeriesLines lines(text, source);
  struct Row {
    double ms, bps, delay_ms, loss;
  };
  std::vector<Row> rows;
  size_t columns = 0;
  while (lines.next()) {
    auto f = fields_of(lines.line());
    if (f.empty()) continue;
    const std::string where = lines.where();
    if (rows.empty() && !std::isdigit(static_cast<unsigned char>(f[0][0]))) continue;  // a header
    if (f.size() < 2 || f.size() > 4)
      throw UserError(where + "expected SECONDS,MBIT/S[,DELAY-MS[,LOSS]] (2 to 4 fields), got " +
                      std::to_string(f.size()));
    if (columns && f.size() != columns) throw UserError(where + "every line must have as many fields as the first");
    columns = f.size();
    Row r{number(f[0], where) * 1000, checked_rate(number(f[1], where), 1e6, "Mbit/s", where), 0, 0};
    if (columns > 2) {
      r.delay_ms = number(f[2], where);
      if (r.delay_ms > 3'600'000) throw UserError(where + "delay " + f[2] + " ms is more than an hour");
    }
    if (columns > 3) {
      r.loss = number(f[3], where);
      if (r.loss > 1) throw UserError(where + "loss " + f[3] + " is not a probability from 0 to 1");
    }
    if (!rows.empty() && r.ms <= rows.back().ms) throw UserError(where + "times must increase");
    if (r.ms - (rows.empty() ? r.ms : rows.front().ms) > static_cast<double>(Trace::kMaxMs))
      throw UserError(where + "more than " + std::to_string(Trace::kMaxMs) + " ms after the first line");
    rows.push_back(r);
  }
  if (rows.empty()) throw UserError(source + ": no rows");
  const double start = rows.front().ms;
  std::vector<std::pair<double, double>> steps;
  for (const Row& r : rows) steps.emplace_back(r.ms - start, r.bps);
  TraceBuilder builder(source, std::min(max_opportunities, Trace::kMaxOpportunities));
  add_steps(builder, steps, source);
  SplitSeries out;
  out.link_trace = builder.finish();
  const double last_interval = rows.size() > 1 ? rows.back().ms - rows[rows.size() - 2].ms : 1000;
  auto series = [&](double Row::*value, const char* header) {
    std::string file = std::string("# ") + header + " (mm-trace split " + source + ")\n";
    char line[64];
    for (const Row& r : rows) {
      std::snprintf(line, sizeof line, "%.6g %.9g\n", r.ms - start, r.*value);
      file += line;
    }
    std::snprintf(line, sizeof line, "%.6g %.9g\n", rows.back().ms - start + last_interval, rows.back().*value);
    return file + line;
  };
  if (columns > 2) out.delay_trace = series(&Row::delay_ms, "time-ms delay-ms");
  if (columns > 3) out.loss_trace = series(&Row::loss, "time-ms loss-probability");
  return out;
}

std::string trace_of_rate_steps(const std::vector<std::pair<double, double>>& steps, double end_ms,
                                const std::string& source, uint64_t max_opportunities) {
  TraceBuilder builder(source, std::min(max_opportunities, Trace::kMaxOpportunities));
  add_steps(builder, steps, source, end_ms);
  return builder.finish();
}

// SPDX-License-Identifier: GPL-3.0-or-later
#include "packet/delay_trace.hh"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "util/exception.hh"

namespace {
// A trace's times: up to about 24 days (as a trace of mm-link).
constexpr double kMaxTraceTimeMs = 2'147'483'647;

// One number of a trace line; nullopt if the text is not one.
bool number_of(std::string_view text, double* value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return !text.empty() && error == std::errc() && end == text.data() + text.size() && std::isfinite(*value);
}

// The inverse of the standard normal distribution function (Acklam's rational approximation,
// relative error below 1.2e-9), for the jitter tables.
double normal_quantile(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  const double low = 0.02425;
  if (p < low) {
    const double q = std::sqrt(-2 * std::log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  if (p > 1 - low) return -normal_quantile(1 - p);
  const double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}
}  // namespace

int64_t TimeSeries::at(Nanos elapsed) const {
  if (points.size() == 1) return points[0].value;
  Nanos t = std::max<Nanos>(0, elapsed);
  if (once && t >= period) return points.back().value;
  if (!once) t %= period;
  const auto after =
      std::upper_bound(points.begin(), points.end(), t, [](Nanos value, const Point& p) { return value < p.time; });
  const size_t i = static_cast<size_t>(after - points.begin()) - 1;
  if (!linear) return points[i].value;
  // Toward the next point; after the last (an interval trace), toward the first at the period
  // (or, once, nowhere: the last value holds).
  Point next = i + 1 < points.size() ? points[i + 1]
               : once                ? Point{period, points[i].value}
                                     : Point{period, points[0].value};
  const double f = static_cast<double>(t - points[i].time) / static_cast<double>(next.time - points[i].time);
  return points[i].value + static_cast<int64_t>(std::llround(f * static_cast<double>(next.value - points[i].value)));
}

const TimeSeriesKind& delay_trace_kind() {
  static const TimeSeriesKind kind{kMaxDelayTraceMs, 1e6, "a number of milliseconds from 0 to 3600000",
                                   "--delay-interval"};
  return kind;
}

const TimeSeriesKind& loss_trace_kind() {
  static const TimeSeriesKind kind{1, 1e9, "a probability from 0 to 1", "--loss-interval"};
  return kind;
}

TimeSeries parse_time_series(const std::string& text, const std::string& name, double interval_ms,
                             const TimeSeriesKind& kind) {
  TimeSeries trace;
  trace.name = name;
  size_t line_number = 0, fields_seen = 0;
  size_t start = 0;
  auto fail = [&](const std::string& why) -> UserError {
    return UserError(name + " line " + std::to_string(line_number) + ": " + why);
  };
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    start = end + 1;
    line_number++;
    if (const size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    std::vector<std::string_view> fields;
    for (size_t i = 0; i < line.size();) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r' || line[i] == ',')) i++;
      size_t j = i;
      while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r' && line[j] != ',') j++;
      if (j > i) fields.push_back(line.substr(i, j - i));
      i = j;
    }
    if (fields.empty()) continue;
    if (fields.size() > 2)
      throw fail("expected \"TIME-MS VALUE\" or \"VALUE\", got " + std::to_string(fields.size()) + " fields");
    if (fields_seen && fields.size() != fields_seen)
      throw fail("every line must have the same number of fields as the first");
    fields_seen = fields.size();
    if (trace.points.size() == kMaxDelayTracePoints)
      throw fail("more than " + std::to_string(kMaxDelayTracePoints) + " points");
    double values[2] = {0, 0};
    for (size_t f = 0; f < fields.size(); f++) {
      const bool time = fields.size() == 2 && f == 0;
      if (!number_of(fields[f], &values[f]) || values[f] < 0 || values[f] > (time ? kMaxTraceTimeMs : kind.max))
        throw fail("\"" + std::string(fields[f]) + "\" is not " +
                   (time ? "a time in milliseconds from 0 to 2147483647" : kind.what));
    }
    const auto value = static_cast<int64_t>(std::llround(values[fields.size() - 1] * kind.scale));
    if (fields.size() == 1) {
      if (interval_ms <= 0)
        throw fail("one value per line: give its interval with " + kind.interval_option +
                   "=MS (for delays: PR #135's RES_MS, LeoReplayer's INTERVAL)");
      trace.points.push_back({ms_to_nanos(interval_ms * static_cast<double>(trace.points.size())), value});
    } else {
      if (interval_ms > 0)
        throw fail("this trace has times: " + kind.interval_option + " is for files of one value per line");
      const Nanos time = ms_to_nanos(values[0]);
      if (trace.points.empty() && time != 0) throw fail("the first time must be 0");
      if (!trace.points.empty() && time <= trace.points.back().time) throw fail("times must increase");
      trace.points.push_back({time, value});
    }
  }
  if (trace.points.empty()) throw UserError(name + ": no values in it (an empty trace)");
  if (fields_seen == 1) {
    trace.period = ms_to_nanos(interval_ms * static_cast<double>(trace.points.size()));
  } else {
    if (trace.points.size() < 2)
      throw UserError(name + ": a trace with times needs two lines at least (the last one's time is its length)");
    trace.period = trace.points.back().time;
  }
  return trace;
}

Jitter::Jitter(Distribution distribution, Nanos sigma, uint64_t seed)
    : distribution_(distribution), sigma_(sigma), random_(seed) {
  if (distribution_ == Distribution::kNone) return;
  table_.resize(kTable);
  const double n = static_cast<double>(kTable);
  for (size_t i = 0; i < kTable; i++) {
    const double p = (static_cast<double>(i) + 0.5) / n;
    switch (distribution_) {
      case Distribution::kNormal:
        table_[i] = normal_quantile(p);
        break;
      case Distribution::kUniform:
        table_[i] = p;
        break;
      default:  // three quarters normal, one quarter Pareto of shape 3, quantile by quantile
        table_[i] = 0.75 * normal_quantile(p) + 0.25 * std::pow(1 - p, -1.0 / 3);
        break;
    }
  }
  // Standardised: mean 0, standard deviation 1, as the table draws them (interpolated).
  double mean = 0, square = 0;
  for (double v : table_) mean += v;
  mean /= n;
  for (double v : table_) square += (v - mean) * (v - mean);
  const double sd = std::sqrt(square / n);
  for (double& v : table_) v = (v - mean) / sd;
}

const char* Jitter::name(Distribution d) {
  switch (d) {
    case Distribution::kNormal:
      return "normal";
    case Distribution::kUniform:
      return "uniform";
    case Distribution::kParetoNormal:
      return "paretonormal";
    default:
      return "none";
  }
}

// SPDX-License-Identifier: GPL-3.0-or-later
// The live meters' slots, series and charts (see meter.hh).
#include "graphing/meter.hh"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "graphing/delay_plot.hh"
#include "graphing/throughput_plot.hh"

namespace {
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr size_t kExactClasses = 64;
const double kClassGrowth = std::pow(1e6 / kExactClasses, 1.0 / (kDelayClasses - kExactClasses));

// The width of the bins of a whole run's throughput chart: whole slots, at least 100 ms (a
// rate over fewer packets is mostly noise), and at most about 300 bins.
double whole_run_bin_ms(const MeterSeries& series) {
  const double span = static_cast<double>(series.size()) * series.slot_ms();
  return series.slot_ms() * std::max(1.0, std::ceil(std::max(100.0, span / 300) / series.slot_ms()));
}

std::string ms_text(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", ms);
  return text;
}
}  // namespace

size_t delay_class(double ms) {
  if (!(ms > 0)) return 0;
  if (ms < kExactClasses) return static_cast<size_t>(ms);
  const double c = kExactClasses + std::floor(std::log(ms / kExactClasses) / std::log(kClassGrowth));
  return static_cast<size_t>(std::min(c, static_cast<double>(kDelayClasses - 1)));
}

double delay_class_value(size_t c) {
  if (c < kExactClasses) return static_cast<double>(c);
  return kExactClasses * std::pow(kClassGrowth, static_cast<double>(c - kExactClasses) + 0.5);
}

void MeterSlot::merge(const MeterSlot& other) {
  capacity_bytes += other.capacity_bytes;
  arrived_bytes += other.arrived_bytes;
  departed_bytes += other.departed_bytes;
  dropped_packets += other.dropped_packets;
  marked_bytes += other.marked_bytes;
  marked_packets += other.marked_packets;
  earliest_departure_ms = std::min(earliest_departure_ms, other.earliest_departure_ms);
  delays |= other.delays;
  mark_delays |= other.mark_delays;
}

MeterSeries::MeterSeries(Mode mode, double slot_ms, size_t capacity)
    : mode_(mode), slot_ms_(slot_ms), slots_(std::max<size_t>(capacity, 2)) {}

MeterSlot* MeterSeries::at(double ms) {
  if (ms < first_ms_) return nullptr;
  double index = std::floor((ms - first_ms_) / slot_ms_);
  const double capacity = static_cast<double>(slots_.size());
  if (mode_ == Mode::Window && index >= static_cast<double>(count_) + capacity) {
    // A jump past a whole window (a stalled process): start afresh at ms.
    head_ = count_ = 0;
    first_ms_ += index * slot_ms_;
    index = 0;
  }
  while (index >= capacity) {
    if (mode_ == Mode::WholeRun) {
      compact();
      index = std::floor((ms - first_ms_) / slot_ms_);
    } else {
      // The oldest slot leaves the window.
      if (count_ > 0) {
        head_ = (head_ + 1) % slots_.size();
        count_--;
      }
      first_ms_ += slot_ms_;
      index--;
    }
  }
  const size_t i = static_cast<size_t>(index);
  while (count_ <= i) slots_[(head_ + count_++) % slots_.size()] = MeterSlot{};
  return &slots_[(head_ + i) % slots_.size()];
}

void MeterSeries::compact() {
  std::vector<MeterSlot> merged((count_ + 1) / 2);
  for (size_t i = 0; i < count_; i++) merged[i / 2].merge(slot(i));
  std::fill(slots_.begin(), slots_.end(), MeterSlot{});
  std::copy(merged.begin(), merged.end(), slots_.begin());
  head_ = 0;
  count_ = merged.size();
  slot_ms_ *= 2;
}

void MeterSeries::arrival(double ms, double bytes) {
  if (MeterSlot* s = at(ms)) s->arrived_bytes += bytes;
}

void MeterSeries::departure(double ms, double bytes, double arrival_ms, double delay_ms) {
  if (MeterSlot* s = at(ms)) {
    s->departed_bytes += bytes;
    s->delays.set(delay_class(delay_ms));
  }
  if (arrival_ms >= first_ms_ && arrival_ms < start_ms(count_)) {
    MeterSlot& s = slots_[(head_ + static_cast<size_t>((arrival_ms - first_ms_) / slot_ms_)) % slots_.size()];
    s.earliest_departure_ms = std::min(s.earliest_departure_ms, ms);
  }
}

void MeterSeries::drop(double ms, double packets) {
  if (MeterSlot* s = at(ms)) s->dropped_packets += packets;
}

void MeterSeries::mark_delay(double ms, double delay_ms) {
  if (MeterSlot* s = at(ms)) s->mark_delays.set(delay_class(delay_ms));
}

void MeterSeries::mark(double ms, double packets, double bytes) {
  if (MeterSlot* s = at(ms)) {
    s->marked_packets += packets;
    s->marked_bytes += bytes;
  }
}

std::vector<double> slot_signal_delays(const MeterSeries& series) {
  std::vector<double> out(series.size(), kNan);
  double next = INFINITY;  // the signal delay at the start of the slot after this one
  for (size_t i = series.size(); i-- > 0;) {
    next = std::min(series.slot(i).earliest_departure_ms - series.start_ms(i), next + series.slot_ms());
    if (std::isfinite(next)) out[i] = next;
  }
  return out;
}

LinkMeter::LinkMeter(const Trace* trace, bool once, Nanos origin, std::string title, bool pass_through)
    : trace_(trace), once_(once), pass_through_(pass_through), origin_(origin), title_(std::move(title)) {
  if (trace_ && !trace_->offsets().empty())
    first_opportunity_ms_ = static_cast<double>(trace_->offsets().front() / kNanosPerMs);
}

double LinkMeter::bytes_until(double ms) const {
  if (!trace_) return 0;
  // Those in the milliseconds before ms: an opportunity at 10.5 ms is in the log's line "10".
  const Nanos t = static_cast<Nanos>(ms * kNanosPerMs) - 1;
  return static_cast<double>(trace_->opportunities_until(t, once_)) * Trace::kOpportunityBytes;
}

void LinkMeter::begin_at(double ms) {
  begun_ = true;
  for (MeterSeries* s : {&live_, &whole_}) s->begin(ms);
}

void LinkMeter::add(const LinkEvent& event) {
  std::lock_guard lock(mutex_);
  add_locked(event);
}

void LinkMeter::advance(Nanos now) {
  std::lock_guard lock(mutex_);
  advance_locked(now);
}

void LinkMeter::add_locked(const LinkEvent& e) {
  const double t = ms(e.time);
  if (!begun_) begin_at(std::min(t, first_opportunity_ms_));
  any_event_ = true;
  switch (e.kind) {
    case '+':
      arrived_bytes_ += e.bytes;
      for (MeterSeries* s : {&live_, &whole_}) s->arrival(t, e.bytes);
      break;
    case '-': {
      // Whole milliseconds, as the log writes them: the live chart and mm-delay-graph agree.
      const double delay = static_cast<double>((e.time - origin_) / kNanosPerMs - (e.arrival - origin_) / kNanosPerMs);
      departed_bytes_ += e.bytes;
      departures_++;
      delay_counts_[delay_class(delay)]++;
      for (MeterSeries* s : {&live_, &whole_}) s->departure(t, e.bytes, ms(e.arrival), delay);
      if (pending_mark_ms_) {
        for (MeterSeries* s : {&live_, &whole_}) s->mark_delay(*pending_mark_ms_, delay);
        pending_mark_ms_.reset();
      }
      break;
    }
    case 'd':
      for (MeterSeries* s : {&live_, &whole_}) s->drop(t, e.packets);
      break;
    case 'm':
      marked_bytes_ += e.bytes;
      for (MeterSeries* s : {&live_, &whole_}) s->mark(t, e.packets, e.bytes);
      if (!pending_mark_ms_) pending_mark_ms_ = t;
      break;
  }
}

void LinkMeter::advance_locked(Nanos now) {
  const double t = ms(now);
  if (t <= now_ms_) return;
  now_ms_ = t;
  if (!begun_ && first_opportunity_ms_ <= t) begin_at(first_opportunity_ms_);
  if (!begun_) return;
  for (MeterSeries* s : {&live_, &whole_}) s->advance(t, [this](double at) { return bytes_until(at); });
}

Chart LinkMeter::throughput_chart(MeterScope scope) const {
  std::lock_guard lock(mutex_);
  const MeterSeries& series = scope == MeterScope::Live ? live_ : whole_;
  const double bin_ms = scope == MeterScope::Live ? kLiveBinMs : whole_run_bin_ms(series);
  ThroughputBins bins;
  bins.bin_ms = bin_ms;
  if (series.size() > 0) {
    // A whole run's bins start with it, as mm-throughput-graph's start at a log's first line;
    // a live window's are aligned on multiples of their width, so that its points keep still.
    bins.first_ms = scope == MeterScope::Live ? std::floor(series.start_ms(0) / bin_ms) * bin_ms : series.start_ms(0);
    bins.end_ms = std::max(series.covered_ms(), bins.first_ms + 1e-3);
    const size_t count = static_cast<size_t>(std::ceil((bins.end_ms - bins.first_ms) / bin_ms));
    for (auto* v : {&bins.capacity_bytes, &bins.ingress_bytes, &bins.egress_bytes, &bins.dropped_packets,
                    &bins.marked_bytes, &bins.marked_packets})
      v->assign(count, 0);
    for (size_t i = 0; i < series.size(); i++) {
      const size_t bin = std::min(count - 1, static_cast<size_t>((series.start_ms(i) - bins.first_ms) / bin_ms));
      const MeterSlot& s = series.slot(i);
      bins.capacity_bytes[bin] += s.capacity_bytes;
      bins.ingress_bytes[bin] += s.arrived_bytes;
      bins.egress_bytes[bin] += s.departed_bytes;
      bins.dropped_packets[bin] += s.dropped_packets;
      bins.marked_bytes[bin] += s.marked_bytes;
      bins.marked_packets[bin] += s.marked_packets;
    }
    // A live first bin that starts before the first slot (the start, or the window's oldest
    // slot once it scrolls) holds only part of its time: it is left out.
    if (scope == MeterScope::Live && bins.first_ms < series.start_ms(0) && count > 1) {
      bins.first_ms += bin_ms;
      for (auto* v : {&bins.capacity_bytes, &bins.ingress_bytes, &bins.egress_bytes, &bins.dropped_packets,
                      &bins.marked_bytes, &bins.marked_packets})
        v->erase(v->begin());
    }
  }
  const double seconds = std::max(now_ms_, 1.0) / 1000;
  const double capacity_mbps = bytes_until(now_ms_) * 8 / seconds / 1e6;
  ThroughputSource source{title_,
                          !any_event_ && !trace_,
                          trace_ != nullptr,
                          pass_through_,
                          capacity_mbps,
                          arrived_bytes_ * 8 / seconds / 1e6,
                          departed_bytes_ * 8 / seconds / 1e6,
                          marked_bytes_ * 8 / seconds / 1e6,
                          std::move(bins)};
  Chart chart = ::throughput_chart(std::vector<ThroughputSource>{std::move(source)},
                                   title_ + " (" + ms_text(bin_ms) + " ms bins)", false);
  if (scope == MeterScope::Live) {
    const double end = std::max(now_ms_, kLiveWindowMs) / 1000;
    chart.x_range = {end - kLiveWindowMs / 1000, end};
  }
  return chart;
}

Chart LinkMeter::delay_chart(MeterScope scope) const {
  std::lock_guard lock(mutex_);
  const MeterSeries& series = scope == MeterScope::Live ? live_ : whole_;
  DelaySource source{title_, !any_event_, departures_ == 0, kNan, kNan, {}, {}};
  if (departures_ > 0) {
    const uint64_t rank = static_cast<uint64_t>(std::ceil(0.95 * static_cast<double>(departures_)));
    uint64_t seen = 0;
    for (size_t c = 0; c < kDelayClasses; c++) {
      seen += delay_counts_[c];
      if (seen >= rank) {
        source.queueing_delay_p95_ms = delay_class_value(c);
        break;
      }
    }
    std::vector<double> whole_signal = slot_signal_delays(whole_);
    std::erase_if(whole_signal, [](double v) { return std::isnan(v); });
    if (!whole_signal.empty()) {
      const size_t k = std::min(whole_signal.size() - 1,
                                static_cast<size_t>(std::ceil(0.95 * static_cast<double>(whole_signal.size()))) - 1);
      std::nth_element(whole_signal.begin(), whole_signal.begin() + static_cast<long>(k), whole_signal.end());
      source.signal_delay_p95_ms = whole_signal[k];
    }
  }
  const std::vector<double> signal = slot_signal_delays(series);
  for (size_t i = 0; i < series.size(); i++) {
    const double start_s = series.start_ms(i) / 1000;
    source.signal.emplace_back(start_s, signal[i]);
    const MeterSlot& s = series.slot(i);
    if (s.delays.none() && s.mark_delays.none()) continue;
    const double middle_s = start_s + series.slot_ms() / 2000;
    for (size_t c = 0; c < kDelayClasses; c++) {
      if (s.delays.test(c)) source.packets.emplace_back(middle_s, delay_class_value(c));
      if (s.mark_delays.test(c)) source.marks.emplace_back(middle_s, delay_class_value(c));
    }
  }
  Chart chart = ::delay_chart(std::vector<DelaySource>{std::move(source)}, title_ + " delay", false);
  if (!any_event_) chart.note = "no packets yet";
  if (scope == MeterScope::Live) {
    const double end = std::max(now_ms_, kLiveWindowMs) / 1000;
    chart.x_range = {end - kLiveWindowMs / 1000, end};
  }
  return chart;
}

std::pair<double, double> SmoothScale::next(double target_lo, double target_hi, bool log_y) {
  double lo = log_y ? std::log10(target_lo) : 0, hi = log_y ? std::log10(target_hi) : target_hi;
  if (!started_) {
    started_ = true;
    lo_ = lo, hi_ = hi;
  } else {
    // Up at once by a third of the way each frame, down by a twentieth: about a tenth of a
    // second to show a burst, over a second to give its room back.
    hi_ += (hi - hi_) * (hi > hi_ ? 0.35 : 0.05);
    lo_ += (lo - lo_) * (lo < lo_ ? 0.35 : 0.05);
  }
  return log_y ? std::pair{std::pow(10, lo_), std::pow(10, hi_)} : std::pair{0.0, hi_};
}

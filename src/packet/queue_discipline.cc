#include "packet/queue_discipline.hh"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

#include "util/exception.hh"

namespace {

constexpr uint32_t kMtu = 1500;

// ----- parameters -----

std::string format_ms(double ms) {
  std::ostringstream s;
  s << ms;
  return s.str();
}

struct Limits {
  uint64_t bytes = 0;    // 0: no limit
  uint64_t packets = 0;  // 0: no limit
  bool exceeded(size_t queued_bytes, size_t queued_packets) const {
    return (bytes && queued_bytes > bytes) || (packets && queued_packets > packets);
  }
  std::string describe() const {
    std::string s;
    if (bytes) s += "bytes=" + std::to_string(bytes);
    if (packets) s += std::string(s.empty() ? "" : ", ") + "packets=" + std::to_string(packets);
    return s;
  }
};

Limits required_limits(const QueueArgs& args, std::string_view name, std::string_view option) {
  Limits limits{args.bytes.value_or(0), args.packets.value_or(0)};
  if (!limits.bytes && !limits.packets) {
    throw UsageError(std::string(name) + " needs a queue limit: " + std::string(option) +
                     "-args=\"packets=N\" or \"bytes=N\" (or both), N > 0");
  }
  return limits;
}

double required_ms(const std::optional<double>& value, std::string_view parameter, std::string_view name,
                   std::string_view option) {
  if (!value || *value <= 0) {
    throw UsageError(std::string(name) + " needs " + std::string(parameter) + "=MS > 0 in " + std::string(option) +
                     "-args");
  }
  return *value;
}

void allow_only(const QueueArgs& args, std::initializer_list<std::string_view> allowed, std::string_view name,
                std::string_view option) {
  auto check = [&](bool present, std::string_view parameter) {
    if (present && std::find(allowed.begin(), allowed.end(), parameter) == allowed.end()) {
      throw UsageError("queue " + std::string(name) + " takes no parameter " + std::string(parameter) + " (in " +
                       std::string(option) + "-args)");
    }
  };
  check(args.bytes.has_value(), "bytes");
  check(args.packets.has_value(), "packets");
  check(args.target.has_value(), "target");
  check(args.interval.has_value(), "interval");
  check(args.qdelay_ref.has_value(), "qdelay_ref");
  check(args.max_burst.has_value(), "max_burst");
  check(args.flows.has_value(), "flows");
}

// ----- FIFO disciplines -----

class FifoDiscipline : public QueueDiscipline {
 public:
  std::span<uint8_t> reserve() override { return ring_.reserve(); }
  bool next(Nanos, DropCount&) override { return !ring_.empty(); }
  const PacketRing::Record& front() const override { return ring_.front(); }
  std::span<const uint8_t> front_data() const override { return ring_.front_data(); }
  void pop() override { ring_.pop(); }
  bool empty() const override { return ring_.empty(); }

 protected:
  // Admits the reserved packet unless that would exceed the limits (drop-tail).
  void admit_within(const Limits& limits, Nanos now, uint32_t length, DropCount& drops) {
    if (limits.exceeded(ring_.bytes() + length, ring_.packets() + 1)) {
      drops.add(length);
    } else {
      ring_.commit(now, length);
    }
  }
  void drop_front(DropCount& drops) {
    drops.add(ring_.front().length);
    ring_.pop();
  }
  PacketRing ring_;
};

class InfiniteQueue final : public FifoDiscipline {
 public:
  void enqueue(Nanos now, uint32_t length, DropCount&) override { ring_.commit(now, length); }
  std::string description() const override { return "infinite"; }
};

class DropTailQueue final : public FifoDiscipline {
 public:
  explicit DropTailQueue(Limits limits) : limits_(limits) {}
  void enqueue(Nanos now, uint32_t length, DropCount& drops) override { admit_within(limits_, now, length, drops); }
  std::string description() const override { return "droptail [" + limits_.describe() + "]"; }

 private:
  Limits limits_;
};

class DropHeadQueue final : public FifoDiscipline {
 public:
  explicit DropHeadQueue(Limits limits) : limits_(limits) {}
  void enqueue(Nanos now, uint32_t length, DropCount& drops) override {
    ring_.commit(now, length);
    while (!ring_.empty() && limits_.exceeded(ring_.bytes(), ring_.packets())) drop_front(drops);
  }
  std::string description() const override { return "drophead [" + limits_.describe() + "]"; }

 private:
  Limits limits_;
};

// CoDel (RFC 8289): drops at dequeue while packets have waited longer than `target` for at
// least `interval`, ever more often (interval / sqrt(count)). Admission is drop-tail.
class CoDelState {
 public:
  CoDelState(Nanos target, Nanos interval) : target_(target), interval_(interval) {}

  // Runs the control law over the front of `ring` at `now`, dropping as it says.
  template <class DropFront>
  void dequeue(PacketRing& ring, Nanos now, DropFront&& drop_front) {
    if (ring.empty()) {
      first_above_time_ = 0;
      dropping_ = false;
      return;
    }
    bool ok_to_drop = should_drop(ring, now);
    if (dropping_) {
      if (!ok_to_drop) {
        dropping_ = false;
      } else {
        while (dropping_ && now >= drop_next_) {
          drop_front();
          count_++;
          if (ring.empty() || !should_drop(ring, now)) {
            dropping_ = false;
          } else {
            drop_next_ = control_law(drop_next_);
          }
        }
      }
    } else if (ok_to_drop) {
      drop_front();
      dropping_ = true;
      const uint32_t delta = count_ - last_count_;
      count_ = (delta > 1 && now - drop_next_ < 16 * interval_) ? delta : 1;
      drop_next_ = control_law(now);
      last_count_ = count_;
      if (!ring.empty()) should_drop(ring, now);  // keep first_above_time_ current for the new front
    }
  }

 private:
  bool should_drop(const PacketRing& ring, Nanos now) {
    const Nanos sojourn = now - ring.front().arrival;
    if (sojourn < target_ || ring.bytes() <= kMtu) {
      first_above_time_ = 0;
      return false;
    }
    if (first_above_time_ == 0) {
      first_above_time_ = now + interval_;
      return false;
    }
    return now >= first_above_time_;
  }
  Nanos control_law(Nanos t) const {
    return t + static_cast<Nanos>(static_cast<double>(interval_) / std::sqrt(static_cast<double>(count_)));
  }

  Nanos target_, interval_;
  Nanos first_above_time_ = 0;
  Nanos drop_next_ = 0;
  uint32_t count_ = 0;
  uint32_t last_count_ = 0;
  bool dropping_ = false;
};

class CoDelQueue final : public FifoDiscipline {
 public:
  CoDelQueue(Limits limits, double target_ms, double interval_ms)
      : limits_(limits),
        target_ms_(target_ms),
        interval_ms_(interval_ms),
        codel_(ms_to_nanos(target_ms), ms_to_nanos(interval_ms)) {}
  void enqueue(Nanos now, uint32_t length, DropCount& drops) override { admit_within(limits_, now, length, drops); }
  bool next(Nanos now, DropCount& drops) override {
    codel_.dequeue(ring_, now, [&] { drop_front(drops); });
    return !ring_.empty();
  }
  bool drops_when_dequeuing() const override { return true; }
  std::string description() const override {
    return "codel [" + limits_.describe() + ", target=" + format_ms(target_ms_) +
           ", interval=" + format_ms(interval_ms_) + "]";
  }

 private:
  Limits limits_;
  double target_ms_, interval_ms_;
  CoDelState codel_;
};

// PIE (RFC 8033): drops arriving packets with a probability steered every 15 ms by how far the
// queueing delay (the front packet's sojourn time) is from qdelay_ref, and how it moves.
// Admission is drop-tail.
class PieQueue final : public FifoDiscipline {
 public:
  PieQueue(Limits limits, double qdelay_ref_ms, double max_burst_ms, uint64_t seed)
      : limits_(limits),
        qdelay_ref_ms_(qdelay_ref_ms),
        max_burst_ms_(max_burst_ms),
        qdelay_ref_(ms_to_nanos(qdelay_ref_ms)),
        max_burst_(ms_to_nanos(max_burst_ms)),
        random_(seed),
        burst_allowance_(max_burst_) {}

  void enqueue(Nanos now, uint32_t length, DropCount& drops) override {
    update(now);
    if (should_drop()) {
      drops.add(length);
      return;
    }
    admit_within(limits_, now, length, drops);
  }
  std::string description() const override {
    return "pie [" + limits_.describe() + ", qdelay_ref=" + format_ms(qdelay_ref_ms_) +
           ", max_burst=" + format_ms(max_burst_ms_) + "]";
  }

 private:
  static constexpr Nanos kUpdate = 15 * kNanosPerMs;
  static constexpr double kAlpha = 0.125, kBeta = 1.25;  // per second of delay

  Nanos queue_delay(Nanos now) const { return ring_.empty() ? 0 : now - ring_.front().arrival; }

  bool should_drop() {
    if (burst_allowance_ > 0) return false;
    if (qdelay_old_ < qdelay_ref_ / 2 && probability_ < 0.2) return false;
    if (ring_.bytes() < 2 * kMtu) return false;
    return random_.bernoulli(probability_);
  }

  // Catches up on every 15 ms update period that has passed.
  void update(Nanos now) {
    if (next_update_ == 0) next_update_ = now + kUpdate;
    while (now >= next_update_) {
      const Nanos qdelay = queue_delay(next_update_);
      double scale = 1;
      if (probability_ < 0.000001)
        scale = 1.0 / 2048;
      else if (probability_ < 0.00001)
        scale = 1.0 / 512;
      else if (probability_ < 0.0001)
        scale = 1.0 / 128;
      else if (probability_ < 0.001)
        scale = 1.0 / 32;
      else if (probability_ < 0.01)
        scale = 1.0 / 8;
      else if (probability_ < 0.1)
        scale = 1.0 / 2;
      const double delta = scale * (kAlpha * static_cast<double>(qdelay - qdelay_ref_) / 1e9 +
                                    kBeta * static_cast<double>(qdelay - qdelay_old_) / 1e9);
      probability_ = std::clamp(probability_ + delta, 0.0, 1.0);
      if (qdelay == 0 && qdelay_old_ == 0) probability_ *= 0.98;
      if (qdelay < qdelay_ref_ / 2 && qdelay_old_ < qdelay_ref_ / 2 && probability_ == 0) {
        burst_allowance_ = max_burst_;
      } else {
        burst_allowance_ = std::max<Nanos>(0, burst_allowance_ - kUpdate);
      }
      qdelay_old_ = qdelay;
      next_update_ += kUpdate;
    }
  }

  Limits limits_;
  double qdelay_ref_ms_, max_burst_ms_;
  Nanos qdelay_ref_, max_burst_;
  Random random_;
  double probability_ = 0;
  Nanos qdelay_old_ = 0;
  Nanos burst_allowance_;
  Nanos next_update_ = 0;
};

// ----- fq_codel -----

// Flow queuing with CoDel per flow (RFC 8290): packets are hashed by their 5-tuple into one of
// `flows` queues; new flows are served before old ones, each in deficit round robin with a
// quantum of one MTU; each queue runs its own CoDel. When the total exceeds the limit, the
// fattest flow loses packets from its head.
class FqCoDelQueue final : public QueueDiscipline {
 public:
  FqCoDelQueue(Limits limits, double target_ms, double interval_ms, uint32_t flow_count)
      : limits_(limits), target_ms_(target_ms), interval_ms_(interval_ms), flows_(flow_count) {
    for (auto& f : flows_) f.codel = CoDelState(ms_to_nanos(target_ms), ms_to_nanos(interval_ms));
  }

  std::span<uint8_t> reserve() override { return {scratch_.get(), kScratch}; }

  void enqueue(Nanos now, uint32_t length, DropCount& drops) override {
    const uint32_t index = classify(std::span<const uint8_t>(scratch_.get(), length));
    Flow& flow = flows_[index];
    if (!flow.ring) flow.ring = std::make_unique<PacketRing>(8 * 1024, 2048);  // once per flow, then reused
    std::copy_n(scratch_.get(), length, flow.ring->reserve(length).begin());
    flow.ring->commit(now, length);
    bytes_ += length;
    packets_++;
    if (!flow.active) {
      flow.active = true;
      flow.deficit = kQuantum;
      new_flows_.push_back(index);
    }
    while (limits_.exceeded(bytes_, packets_)) drop_from_fattest(drops);
  }

  bool next(Nanos now, DropCount& drops) override {
    if (current_) return true;
    for (;;) {
      std::vector<uint32_t>* list = !new_flows_.empty() ? &new_flows_ : !old_flows_.empty() ? &old_flows_ : nullptr;
      if (!list) return false;
      const uint32_t index = list->front();
      Flow& flow = flows_[index];
      if (flow.deficit <= 0) {
        flow.deficit += kQuantum;
        rotate_to_old(list, index);
        continue;
      }
      flow.codel.dequeue(*flow.ring, now, [&] { drop_front_of(flow, drops); });
      if (flow.ring->empty()) {
        // An emptied new flow goes to the old list once, so it cannot keep its priority.
        if (list == &new_flows_ && !old_flows_.empty()) {
          rotate_to_old(list, index);
        } else {
          list->erase(list->begin());
          flow.active = false;
        }
        continue;
      }
      flow.deficit -= static_cast<int64_t>(flow.ring->front().length);
      current_ = &flow;
      return true;
    }
  }

  const PacketRing::Record& front() const override { return current_->ring->front(); }
  std::span<const uint8_t> front_data() const override { return current_->ring->front_data(); }
  void pop() override {
    bytes_ -= current_->ring->front().length;
    packets_--;
    current_->ring->pop();
    current_ = nullptr;
  }
  bool empty() const override { return packets_ == 0; }
  bool drops_when_dequeuing() const override { return true; }
  std::string description() const override {
    return "fq_codel [" + limits_.describe() + ", target=" + format_ms(target_ms_) +
           ", interval=" + format_ms(interval_ms_) + ", flows=" + std::to_string(flows_.size()) + "]";
  }

 private:
  static constexpr size_t kScratch = 65536;
  static constexpr int64_t kQuantum = 1514;
  struct Flow {
    std::unique_ptr<PacketRing> ring;
    CoDelState codel{0, 0};
    int64_t deficit = 0;
    bool active = false;
  };

  uint32_t classify(std::span<const uint8_t> packet) const {
    // IPv4 5-tuple: protocol, addresses, and ports for TCP/UDP (first fragment).
    uint64_t h = 0x9e3779b97f4a7c15ULL;
    auto mix = [&h](uint64_t v) {
      h = (h ^ v) * 0xbf58476d1ce4e5b9ULL;
      h ^= h >> 31;
    };
    if (packet.size() >= 20) {
      const size_t header = (packet[0] & 0x0f) * 4u;
      mix(packet[9]);
      for (size_t i = 12; i < 20; i++) mix(packet[i]);
      if ((packet[9] == 6 || packet[9] == 17) && packet.size() >= header + 4) {
        for (size_t i = header; i < header + 4; i++) mix(packet[i]);
      }
    }
    return static_cast<uint32_t>(h % flows_.size());
  }

  void rotate_to_old(std::vector<uint32_t>* list, uint32_t index) {
    list->erase(list->begin());
    old_flows_.push_back(index);
  }

  void drop_front_of(Flow& flow, DropCount& drops) {
    const uint32_t length = flow.ring->front().length;
    drops.add(length);
    bytes_ -= length;
    packets_--;
    flow.ring->pop();
  }

  void drop_from_fattest(DropCount& drops) {
    Flow* fattest = nullptr;
    for (auto& f : flows_) {
      if (f.ring && !f.ring->empty() && (!fattest || f.ring->bytes() > fattest->ring->bytes())) fattest = &f;
    }
    drop_front_of(*fattest, drops);
  }

  Limits limits_;
  double target_ms_, interval_ms_;
  std::vector<Flow> flows_;
  std::vector<uint32_t> new_flows_, old_flows_;
  std::unique_ptr<uint8_t[]> scratch_{new uint8_t[kScratch]};
  Flow* current_ = nullptr;
  size_t bytes_ = 0;
  size_t packets_ = 0;
};

}  // namespace

QueueArgs QueueArgs::parse(std::string_view text, std::string_view option) {
  QueueArgs args;
  size_t position = 0;
  while (position < text.size()) {
    size_t end = text.find(',', position);
    if (end == std::string_view::npos) end = text.size();
    std::string_view item = text.substr(position, end - position);
    position = end + 1;
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.empty()) continue;
    const size_t equals = item.find('=');
    const std::string where = std::string(option) + "-args";
    if (equals == std::string_view::npos) {
      throw UsageError(where + ": \"" + std::string(item) + "\" is not NAME=NUMBER");
    }
    const std::string_view name = item.substr(0, equals), value = item.substr(equals + 1);
    double number = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (value.empty() || ec != std::errc() || ptr != value.data() + value.size() || !std::isfinite(number) ||
        number < 0) {
      throw UsageError(where + ": " + std::string(name) + " must be a non-negative number, not \"" +
                       std::string(value) + "\"");
    }
    auto integer = [&]() -> uint64_t {
      if (number != std::floor(number)) throw UsageError(where + ": " + std::string(name) + " must be a whole number");
      return static_cast<uint64_t>(number);
    };
    if (name == "bytes")
      args.bytes = integer();
    else if (name == "packets")
      args.packets = integer();
    else if (name == "target")
      args.target = number;
    else if (name == "interval")
      args.interval = number;
    else if (name == "qdelay_ref")
      args.qdelay_ref = number;
    else if (name == "max_burst")
      args.max_burst = number;
    else if (name == "flows")
      args.flows = integer();
    else
      throw UsageError(where + ": unknown parameter \"" + std::string(name) +
                       "\" (known: bytes, packets, target, interval, qdelay_ref, max_burst, flows)");
  }
  return args;
}

std::unique_ptr<QueueDiscipline> make_queue_discipline(std::string_view name, const QueueArgs& args,
                                                       std::string_view option, uint64_t seed) {
  if (name == "infinite") {
    if (!args.empty()) throw UsageError("queue infinite takes no parameters (in " + std::string(option) + "-args)");
    return std::make_unique<InfiniteQueue>();
  }
  if (name == "droptail" || name == "drophead") {
    allow_only(args, {"bytes", "packets"}, name, option);
    const Limits limits = required_limits(args, name, option);
    if (name == "droptail") return std::make_unique<DropTailQueue>(limits);
    return std::make_unique<DropHeadQueue>(limits);
  }
  if (name == "codel") {
    allow_only(args, {"bytes", "packets", "target", "interval"}, name, option);
    const Limits limits = required_limits(args, name, option);
    const double target = required_ms(args.target, "target", name, option);
    return std::make_unique<CoDelQueue>(limits, target, required_ms(args.interval, "interval", name, option));
  }
  if (name == "pie") {
    allow_only(args, {"bytes", "packets", "qdelay_ref", "max_burst"}, name, option);
    const Limits limits = required_limits(args, name, option);
    const double qdelay_ref = required_ms(args.qdelay_ref, "qdelay_ref", name, option);
    return std::make_unique<PieQueue>(limits, qdelay_ref, required_ms(args.max_burst, "max_burst", name, option), seed);
  }
  if (name == "fq_codel") {
    // Defaults as Linux's fq_codel: 10240 packets, target 5 ms, interval 100 ms, 1024 flows.
    allow_only(args, {"bytes", "packets", "target", "interval", "flows"}, name, option);
    Limits limits{args.bytes.value_or(0), args.packets.value_or(args.bytes ? 0 : 10240)};
    const uint64_t flows = args.flows.value_or(1024);
    if (flows == 0 || flows > 65536) throw UsageError("fq_codel: flows must be between 1 and 65536");
    return std::make_unique<FqCoDelQueue>(limits, args.target ? required_ms(args.target, "target", name, option) : 5.0,
                                          args.interval ? required_ms(args.interval, "interval", name, option) : 100.0,
                                          static_cast<uint32_t>(flows));
  }
  throw UsageError("unknown queue \"" + std::string(name) + "\" for " + std::string(option) +
                   " (known: infinite, droptail, drophead, codel, pie, fq_codel)");
}

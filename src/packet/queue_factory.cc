// SPDX-License-Identifier: GPL-3.0-or-later
// The factory of the queue disciplines (queue_factory.hh): the parameters (QueueArgs), checked,
// and a discipline built by name; each discipline lives in its own file.
#include "packet/queue_factory.hh"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "packet/codel_queue.hh"
#include "packet/drophead_queue.hh"
#include "packet/droptail_queue.hh"
#include "packet/dualpi2_queue.hh"
#include "packet/fq_codel_queue.hh"
#include "packet/infinite_queue.hh"
#include "packet/pie_queue.hh"
#include "packet/queue_limits.hh"
#include "util/exception.hh"

namespace {

QueueLimits required_limits(const QueueArgs& args, std::string_view name, std::string_view option) {
  QueueLimits limits{args.bytes.value_or(0), args.packets.value_or(0)};
  if (!limits.bytes && !limits.packets) {
    throw UsageError(std::string(name) + " needs a queue limit: " + std::string(option) +
                     "-args=\"packets=N\" or \"bytes=N\" (or both), N > 0");
  }
  return limits;
}

// The limits given, or `packets` packets when neither bytes nor packets is.
QueueLimits limits_or_default(const QueueArgs& args, uint64_t packets) {
  return QueueLimits{args.bytes.value_or(0), args.packets.value_or(args.bytes ? 0 : packets)};
}

// A time parameter: the default when absent; when given, more than 0.
constexpr double kMaxQueueTimeMs = 3'600'000;

double ms_or_default(const std::optional<double>& value, double default_ms, std::string_view parameter,
                     std::string_view name, std::string_view option) {
  if (!value) return default_ms;
  if (*value <= 0) {
    throw UsageError(std::string(name) + ": " + std::string(parameter) + " must be more than 0 ms (in " +
                     std::string(option) + "-args; leave it out for the default, " + format_ms(default_ms) + ")");
  }
  // An hour is far beyond any useful setting, and keeps every time computed from it within a
  // signed 64-bit count of nanoseconds (fuzz-queue found interval=1e100 overflowing codel's).
  if (*value > kMaxQueueTimeMs) {
    throw UsageError(std::string(name) + ": " + std::string(parameter) + " must be at most " +
                     format_ms(kMaxQueueTimeMs) + " (an hour; in " + std::string(option) + "-args)");
  }
  return *value;
}

// CoDel's parameters (codel, fq_codel): RFC 8289's defaults, ECN marking on, no CE threshold.
CoDelParams codel_params(const QueueArgs& args, std::string_view name, std::string_view option) {
  CoDelParams params{ms_or_default(args.target, kCoDelTargetMs, "target", name, option),
                     ms_or_default(args.interval, kCoDelIntervalMs, "interval", name, option)};
  params.ecn = args.ecn.value_or(true);
  if (args.ce_threshold) {
    params.ce_threshold_ms = ms_or_default(args.ce_threshold, 0, "ce_threshold", name, option);
    if (!params.ecn)
      throw UsageError(std::string(name) + ": ce_threshold marks packets CE, and ecn=0 forbids marking (in " +
                       std::string(option) + "-args): leave one of them out");
  }
  return params;
}

// Parameters given to the infinite queue: the user meant a queue that takes them.
[[noreturn]] void refuse_infinite_args(const QueueArgs& args, std::string_view option) {
  const bool dualpi2 = args.tupdate || args.alpha || args.beta || args.step_thresh || args.coupling_factor ||
                       args.min_qlen_step || args.c_protection || args.drop_overload;
  const char* meant = dualpi2                                      ? "dualpi2"
                      : (args.flows || args.ce_threshold)          ? "fq_codel"
                      : (args.qdelay_ref || args.max_burst)        ? "pie"
                      : (args.target || args.interval || args.ecn) ? "codel"
                                                                   : "droptail";
  throw UsageError(std::string(option) + "-args is given but the queue is infinite (" + std::string(option) +
                   "=infinite, the default), which takes no parameters: choose a queue, e.g. " + std::string(option) +
                   "=" + meant);
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
  check(args.ecn.has_value(), "ecn");
  check(args.ce_threshold.has_value(), "ce_threshold");
  check(args.flows.has_value(), "flows");
  check(args.tupdate.has_value(), "tupdate");
  check(args.alpha.has_value(), "alpha");
  check(args.beta.has_value(), "beta");
  check(args.step_thresh.has_value(), "step_thresh");
  check(args.min_qlen_step.has_value(), "min_qlen_step");
  check(args.coupling_factor.has_value(), "coupling_factor");
  check(args.c_protection.has_value(), "c_protection");
  check(args.drop_overload.has_value(), "drop_overload");
}

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
    // Whole numbers up to 2^40 (a terabyte; a trillion packets): a larger double would not
    // convert to an integer at all.
    auto integer = [&]() -> uint64_t {
      if (number != std::floor(number)) throw UsageError(where + ": " + std::string(name) + " must be a whole number");
      if (number > 0x1p40) throw UsageError(where + ": " + std::string(name) + " is too large (at most 2^40)");
      return static_cast<uint64_t>(number);
    };
    // A limit of 0 would be no limit at all (fuzz-queue found fq_codel taking packets=0 so).
    auto limit = [&]() -> uint64_t {
      const uint64_t n = integer();
      if (n == 0)
        throw UsageError(where + ": " + std::string(name) + " must be at least 1 (leave it out for the default)");
      return n;
    };
    if (name == "bytes")
      args.bytes = limit();
    else if (name == "packets")
      args.packets = limit();
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
    else if (name == "ecn") {
      if (number != 0 && number != 1)
        throw UsageError(where + ": ecn must be 1 (mark ECN-capable packets CE instead of dropping them, the " +
                         "default) or 0 (drop only)");
      args.ecn = number == 1;
    } else if (name == "ce_threshold")
      args.ce_threshold = number;
    else if (name == "tupdate")
      args.tupdate = number;
    else if (name == "alpha")
      args.alpha = number;
    else if (name == "beta")
      args.beta = number;
    else if (name == "step_thresh")
      args.step_thresh = number;
    else if (name == "coupling_factor")
      args.coupling_factor = number;
    else if (name == "min_qlen_step")
      args.min_qlen_step = integer();
    else if (name == "c_protection") {
      args.c_protection = integer();
      if (*args.c_protection > 100)
        throw UsageError(where + ": c_protection is the classic queue's weight in %, from 0 to 100");
    } else if (name == "drop_overload") {
      if (number != 0 && number != 1)
        throw UsageError(where + ": drop_overload must be 1 (drop L4S packets as classic ones on overload, the " +
                         "default) or 0 (mark them)");
      args.drop_overload = number == 1;
    } else
      throw UsageError(where + ": unknown parameter \"" + std::string(name) +
                       "\" (known: bytes, packets, target, interval, qdelay_ref, max_burst, ecn, ce_threshold, " +
                       "flows, tupdate, alpha, beta, step_thresh, min_qlen_step, coupling_factor, c_protection, " +
                       "drop_overload)");
  }
  return args;
}

std::unique_ptr<QueueDiscipline> make_queue_discipline(std::string_view name, const QueueArgs& args,
                                                       std::string_view option, uint64_t seed) {
  if (name == "infinite") {
    if (!args.empty()) refuse_infinite_args(args, option);
    return std::make_unique<InfiniteQueue>();
  }
  if (name == "droptail" || name == "drophead") {
    allow_only(args, {"bytes", "packets"}, name, option);
    const QueueLimits limits = required_limits(args, name, option);
    if (name == "droptail") return std::make_unique<DropTailQueue>(limits);
    return std::make_unique<DropHeadQueue>(limits);
  }
  if (name == "codel") {
    // RFC 8289's target (5 ms) and interval (100 ms); Linux's codel limit (1000 packets).
    allow_only(args, {"bytes", "packets", "target", "interval", "ecn", "ce_threshold"}, name, option);
    return std::make_unique<CoDelQueue>(limits_or_default(args, kAqmDefaultPackets), codel_params(args, name, option));
  }
  if (name == "pie") {
    // RFC 8033's QDELAY_REF (15 ms) and MAX_BURST (150 ms); Linux's pie limit (1000 packets).
    allow_only(args, {"bytes", "packets", "qdelay_ref", "max_burst", "ecn"}, name, option);
    return std::make_unique<PieQueue>(limits_or_default(args, kAqmDefaultPackets),
                                      ms_or_default(args.qdelay_ref, kPieQdelayRefMs, "qdelay_ref", name, option),
                                      ms_or_default(args.max_burst, kPieMaxBurstMs, "max_burst", name, option),
                                      args.ecn.value_or(true), seed);
  }
  if (name == "fq_codel") {
    // Defaults as Linux's fq_codel: 10240 packets, target 5 ms, interval 100 ms, 1024 flows.
    allow_only(args, {"bytes", "packets", "target", "interval", "ecn", "ce_threshold", "flows"}, name, option);
    const uint64_t flows = args.flows.value_or(1024);
    if (flows == 0 || flows > 65536) throw UsageError("fq_codel: flows must be between 1 and 65536");
    return std::make_unique<FqCoDelQueue>(limits_or_default(args, 10240), codel_params(args, name, option),
                                          static_cast<uint32_t>(flows));
  }
  if (name == "dualpi2") {
    // Linux's sch_dualpi2 defaults (DualPi2Params).
    allow_only(args,
               {"bytes", "packets", "target", "tupdate", "alpha", "beta", "step_thresh", "min_qlen_step",
                "coupling_factor", "c_protection", "drop_overload"},
               name, option);
    DualPi2Params p;
    p.limits = limits_or_default(args, 10000);
    p.target_ms = ms_or_default(args.target, p.target_ms, "target", name, option);
    p.tupdate_ms = ms_or_default(args.tupdate, p.tupdate_ms, "tupdate", name, option);
    p.step_thresh_ms = ms_or_default(args.step_thresh, p.step_thresh_ms, "step_thresh", name, option);
    // Gains beyond a MHz would make p' jump from 0 to 1 within a microsecond of delay.
    for (auto [value, parameter] : {std::pair{args.alpha, "alpha"}, std::pair{args.beta, "beta"}}) {
      if (value && *value > 1e6)
        throw UsageError("dualpi2: " + std::string(parameter) + " must be at most 1000000 Hz (in " +
                         std::string(option) + "-args)");
    }
    p.alpha = args.alpha.value_or(p.alpha);
    p.beta = args.beta.value_or(p.beta);
    if (args.coupling_factor && (*args.coupling_factor <= 0 || *args.coupling_factor > 1000))
      throw UsageError("dualpi2: coupling_factor must be more than 0 and at most 1000 (in " + std::string(option) +
                       "-args; Linux's default, 2, gives window fairness at equal round trips)");
    p.coupling_factor = args.coupling_factor.value_or(p.coupling_factor);
    p.min_qlen_step = args.min_qlen_step.value_or(p.min_qlen_step);
    p.c_protection = static_cast<uint32_t>(args.c_protection.value_or(p.c_protection));
    p.drop_overload = args.drop_overload.value_or(p.drop_overload);
    return std::make_unique<DualPi2Queue>(p, seed);
  }
  throw UsageError("unknown queue \"" + std::string(name) + "\" for " + std::string(option) +
                   " (known: infinite, droptail, drophead, codel, pie, fq_codel, dualpi2)");
}

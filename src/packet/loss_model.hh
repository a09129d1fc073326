// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// mm-loss's models of which packets are lost, with netem's parameters and meanings
// (tc-netem(8), with its later fixes: the Bad state's loss is 1-h, not h, and the chain starts
// in the Good state):
//   Bernoulli        each packet lost with probability P, independently;
//   Gilbert-Elliott  (netem's "gemodel p r 1-h 1-k") a Good and a Bad state; a packet is lost
//                    with probability 1-k in Good and 1-h in Bad, then the chain moves
//                    Good -> Bad with probability p and Bad -> Good with r. Bad lasts 1/r
//                    packets on average, which in the simple Gilbert case (1-h = 1, 1-k = 0)
//                    is the mean length of a burst of losses; the loss rate is
//                    (r (1-k) + p (1-h)) / (p + r);
//   four states      (netem's "state p13 p31 p32 p23 p14", Salsano et al.'s GI model) 1: a
//                    packet received in a gap, 2: received within a burst, 3: lost within a
//                    burst, 4: an isolated loss; each packet moves the chain (1 -> 3 with p13,
//                    1 -> 4 with p14, 2 -> 3 with p23, 3 -> 1 with p31, 3 -> 2 with p32, 4 -> 1
//                    always, else it stays) and is lost if it lands in 3 or 4;
//   trace            (mm-loss's "trace FILE") a loss probability that varies over time, as
//                    mm-delay's delay traces (packet/delay_trace.hh): "TIME-MS PROBABILITY"
//                    per line, or one probability per line at an interval; each packet is lost
//                    independently with the probability of the moment it arrives.
// Omitted trailing parameters take netem's defaults: gemodel r = 1-p, 1-h = 1, 1-k = 0 (one
// parameter: Bernoulli; two: simple Gilbert); state p31 = 1-p13, p32 = 0, p23 = 1, p14 = 0.
// Every decision takes one or two draws of the shell's seeded generator: a seed repeats a run.
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "packet/delay_trace.hh"
#include "util/random.hh"

struct LossModel {
  enum class Kind { kBernoulli, kGilbertElliott, kFourState, kTrace };
  Kind kind = Kind::kBernoulli;
  // Bernoulli: {P}; Gilbert-Elliott: {p, r, 1-h, 1-k}; four states: {p13, p31, p32, p23, p14}.
  std::array<double, 5> p{};
  std::string trace_file;  // a trace: its file (read by the ferry, with the user's rights)

  static LossModel bernoulli(double rate) { return {Kind::kBernoulli, {rate, 0, 0, 0, 0}, {}}; }
  // From the words after a direction: a probability ("0.01" or "1%"), or "gemodel" or "state"
  // and its 1 to 4 or 1 to 5 probabilities (netem's defaults for the rest), or "trace" and a
  // file. Throws UsageError
  // naming the problem (a probability beyond [0, 1], p13 + p14 > 1, p31 + p32 > 1).
  static LossModel parse(const std::vector<std::string>& words);
  // How many probabilities a model word takes at most (0: not a model word).
  static size_t parameters_of(std::string_view word);

  double loss_rate() const;      // in the long run (the chain's stationary distribution); 0 for traces
  std::string describe() const;  // "0.01", "gemodel 0.01 0.25 1 0", ...
};

// "0.01" or "1%" as 0.01; nullopt if it is neither a number nor a percentage.
std::optional<double> parse_loss_probability(std::string_view word);

// One direction's decisions, one per packet, on the hot path: no allocation.
class LossGate {
 public:
  LossGate(double rate, uint64_t seed) : LossGate(LossModel::bernoulli(rate), seed) {}
  LossGate(const LossModel& model, uint64_t seed) : model_(model), random_(seed) {}
  // A trace model's gate: its probabilities (in parts per 10^9) over time from `start`.
  LossGate(const LossModel& model, uint64_t seed, TimeSeries trace, Nanos start)
      : model_(model), random_(seed), trace_(std::move(trace)), start_(start) {}

  bool admit(Nanos now) {
    if (model_.kind == LossModel::Kind::kTrace)
      return !(random_.uniform() * 1e9 < static_cast<double>(trace_.at(now - start_)));
    return !lose();
  }
  bool lose() {
    const auto& p = model_.p;
    switch (model_.kind) {
      case LossModel::Kind::kBernoulli:
        return p[0] != 0 && random_.bernoulli(p[0]);
      case LossModel::Kind::kGilbertElliott: {
        const bool bad = state_ == 2;
        const bool lost = random_.bernoulli(bad ? p[2] : p[3]);
        if (random_.bernoulli(bad ? p[1] : p[0])) state_ = bad ? 1 : 2;
        return lost;
      }
      case LossModel::Kind::kFourState:
        return four_state_step();
      case LossModel::Kind::kTrace:
        break;  // admit() with the time
    }
    return false;
  }
  // Gilbert-Elliott: 1 Good, 2 Bad; four states: 1 to 4 as above. For tests and logs.
  int state() const { return state_; }

 private:
  bool four_state_step() {
    const auto& p = model_.p;  // p13, p31, p32, p23, p14
    const double u = random_.uniform();
    switch (state_) {
      case 1:
        state_ = u < p[4] ? 4 : u < p[4] + p[0] ? 3 : 1;
        break;
      case 2:
        state_ = u < p[3] ? 3 : 2;
        break;
      case 3:
        state_ = u < p[1] ? 1 : u < p[1] + p[2] ? 2 : 3;
        break;
      default:
        state_ = 1;
        break;
    }
    return state_ == 3 || state_ == 4;
  }

  LossModel model_;
  Random random_;
  int state_ = 1;
  TimeSeries trace_;
  Nanos start_ = 0;
};

// SPDX-License-Identifier: GPL-3.0-or-later
#include "packet/loss_model.hh"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "util/exception.hh"

std::optional<double> parse_loss_probability(std::string_view word) {
  bool percent = false;
  if (!word.empty() && word.back() == '%') {
    percent = true;
    word.remove_suffix(1);
  }
  double value = 0;
  const auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (word.empty() || error != std::errc() || end != word.data() + word.size() || !std::isfinite(value))
    return std::nullopt;
  return percent ? value / 100 : value;
}

size_t LossModel::parameters_of(std::string_view word) {
  if (word == "gemodel") return 4;
  if (word == "state") return 5;
  if (word == "trace") return 1;
  return 0;
}

LossModel LossModel::parse(const std::vector<std::string>& words) {
  if (words.empty()) throw UsageError("missing loss rate");
  if (words[0] == "trace") {
    if (words.size() != 2 || words[1].empty()) throw UsageError("trace takes one FILE (a loss trace)");
    LossModel m;
    m.kind = Kind::kTrace;
    m.trace_file = words[1];
    return m;
  }
  const size_t most = parameters_of(words[0]);
  const bool bernoulli = most == 0;
  const size_t given = bernoulli ? 1 : words.size() - 1;
  if (bernoulli && words.size() != 1)
    throw UsageError("a loss rate is one number, not " + std::to_string(words.size()));
  if (!bernoulli && given == 0)
    throw UsageError(words[0] + " needs its probabilities (" +
                     (words[0] == "gemodel" ? "p [r [1-h [1-k]]]" : "p13 [p31 [p32 [p23 [p14]]]]") + ")");
  if (given > (bernoulli ? 1 : most))
    throw UsageError(words[0] + " takes at most " + std::to_string(most) + " probabilities, not " +
                     std::to_string(given));
  static const char* const kNames[3][5] = {{"loss rate"},
                                           {"gemodel p", "gemodel r", "gemodel 1-h", "gemodel 1-k"},
                                           {"state p13", "state p31", "state p32", "state p23", "state p14"}};
  LossModel m;
  m.kind = bernoulli ? Kind::kBernoulli : words[0] == "gemodel" ? Kind::kGilbertElliott : Kind::kFourState;
  const auto& names = kNames[static_cast<int>(m.kind)];
  for (size_t i = 0; i < given; i++) {
    const std::string& word = words[bernoulli ? 0 : i + 1];
    const auto value = parse_loss_probability(word);
    if (!value || *value < 0 || *value > 1)
      throw UsageError(std::string(names[i]) + " must be a probability between 0 and 1 (or 0% to 100%), not \"" + word +
                       "\"");
    m.p[i] = *value;
  }
  if (m.kind == Kind::kGilbertElliott) {
    if (given < 2) m.p[1] = 1 - m.p[0];
    if (given < 3) m.p[2] = 1;
    if (given < 4) m.p[3] = 0;
  } else if (m.kind == Kind::kFourState) {
    if (given < 2) m.p[1] = 1 - m.p[0];
    if (given < 3) m.p[2] = 0;
    if (given < 4) m.p[3] = 1;
    if (given < 5) m.p[4] = 0;
    if (m.p[0] + m.p[4] > 1 + 1e-12)
      throw UsageError("state p13 + p14 must be at most 1 (both leave state 1), not " + m.describe());
    if (m.p[1] + m.p[2] > 1 + 1e-12)
      throw UsageError("state p31 + p32 must be at most 1 (both leave state 3), not " + m.describe());
  }
  return m;
}

double LossModel::loss_rate() const {
  switch (kind) {
    case Kind::kBernoulli:
      return p[0];
    case Kind::kTrace:
      return 0;  // the trace's own
    case Kind::kGilbertElliott: {
      // Stationary: Bad with probability p / (p + r); a chain that never moves stays Good.
      const double moves = p[0] + p[1];
      const double bad = moves == 0 ? 0 : p[0] / moves;
      return (1 - bad) * p[3] + bad * p[2];
    }
    case Kind::kFourState: {
      // Balance equations with pi1 = 1: pi4 = p14; pi2 p23 = pi3 p32; pi3 (p31 + p32) = p13 + pi2 p23,
      // so pi3 p31 = p13. A state never left absorbs everything.
      const double p13 = p[0], p31 = p[1], p32 = p[2], p23 = p[3], p14 = p[4];
      if (p13 == 0) return p14 / (1 + p14);  // 2 and 3 are never reached: isolated losses (or none)
      if (p31 == 0) {                        // 3 never returns to 1: the chain ends between 2 and 3
        if (p32 == 0) return 1;              // 3 keeps it
        if (p23 == 0) return 0;              // 2 keeps it
        return p23 / (p23 + p32);
      }
      if (p23 == 0 && p32 > 0) return 0;  // it ends in 2, which never loses
      const double pi3 = p13 / p31, pi2 = p23 == 0 ? 0 : pi3 * p32 / p23;
      return (pi3 + p14) / (1 + pi2 + pi3 + p14);
    }
  }
  return 0;
}

std::string LossModel::describe() const {
  auto number = [](double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", v);
    return std::string(text);
  };
  switch (kind) {
    case Kind::kBernoulli:
      return number(p[0]);
    case Kind::kGilbertElliott:
      return "gemodel " + number(p[0]) + " " + number(p[1]) + " " + number(p[2]) + " " + number(p[3]);
    case Kind::kTrace:
      return "trace " + trace_file;
    case Kind::kFourState:
      return "state " + number(p[0]) + " " + number(p[1]) + " " + number(p[2]) + " " + number(p[3]) + " " +
             number(p[4]);
  }
  return {};
}

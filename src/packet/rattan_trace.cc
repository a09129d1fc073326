// SPDX-License-Identifier: GPL-3.0-or-later
// Rattan's netem-trace configurations as the shells' files (see rattan_trace.hh). TOML is read
// with toml++ into the tree JSON gives (nlohmann::json), so that one walk reads both.
#include "packet/rattan_trace.hh"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "packet/delay_trace.hh"
#include "packet/trace_convert.hh"
#include "util/exception.hh"

namespace {
using Json = nlohmann::json;

// A TOML document as the JSON tree of the same configuration.
Json json_of(const toml::node& node) {
  if (const toml::table* t = node.as_table()) {
    Json object = Json::object();
    for (const auto& [key, value] : *t) object[std::string(key.str())] = json_of(value);
    return object;
  }
  if (const toml::array* a = node.as_array()) {
    Json array = Json::array();
    for (const toml::node& value : *a) array.push_back(json_of(value));
    return array;
  }
  if (const auto* s = node.as_string()) return Json(s->get());
  if (const auto* i = node.as_integer()) return Json(i->get());
  if (const auto* f = node.as_floating_point()) return Json(f->get());
  if (const auto* b = node.as_boolean()) return Json(b->get());
  return Json("a TOML date or time");  // not in these configurations: refused where it is read
}

// A whole number from 0 (TOML's integers are signed, JSON's may be read unsigned).
bool is_whole(const Json& v) { return v.is_number_integer() && v >= 0; }

// One value over a stretch of time.
struct Step {
  double ms;     // how long
  double value;  // delay in ms, loss probability, or bit/s
};

class Reader {
 public:
  Reader(std::string source, uint64_t max_steps) : source_(std::move(source)), max_steps_(max_steps) {}

  // The whole configuration: its steps, and whether it repeats forever.
  void read(const Json& root) {
    const auto [name, body] = only_member(root, "the configuration");
    kind_ = kind_of(name);
    walk(name, body, "");
    if (steps_.empty()) throw UserError(source_ + ": the configuration has no steps");
  }

  RattanTrace::Kind kind() const { return kind_; }
  const std::vector<Step>& steps() const { return steps_; }
  bool repeats() const { return repeats_; }
  bool ends_held() const { return held_; }
  double total_ms() const { return total_ms_; }
  // A two-value loss pattern [p0, p1] (the configuration's only one): a Gilbert model.
  const std::vector<double>& conditional_loss() const { return conditional_; }

 private:
  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw UserError(source_ + ": " + (where.empty() ? "" : where + ": ") + what);
  }

  std::pair<std::string, const Json&> only_member(const Json& node, const std::string& where) const {
    if (!node.is_object() || node.size() != 1)
      fail(where,
           "expected one model, e.g. {\"RepeatedDelayPatternConfig\": {...}}, as Rattan's netem-trace configurations "
           "have");
    return {node.begin().key(), node.begin().value()};
  }

  RattanTrace::Kind kind_of(const std::string& name) const {
    auto has = [&](const char* part) { return name.find(part) != std::string::npos; };
    if (has("PerPacket"))
      fail("", name +
                   " gives each packet its own delay (drawn as Rattan runs), not a delay over time: mm-delay "
                   "--jitter=MS draws one for each packet (normal, uniform or paretonormal)");
    if (has("Normalized") || has("Sawtooth"))
      fail("", name +
                   " is a random model, drawn by Rattan as it runs: mm-trace reads traces whose values are "
                   "written in the file (Static, Repeated*Pattern, TraceBw)");
    if (has("Duplicate"))
      fail("", name + ": mm-delay --duplicate=P takes a constant probability; a duplication trace has no shell");
    if (has("Delay")) return RattanTrace::Kind::kDelay;
    if (has("Loss")) return RattanTrace::Kind::kLoss;
    if (has("Bw")) return RattanTrace::Kind::kBandwidth;
    fail("", "\"" + name + "\" is not one of netem-trace's delay, loss or bandwidth models");
  }

  // Adds the steps of the model `name` (whose body is `body`) at `where` (a path for messages).
  void walk(const std::string& name, const Json& body, const std::string& where) {
    const std::string here = where.empty() ? name : where + "." + name;
    if (!body.is_object()) fail(here, "expected an object of the model's fields");
    if (kind_of(name) != kind_) fail(here, "a model of another kind than the configuration's");
    if (forever_) fail(here, "comes after a pattern that repeats forever (count 0), so it is never reached");
    if (name == "StaticDelayConfig" || name == "StaticLossConfig" || name == "StaticBwConfig") {
      const char* field = kind_ == RattanTrace::Kind::kDelay  ? "delay"
                          : kind_ == RattanTrace::Kind::kLoss ? "loss"
                                                              : "bw";
      const double value = body.contains(field) ? value_of(body[field], here + "." + field) : 0;
      if (!body.contains("duration") || body["duration"].is_null()) {
        // No duration: the value holds for good (after this, nothing is reached).
        add(1000, value, here);
        held_ = forever_ = true;
        return;
      }
      add(duration_ms(body["duration"], here + ".duration"), value, here);
      return;
    }
    if (name == "TraceBwConfig") {
      const Json& pattern = field(body, "pattern", here);
      if (!pattern.is_array()) fail(here + ".pattern", "expected a list of [duration, [bandwidth, ...]]");
      for (size_t i = 0; i < pattern.size(); i++) {
        const std::string at = here + ".pattern[" + std::to_string(i) + "]";
        const Json& entry = pattern[i];
        if (!entry.is_array() || entry.size() != 2 || !entry[1].is_array())
          fail(at, "expected [duration, [bandwidth, ...]]");
        const double ms = duration_ms(entry[0], at);
        for (size_t k = 0; k < entry[1].size(); k++)
          add(ms, bandwidth(entry[1][k], at + "[" + std::to_string(k) + "]"), at);
      }
      return;
    }
    if (name.starts_with("Repeated") && name.ends_with("PatternConfig")) {
      const Json& pattern = field(body, "pattern", here);
      if (!pattern.is_array() || pattern.empty()) fail(here + ".pattern", "expected a list of models");
      const Json* count_node = body.contains("count") ? &body["count"] : nullptr;
      if (count_node && !is_whole(*count_node))
        fail(here + ".count", "expected a whole number of repetitions (0: forever)");
      const uint64_t count = count_node ? count_node->get<uint64_t>() : 0;
      if (count == 0 && !steps_.empty())
        fail(here, "repeats forever (count 0) after " + std::to_string(steps_.size()) +
                       " steps: the shells' traces repeat from their start, so write the steps before it and the "
                       "repeating pattern as two files");
      const size_t first = steps_.size();
      for (size_t i = 0; i < pattern.size(); i++) {
        const auto [inner, inner_body] = only_member(pattern[i], here + ".pattern[" + std::to_string(i) + "]");
        walk(inner, inner_body, here + ".pattern[" + std::to_string(i) + "]");
      }
      if (count == 0) {  // forever: the steps so far are the period
        if (held_) fail(here, "a pattern that repeats forever holds a step with no duration: it never repeats");
        repeats_ = forever_ = true;
        return;
      }
      const size_t one = steps_.size() - first;
      if (one > 0 && (count - 1) > (max_steps_ - steps_.size()) / one)
        fail(here,
             "expands to more than " + std::to_string(max_steps_) + " steps (count " + std::to_string(count) + ")");
      if (held_ && count > 1) fail(here, "repeats a step that has no duration (it holds for good)");
      for (uint64_t c = 1; c < count; c++)
        for (size_t i = first; i < first + one; i++) add(steps_[i].ms, steps_[i].value, here);
      return;
    }
    fail(here, "is not a model mm-trace reads (Static*Config, TraceBwConfig, Repeated*PatternConfig)");
  }

  const Json& field(const Json& body, const char* name, const std::string& where) const {
    if (!body.contains(name)) fail(where, std::string("has no \"") + name + "\"");
    return body[name];
  }

  void add(double ms, double value, const std::string& where) {
    if (!(ms >= 0)) fail(where, "a negative duration");
    if (ms == 0) return;  // a step that lasts no time is never seen
    if (steps_.size() >= max_steps_) fail(where, "more than " + std::to_string(max_steps_) + " steps");
    total_ms_ += ms;
    if (total_ms_ > static_cast<double>(Trace::kMaxMs))
      fail(where, "the trace would last more than " + std::to_string(Trace::kMaxMs) + " ms (24.8 days)");
    steps_.push_back({ms, value});
  }

  double value_of(const Json& node, const std::string& where) {
    switch (kind_) {
      case RattanTrace::Kind::kDelay: {
        const double ms = duration_ms(node, where);
        if (ms > kMaxDelayTraceMs) fail(where, "a delay of more than an hour");
        return ms;
      }
      case RattanTrace::Kind::kLoss:
        return loss(node, where);
      case RattanTrace::Kind::kBandwidth:
        return bandwidth(node, where);
    }
    return 0;
  }

  // [p0, p1, ...]: p_i is the loss probability after i losses in a row, the last repeating.
  double loss(const Json& node, const std::string& where) {
    if (!node.is_array()) fail(where, "expected a list of probabilities, e.g. [0.01]");
    std::vector<double> p;
    for (const Json& v : node) {
      if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= 1))
        fail(where, "\"" + v.dump() + "\" is not a probability from 0 to 1");
      p.push_back(v.get<double>());
    }
    while (p.size() > 1 && p.back() == p[p.size() - 2]) p.pop_back();  // [0.1, 0.1] is [0.1]
    if (p.size() > 1) {
      conditional_ = p;
      char text[200];
      std::snprintf(text, sizeof text, "%g", p.size() == 2 ? 1 - p[1] : 0.0);
      fail(where, "a loss that depends on the losses before it (" + node.dump() + ") has no loss trace" +
                      (p.size() == 2 ? ": held constant, it is a Gilbert model, mm-loss uplink gemodel " +
                                           Json(p[0]).dump() + " " + text
                                     : ": mm-loss's trace gives one probability at a time"));
    }
    return p.empty() ? 0 : p[0];
  }

  // humantime ("1s", "100ms", "1h 30m", "2.5s") or {secs, nanos}, in ms.
  double duration_ms(const Json& node, const std::string& where) const {
    if (node.is_object()) {
      if (!node.contains("secs") || !is_whole(node["secs"]))
        fail(where, "expected {\"secs\": S, \"nanos\": N} or a text such as \"10ms\"");
      const double nanos = node.contains("nanos") && is_whole(node["nanos"]) ? node["nanos"].get<double>() : 0;
      return node["secs"].get<double>() * 1000 + nanos / 1e6;
    }
    if (!node.is_string()) fail(where, "expected a duration such as \"10ms\" or \"1s\"");
    return units(
        node.get<std::string>(), where,
        {{"ns", 1e-6},     {"nsec", 1e-6},  {"us", 1e-3},     {"\xc2\xb5s", 1e-3}, {"usec", 1e-3},   {"ms", 1},
         {"msec", 1},      {"s", 1e3},      {"sec", 1e3},     {"second", 1e3},     {"seconds", 1e3}, {"m", 6e4},
         {"min", 6e4},     {"minute", 6e4}, {"minutes", 6e4}, {"h", 3.6e6},        {"hr", 3.6e6},    {"hour", 3.6e6},
         {"hours", 3.6e6}, {"d", 8.64e7},   {"day", 8.64e7},  {"days", 8.64e7}},
        "a duration such as \"10ms\", \"1s\" or \"1h 30m\"");
  }

  // "12Mbps", "500kbps", "1Gbps 200Mbps" or {gbps, bps}, in bit/s.
  double bandwidth(const Json& node, const std::string& where) const {
    double bps = 0;
    if (node.is_object()) {
      for (const char* part : {"gbps", "bps"}) {
        if (node.contains(part) && !is_whole(node[part]))
          fail(where, std::string("\"") + part + "\" is not a whole number");
      }
      bps = (node.contains("gbps") ? node["gbps"].get<double>() * 1e9 : 0) +
            (node.contains("bps") ? node["bps"].get<double>() : 0);
    } else if (node.is_string()) {
      bps = units(node.get<std::string>(), where,
                  {{"bps", 1}, {"kbps", 1e3}, {"Kbps", 1e3}, {"Mbps", 1e6}, {"Gbps", 1e9}, {"Tbps", 1e12}},
                  "a bandwidth such as \"12Mbps\" or \"500kbps\"");
    } else {
      fail(where, "expected a bandwidth such as \"12Mbps\" or {\"gbps\": 0, \"bps\": 12000000}");
    }
    if (bps > 1e12) fail(where, "more than 1 Tbit/s");
    return bps;
  }

  // A sum of NUMBER UNIT terms ("1h 30m", "1s500ms"), with the units' factors.
  double units(const std::string& text, const std::string& where,
               std::initializer_list<std::pair<std::string_view, double>> table, const char* expected) const {
    double total = 0;
    size_t i = 0, terms = 0;
    auto bad = [&] { fail(where, "\"" + text + "\" is not " + expected); };
    while (i < text.size()) {
      if (text[i] == ' ') {
        i++;
        continue;
      }
      size_t start = i;
      while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) i++;
      if (i == start) bad();
      double number = 0;
      try {
        number = std::stod(text.substr(start, i - start));
      } catch (const std::exception&) {
        bad();
      }
      size_t unit_start = i;
      while (i < text.size() && text[i] != ' ' && !std::isdigit(static_cast<unsigned char>(text[i]))) i++;
      const std::string_view unit(text.data() + unit_start, i - unit_start);
      double factor = -1;
      for (const auto& [name, f] : table) {
        if (unit == name) factor = f;
      }
      if (factor < 0 || !std::isfinite(number)) bad();
      total += number * factor;
      terms++;
    }
    if (terms == 0) bad();
    return total;
  }

  std::string source_;
  uint64_t max_steps_;
  RattanTrace::Kind kind_ = RattanTrace::Kind::kDelay;
  std::vector<Step> steps_;
  std::vector<double> conditional_;
  double total_ms_ = 0;
  bool repeats_ = false;  // the top pattern repeats forever
  bool forever_ = false;  // nothing after the steps so far is reached
  bool held_ = false;     // the last step holds for good
};

Json parse(std::string_view text, bool toml, const std::string& source) {
  if (toml) {
    try {
      const toml::table table = toml::parse(text, std::string_view(source));
      return json_of(table);
    } catch (const toml::parse_error& e) {
      throw UserError(source + ":" + std::to_string(e.source().begin.line) +
                      ": not TOML: " + std::string(e.description()));
    }
  }
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {  // a syntax error, or a number beyond a double (406)
    throw UserError(source + ": not JSON (" + e.what() + ")");
  }
}
}  // namespace

RattanTrace convert_rattan_trace(std::string_view text, bool toml, const std::string& source,
                                 uint64_t max_opportunities, uint64_t max_steps) {
  if (text.size() > kMaxRattanFileBytes)
    throw UserError(source + ": more than " + std::to_string(kMaxRattanFileBytes >> 20) +
                    " MiB, larger than any trace configuration");
  Reader reader(source, std::min(max_steps, kMaxRattanSteps));
  reader.read(parse(text, toml, source));
  RattanTrace out;
  out.kind = reader.kind();
  out.repeats = reader.repeats();
  out.period_ms = reader.total_ms();
  out.steps = reader.steps().size();
  const std::vector<Step>& steps = reader.steps();
  if (out.kind == RattanTrace::Kind::kBandwidth) {
    std::vector<std::pair<double, double>> rates;
    double t = 0;
    for (const Step& s : steps) {
      rates.emplace_back(t, s.value);
      t += s.ms;
    }
    out.text = trace_of_rate_steps(rates, t, source, max_opportunities);
    return out;
  }
  // "TIME-MS VALUE" from 0, each value holding until the next line; the last line closes the
  // period with the last value (what a --once trace then holds).
  out.text = std::string("# ") +
             (out.kind == RattanTrace::Kind::kDelay ? "time-ms delay-ms" : "time-ms loss-probability") +
             " (mm-trace rattan " + source + ")\n";
  out.text.reserve(out.text.size() + steps.size() * 20);
  char line[80];
  double t = 0;
  for (const Step& s : steps) {
    std::snprintf(line, sizeof line, "%.10g %.10g\n", t, s.value);
    out.text += line;
    t += s.ms;
  }
  std::snprintf(line, sizeof line, "%.10g %.10g\n", t, steps.back().value);
  out.text += line;
  return out;
}

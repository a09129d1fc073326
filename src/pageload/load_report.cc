// SPDX-License-Identifier: GPL-3.0-or-later
// A load's results as CSV rows, JSON objects and a summary (see load_report.hh).
#include "pageload/load_report.hh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "util/csv.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/text.hh"
#include "util/time_text.hh"

using nlohmann::json;

namespace {
// Runs are numbered 1..--runs, and mm-pageload's --runs is at most 10000.
constexpr int kMaxRun = 10000;

// The metrics in column order, with their names (CSV columns and JSON keys) and the decimals the
// CSV keeps: times to the microsecond, counts whole.
struct Metric {
  const char* name;
  std::optional<double> LoadResult::*field;
  int decimals;
};
constexpr Metric kMetrics[] = {
    {"plt_ms", &LoadResult::plt_ms, 3},   {"fcp_ms", &LoadResult::fcp_ms, 3},
    {"lcp_ms", &LoadResult::lcp_ms, 3},   {"speed_index_ms", &LoadResult::speed_index_ms, 3},
    {"bytes", &LoadResult::bytes, 0},     {"requests", &LoadResult::requests, 0},
    {"origins", &LoadResult::origins, 0}, {"frames", &LoadResult::frames, 0},
};

bool present(const std::optional<double>& value) { return value && std::isfinite(*value); }

std::string protocols_text(const std::map<std::string, std::string>& protocols) {
  std::string text;
  for (const auto& [origin, protocol] : protocols) text += (text.empty() ? "" : " ") + origin + "=" + protocol;
  return text;
}

std::optional<LoadResult::Status> status_from_name(const std::string& name) {
  for (auto status : {LoadResult::Status::Ok, LoadResult::Status::Timeout, LoadResult::Status::Error})
    if (status_name(status) == name) return status;
  return std::nullopt;
}

// Thrown by the parser's callback when the JSON nests deeper than loads do (array, load,
// protocols), so that no input can make the parsed tree absurdly deep.
struct TooDeep {};

std::string read_bounded(std::istream& in, const std::string& name, size_t max_bytes) {
  std::string text;
  char buffer[65536];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (text.size() > max_bytes)
      throw UserError(name + ": larger than " + format_size(max_bytes) +
                      " (the limit of a file of loads); is it a file mm-pageload --json wrote?");
  }
  if (in.bad()) throw UserError(name + ": cannot be read");
  return text;
}

const json* member(const json& object, const char* key) {
  const auto found = object.find(key);
  return found == object.end() ? nullptr : &*found;
}

std::string string_member(const json& object, const char* key, const std::string& where, bool required) {
  const json* value = member(object, key);
  if (!value) {
    if (required) throw UserError(where + " has no \"" + key + "\"");
    return "";
  }
  if (!value->is_string()) throw UserError(where + ": \"" + key + "\" is " + value->dump() + ", not a string");
  return value->get<std::string>();
}

LoadResult load_from_json(const json& object, const std::string& where) {
  if (!object.is_object()) throw UserError(where + " is not a JSON object");
  LoadResult load;
  load.url = string_member(object, "url", where, true);
  if (load.url.empty()) throw UserError(where + ": \"url\" is empty");

  const json* run = member(object, "run");
  if (!run || !run->is_number_integer() || run->get<int64_t>() < 1 || run->get<int64_t>() > kMaxRun)
    throw UserError(where + ": \"run\" is " + (run ? run->dump() : "missing") + ", not a run number from 1 to " +
                    std::to_string(kMaxRun));
  load.run = static_cast<int>(run->get<int64_t>());

  const std::string status = string_member(object, "status", where, true);
  const auto parsed_status = status_from_name(status);
  if (!parsed_status)
    throw UserError(where + ": \"status\" is \"" + printable(status, 40) + "\", not ok, timeout or error");
  load.status = *parsed_status;
  load.reason = string_member(object, "reason", where, false);
  load.started = string_member(object, "started", where, false);
  if (!load.started.empty() && !us_from_iso8601(load.started))
    throw UserError(where + ": \"started\" is \"" + printable(load.started, 40) +
                    "\", not an ISO 8601 time such as 2026-11-23T09:41:07.123Z");

  for (const Metric& metric : kMetrics) {
    const json* value = member(object, metric.name);
    if (!value || value->is_null()) continue;  // the load did not get that far
    if (!value->is_number() || !std::isfinite(value->get<double>()) || value->get<double>() < 0)
      throw UserError(where + ": \"" + metric.name + "\" is " + value->dump() + ", not a number >= 0 or null");
    load.*metric.field = value->get<double>();
  }

  if (const json* protocols = member(object, "protocols"); protocols && !protocols->is_null()) {
    if (!protocols->is_object())
      throw UserError(where + ": \"protocols\" is not an object of origin: protocol (\"h1\", \"h2\", \"h3\")");
    for (const auto& [origin, protocol] : protocols->items()) {
      if (!protocol.is_string())
        throw UserError(where + ": the protocol of " + printable(origin, 80) + " is " + protocol.dump() +
                        ", not a string");
      load.protocols[origin] = protocol.get<std::string>();
    }
  }
  if (const json* host = member(object, "host"); host && host->is_object()) load.host = host->get<HostFacts>();
  return load;
}

std::string number_text(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}
}  // namespace

std::string status_name(LoadResult::Status status) {
  switch (status) {
    case LoadResult::Status::Ok:
      return "ok";
    case LoadResult::Status::Timeout:
      return "timeout";
    case LoadResult::Status::Error:
      return "error";
  }
  return "error";
}

std::string load_csv_header(const std::vector<std::string>& extra_columns) {
  std::string line;
  for (const auto& column : extra_columns) line += csv_field(column) + ",";
  line += "url,run,status,reason,started";
  for (const Metric& metric : kMetrics) line += std::string(",") + metric.name;
  return line + ",protocols\n";
}

std::string load_csv_row(const LoadResult& load, const std::vector<std::string>& extra_values) {
  std::string line;
  for (const auto& value : extra_values) line += csv_field(value) + ",";
  line += csv_field(load.url) + "," + std::to_string(load.run) + "," + status_name(load.status) + "," +
          csv_field(load.reason) + "," + csv_field(load.started);
  for (const Metric& metric : kMetrics) {
    const auto& value = load.*metric.field;
    line += "," + (present(value) ? csv_number(*value, metric.decimals) : std::string());
  }
  return line + "," + csv_field(protocols_text(load.protocols)) + "\n";
}

void write_load_json(const std::vector<LoadResult>& loads, std::ostream& out) {
  // One load per line, so that the file reads and diffs well.
  out << "[";
  for (size_t i = 0; i < loads.size(); ++i) {
    const LoadResult& load = loads[i];
    json object = {{"url", load.url},
                   {"run", load.run},
                   {"status", status_name(load.status)},
                   {"reason", load.reason},
                   {"started", load.started}};
    for (const Metric& metric : kMetrics) {
      const auto& value = load.*metric.field;
      object[metric.name] = present(value) ? json(*value) : json(nullptr);
    }
    object["protocols"] = json::object();
    for (const auto& [origin, protocol] : load.protocols) object["protocols"][origin] = protocol;
    if (load.host) object["host"] = *load.host;
    out << (i ? ",\n " : "\n ") << object.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  out << (loads.empty() ? "]\n" : "\n]\n");
}

std::vector<LoadResult> read_load_json(std::istream& in, const std::string& name, size_t max_bytes) {
  const std::string text = read_bounded(in, name, max_bytes);
  json parsed;
  try {
    parsed = json::parse(text, [](int depth, json::parse_event_t event, json&) {
      if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) && depth > 2)
        throw TooDeep{};
      return true;
    });
  } catch (const json::exception& e) {  // a syntax error, or a number beyond a double (406)
    throw UserError(name + ": not JSON (" + e.what() + "); mm-pageload --json writes an array of loads");
  } catch (const TooDeep&) {
    throw UserError(name + ": nested deeper than an array of loads; mm-pageload --json writes an array of loads");
  }
  if (!parsed.is_array())
    throw UserError(name + ": a JSON " + parsed.type_name() + ", not the array of loads mm-pageload --json writes");
  std::vector<LoadResult> loads;
  loads.reserve(parsed.size());
  for (size_t i = 0; i < parsed.size(); ++i)
    loads.push_back(load_from_json(parsed[i], name + ": load " + std::to_string(i + 1)));
  return loads;
}

void write_load_summary(const std::vector<LoadResult>& loads, std::ostream& out) {
  // URLs in the order of their first load.
  std::vector<std::string> urls;
  for (const auto& load : loads)
    if (std::find(urls.begin(), urls.end(), load.url) == urls.end()) urls.push_back(load.url);

  auto line = [&out](const std::string& label, const std::string& median, const std::string& p75,
                     const std::string& p95, const std::string& note) {
    char text[256];
    std::snprintf(text, sizeof text, "  %-18s%12s%12s%12s", label.c_str(), median.c_str(), p75.c_str(), p95.c_str());
    std::string row = text + (note.empty() ? "" : "  " + note);
    while (!row.empty() && row.back() == ' ') row.pop_back();
    out << row << "\n";
  };

  for (size_t u = 0; u < urls.size(); ++u) {
    std::vector<const LoadResult*> ok, not_ok;
    for (const auto& load : loads)
      if (load.url == urls[u]) (load.status == LoadResult::Status::Ok ? ok : not_ok).push_back(&load);
    if (u) out << "\n";
    out << printable(urls[u], 200) << ": " << ok.size() << " of " << ok.size() + not_ok.size() << " ok\n";
    if (!ok.empty()) {
      line("", "median", "p75", "p95", "");
      struct Row {
        const char* label;
        std::optional<double> LoadResult::*field;
        bool percentiles;  // times: median, p75, p95; counts: the median
      };
      static constexpr Row kRows[] = {
          {"PLT (ms)", &LoadResult::plt_ms, true},  {"FCP (ms)", &LoadResult::fcp_ms, true},
          {"LCP (ms)", &LoadResult::lcp_ms, true},  {"speed index (ms)", &LoadResult::speed_index_ms, true},
          {"bytes", &LoadResult::bytes, false},     {"requests", &LoadResult::requests, false},
          {"origins", &LoadResult::origins, false},
      };
      for (const Row& row : kRows) {
        std::vector<double> values;
        for (const LoadResult* load : ok)
          if (present(load->*row.field)) values.push_back(*(load->*row.field));
        const int decimals = row.percentiles ? 1 : 0;
        auto text = [&](double p) {
          const auto value = percentile(values, p);
          return value ? number_text(*value, decimals) : std::string("-");
        };
        // A metric some ok loads lack (no LCP candidate, no frames) is summarised over the others.
        const std::string note = values.size() == ok.size() ? "" : "(" + count_of(values.size(), "load") + ")";
        line(row.label, text(50), row.percentiles ? text(75) : "", row.percentiles ? text(95) : "", note);
      }
    }
    for (const LoadResult* load : not_ok)
      out << "  run " << load->run << ": " << status_name(load->status)
          << (load->reason.empty() ? "" : ": " + printable(load->reason, 300)) << "\n";
  }
}

// SPDX-License-Identifier: GPL-3.0-or-later
// A sweep's grid, configurations and command lines (see sweep_grid.hh).
#include "sweep/sweep_grid.hh"

#include <algorithm>
#include <cstdio>

#include "util/args.hh"
#include "util/exception.hh"
#include "util/text.hh"

namespace {
constexpr const char* kQueueTypes[] = {"infinite", "droptail", "drophead", "codel", "pie", "fq_codel", "dualpi2"};

std::string joined(const std::vector<double>& values) {
  std::string text;
  for (double v : values) text += (text.empty() ? "" : ",") + number_text(v);
  return text;
}

nlohmann::json configuration_json(const Configuration& c) {
  nlohmann::json j = {
      {"id", c.id()}, {"protocol", c.variant.protocol()}, {"servers", c.variant.servers()}, {"emulated", c.emulated}};
  if (c.emulated) {
    j["rate_mbps"] = c.rate_mbps;
    j["rtt_ms"] = c.rtt_ms;
    j["loss"] = c.loss;
  }
  return j;
}
const char* pageload_protocol_flag(Protocol p) {
  switch (p) {
    case Protocol::kH1:
      return "--no-http2";
    case Protocol::kH2:
      return "--http2";
    case Protocol::kH3:
      return "--http3";
    case Protocol::kCumulus:
      return "--no-http2";  // the Local Proxy speaks HTTP/1.1 to the browser
  }
  return "--no-http2";
}

// Sweeps of one protocol, h1 or h2, keep the manifest and command line they always had.
bool legacy_protocols(const std::vector<Protocol>& p) {
  return p.size() == 1 && (p[0] == Protocol::kH1 || p[0] == Protocol::kH2);
}

std::string protocol_list(const std::vector<Protocol>& protocols) {
  std::string text;
  for (Protocol p : protocols) text += (text.empty() ? "" : ",") + protocol_name(p);
  return text;
}
}  // namespace

std::string protocol_name(Protocol protocol) {
  switch (protocol) {
    case Protocol::kH1:
      return "h1";
    case Protocol::kH2:
      return "h2";
    case Protocol::kH3:
      return "h3";
    case Protocol::kCumulus:
      return "cumulus";
  }
  return "h1";
}

std::vector<Protocol> parse_protocol_list(std::string_view text) {
  std::vector<Protocol> protocols;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view word = text.substr(start, comma - start);
    Protocol p;
    if (word == "h1") {
      p = Protocol::kH1;
    } else if (word == "h2") {
      p = Protocol::kH2;
    } else if (word == "h3") {
      p = Protocol::kH3;
    } else if (word == "cumulus") {
      p = Protocol::kCumulus;
    } else {
      throw UsageError("--protocols \"" + std::string(text).substr(0, 100) +
                       "\": a comma-separated list of h1, h2, h3 and cumulus (e.g. --protocols h1,h2,h3,cumulus)");
    }
    if (std::find(protocols.begin(), protocols.end(), p) != protocols.end())
      throw UsageError("--protocols lists " + std::string(word) + " twice");
    protocols.push_back(p);
    start = comma + 1;
  }
  return protocols;
}

std::vector<Variant> SweepSettings::variants() const {
  std::vector<Variant> list;
  for (Protocol p : protocols) list.push_back(Variant{p, single_server});
  return list;
}

std::string number_text(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.10g", value);
  return text;
}

std::string Configuration::id() const {
  const std::string prefix = variant.protocol() + "-" + variant.servers() + "-";
  if (!emulated) return prefix + "unemulated";
  return prefix + number_text(rate_mbps) + "mbit-" + number_text(rtt_ms) + "ms-loss" + number_text(loss);
}

std::vector<double> parse_number_list(std::string_view text, std::string_view option, double min, double max) {
  const std::string opt(option);
  if (text.empty()) throw UsageError(opt + " needs a comma-separated list of numbers, e.g. " + opt + " 1,14,25");
  std::vector<double> values;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view word = text.substr(start, comma - start);
    if (word.empty())
      throw UsageError(opt + " has an empty value in \"" + std::string(text) + "\": separate numbers with one comma");
    const double value = parse_nonnegative(word, opt);
    if (value < min || value > max)
      throw UsageError(opt + " value " + std::string(word) + " is out of range (" + number_text(min) + " to " +
                       number_text(max) + ")");
    if (std::find(values.begin(), values.end(), value) != values.end())
      throw UsageError(opt + " lists " + std::string(word) + " twice");
    values.push_back(value);
    if (values.size() > kMaxListValues)
      throw UsageError(opt + " has more than " + std::to_string(kMaxListValues) + " values");
    start = comma + 1;
  }
  std::sort(values.begin(), values.end());
  return values;
}

std::string parse_queue_spec(std::string_view text) {
  if (text.size() > kMaxQueueSpec)
    throw UsageError("--queue is longer than " + std::to_string(kMaxQueueSpec) + " characters");
  const std::string_view type = text.substr(0, text.find(':'));
  if (std::find(std::begin(kQueueTypes), std::end(kQueueTypes), type) == std::end(kQueueTypes)) {
    throw UsageError(
        "--queue \"" + std::string(text) +
        "\": the queue type is one of infinite, droptail, drophead, codel, pie, fq_codel, dualpi2, optionally "
        "followed by :ARGS as mm-link's --uplink-queue-args take them (e.g. droptail:packets=100)");
  }
  if (type.size() < text.size()) {
    const std::string_view args = text.substr(type.size() + 1);
    if (args.empty() || args.find_first_not_of("abcdefghijklmnopqrstuvwxyz_0123456789.=,") != std::string_view::npos)
      throw UsageError("--queue \"" + std::string(text) +
                       "\": ARGS after the colon are NAME=NUMBER[,NAME=NUMBER...] (e.g. droptail:packets=100)");
  }
  return std::string(text);
}

std::vector<std::string> queue_arguments(const std::string& queue) {
  std::vector<std::string> argv;
  if (queue.empty()) return argv;
  const size_t colon = queue.find(':');
  for (const char* direction : {"uplink", "downlink"}) {
    argv.push_back(std::string("--") + direction + "-queue=" + queue.substr(0, colon));
    if (colon != std::string::npos)
      argv.push_back(std::string("--") + direction + "-queue-args=" + queue.substr(colon + 1));
  }
  return argv;
}

std::vector<Configuration> sweep_configurations(const SweepSettings& settings) {
  const size_t count = settings.rates_mbps.size() * settings.rtts_ms.size() * settings.losses.size() *
                       std::max<size_t>(settings.protocols.size(), 1);
  if (count > kMaxConfigurations)
    throw UsageError("the sweep has " + std::to_string(count) +
                     " configurations (rates x rtts x loss x protocols), more than " +
                     std::to_string(kMaxConfigurations) + ": split it into several sweeps");
  const std::vector<Variant> variants = settings.variants();
  std::vector<Configuration> configs;
  if (settings.baseline_loads() > 0) {
    for (const Variant& v : variants) configs.push_back(Configuration{v, false, 0, 0, 0});
  }
  for (double rate : settings.rates_mbps)
    for (double rtt : settings.rtts_ms)
      for (double loss : settings.losses)
        for (const Variant& v : variants) configs.push_back(Configuration{v, true, rate, rtt, loss});
  return configs;
}

std::vector<std::string> load_command(const SweepSettings& settings, const Configuration& config,
                                      const SweepPrograms& programs, const std::string& json_path) {
  std::vector<std::string> argv = {programs.replay, settings.recording};
  if (!settings.tcp_ecn.empty()) argv.push_back("--tcp-ecn=" + settings.tcp_ecn);  // the shells inside inherit it
  if (config.variant.single_server) argv.push_back("--single-server");
  if (config.variant.protocol_kind == Protocol::kH2) argv.push_back("--http2");
  if (config.variant.protocol_kind == Protocol::kH3) argv.push_back("--http3");
  if (!settings.match_user_agent) argv.push_back("--ignore-user-agent");
  const bool cumulus = config.variant.protocol_kind == Protocol::kCumulus;
  if (cumulus) argv.insert(argv.end(), {programs.cumulus_remote, "--"});
  if (config.emulated) {
    argv.insert(argv.end(), {programs.delay, number_text(config.rtt_ms / 2)});
    if (config.loss > 0) {
      argv.insert(argv.end(),
                  {programs.loss, "uplink", number_text(config.loss), "downlink", number_text(config.loss)});
    }
    const std::string rate = "rate:" + number_text(config.rate_mbps) + "Mbit/s";
    argv.insert(argv.end(), {programs.link, rate, rate});
    const std::vector<std::string> queue = queue_arguments(settings.queue);
    argv.insert(argv.end(), queue.begin(), queue.end());
  }
  if (cumulus) {
    if (config.emulated) argv.push_back("--");  // the end of mm-link's options (the remote's ended already)
    argv.push_back(programs.cumulus_local);
  }
  argv.insert(argv.end(), {"--", programs.pageload, "--runs", "1", "--timeout", number_text(settings.timeout_s),
                           "--json", json_path, pageload_protocol_flag(config.variant.protocol_kind), settings.url});
  return argv;
}

std::vector<std::string> configuration_columns() {
  return {"configuration", "protocol", "servers", "rate_mbps", "rtt_ms", "loss", "queue"};
}

std::vector<std::string> configuration_values(const Configuration& c, const std::string& queue) {
  if (!c.emulated) return {c.id(), c.variant.protocol(), c.variant.servers(), "", "0", "0", ""};
  return {c.id(),
          c.variant.protocol(),
          c.variant.servers(),
          number_text(c.rate_mbps),
          number_text(c.rtt_ms),
          number_text(c.loss),
          queue.empty() ? "infinite" : queue};
}

nlohmann::json sweep_manifest(const SweepSettings& s) {
  nlohmann::json configs = nlohmann::json::array();
  for (const Configuration& c : sweep_configurations(s)) configs.push_back(configuration_json(c));
  nlohmann::json manifest = {{"format", "mm-sweep 1"},
                             {"recording", s.recording},
                             {"url", s.url},
                             {"rates_mbps", s.rates_mbps},
                             {"rtts_ms", s.rtts_ms},
                             {"loss", s.losses},
                             {"queue", s.queue},
                             {"http2", s.protocols == std::vector<Protocol>{Protocol::kH2}},
                             {"single_server", s.single_server},
                             {"match_user_agent", s.match_user_agent},
                             {"runs", s.runs},
                             {"timeout_s", s.timeout_s},
                             {"configurations", configs}};
  // Only when it differs from "runs": a sweep without the option has the manifest it always had.
  if (s.baseline_loads() != s.runs) manifest["baseline_runs"] = s.baseline_loads();
  if (!s.tcp_ecn.empty()) manifest["tcp_ecn"] = s.tcp_ecn;  // likewise
  if (!legacy_protocols(s.protocols)) manifest["protocols"] = protocol_list(s.protocols);
  return manifest;
}

std::vector<Configuration> manifest_configurations(const nlohmann::json& manifest, const std::string& name) {
  auto bad = [&](const std::string& why) {
    return UserError(name + " is not an mm-sweep manifest (" + why +
                     "): was it written by another program? Give mm-sweep a results directory it made");
  };
  if (!manifest.is_object() || !manifest.contains("format") || manifest["format"] != "mm-sweep 1")
    throw bad("no \"format\": \"mm-sweep 1\"");
  const auto list = manifest.find("configurations");
  if (list == manifest.end() || !list->is_array()) throw bad("no list of configurations");
  if (list->size() > kMaxConfigurations * 5 + 5) throw bad("too many configurations");
  std::vector<Configuration> configs;
  for (const nlohmann::json& j : *list) {
    try {
      Configuration c;
      const std::string protocol = j.at("protocol").get<std::string>(), servers = j.at("servers").get<std::string>();
      if ((protocol != "h1" && protocol != "h2" && protocol != "h3" && protocol != "cumulus") ||
          (servers != "multi" && servers != "single"))
        throw bad("a configuration's protocol or servers is unknown");
      c.variant = Variant{parse_protocol_list(protocol).front(), servers == "single"};
      c.emulated = j.at("emulated").get<bool>();
      if (c.emulated) {
        c.rate_mbps = j.at("rate_mbps").get<double>();
        c.rtt_ms = j.at("rtt_ms").get<double>();
        c.loss = j.at("loss").get<double>();
        if (!(c.rate_mbps >= kMinRateMbps && c.rate_mbps <= kMaxRateMbps && c.rtt_ms >= 0 && c.rtt_ms <= kMaxRttMs &&
              c.loss >= 0 && c.loss <= kMaxLoss))
          throw bad("a configuration is out of bounds");
      }
      if (j.at("id").get<std::string>() != c.id()) throw bad("configuration id " + j.at("id").dump() + " is wrong");
      if (std::find(configs.begin(), configs.end(), c) != configs.end()) throw bad(c.id() + " is listed twice");
      configs.push_back(c);
    } catch (const nlohmann::json::exception& e) {
      throw bad(std::string("a configuration is malformed: ") + e.what());
    }
  }
  return configs;
}

std::vector<std::string> manifest_differences(const nlohmann::json& a, const nlohmann::json& b) {
  std::vector<std::string> names;
  for (const auto& [key, value] : a.items()) {
    if (!b.contains(key) || b.at(key) != value) names.push_back(key);
  }
  for (const auto& [key, value] : b.items()) {
    if (!a.contains(key)) names.push_back(key);
  }
  return names;
}

std::vector<std::string> job_lines(const std::string& program, const SweepSettings& s, const std::string& out) {
  std::string common = shell_quote(program) + " --recording " + shell_quote(s.recording) + " --url " +
                       shell_quote(s.url) + " --rates " + joined(s.rates_mbps) + " --rtts " + joined(s.rtts_ms) +
                       " --loss " + joined(s.losses);
  if (!s.queue.empty()) common += " --queue " + shell_quote(s.queue);
  if (!s.tcp_ecn.empty()) common += " --tcp-ecn " + s.tcp_ecn;
  if (s.protocols == std::vector<Protocol>{Protocol::kH2}) {
    common += " --http2";
  } else if (!legacy_protocols(s.protocols)) {
    common += " --protocols " + protocol_list(s.protocols);
  }
  if (s.single_server) common += " --single-server";
  if (s.match_user_agent) common += " --match-user-agent";
  common += " --runs " + std::to_string(s.runs);
  if (s.baseline_loads() != s.runs) common += " --baseline-runs " + std::to_string(s.baseline_loads());
  common += " --timeout " + number_text(s.timeout_s) + " --jobs 1";
  std::string base = out;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  std::vector<std::string> lines;
  for (const Configuration& c : sweep_configurations(s)) {
    lines.push_back(common + " --only " + c.id() + " --out " + shell_quote(base + "/parts/" + c.id()));
  }
  return lines;
}

// SPDX-License-Identifier: GPL-3.0-or-later
// A command sweep's grid, configurations and command lines (see command_grid.hh).
#include "sweep/command_grid.hh"

#include <algorithm>
#include <set>

#include "util/exception.hh"
#include "util/text.hh"
#include "util/utf8.hh"

namespace {
constexpr size_t kMaxLinkArgument = 4096;  // a trace file's path (PATH_MAX)

std::string queue_label(const std::string& queue) { return queue.empty() ? "infinite" : label_text(queue); }

nlohmann::json configuration_json(const CommandConfiguration& c) {
  return {{"id", c.id()},        {"scheme", c.scheme}, {"cc", c.cc},     {"link", c.link.name}, {"up", c.link.up},
          {"down", c.link.down}, {"rtt_ms", c.rtt_ms}, {"loss", c.loss}, {"queue", c.queue}};
}

// A command's text: one or more lines of valid UTF-8, no NUL, bounded.
void check_command_text(std::string_view text, std::string_view option) {
  if (text.empty() || text.size() > kMaxCommandText || text.find('\0') != std::string_view::npos ||
      !is_valid_utf8(text) || text.find_first_not_of(" \t\r\n") == std::string_view::npos)
    throw UsageError(std::string(option) + " needs a command (sh -c runs it), of up to " +
                     std::to_string(kMaxCommandText) + " bytes, not \"" + printable(text, 80) + "\"");
}
}  // namespace

std::string label_text(std::string_view text) {
  std::string label;
  for (char c : text) {
    const char lower = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    const bool kept = (lower >= 'a' && lower <= 'z') || (lower >= '0' && lower <= '9') || lower == '.' ||
                      lower == '_' || lower == '-';
    label += kept ? lower : '-';
    if (label.size() >= kMaxLabel) break;
  }
  return label;
}

std::string CommandConfiguration::path_id() const {
  return link.name + "-" + number_text(rtt_ms) + "ms-loss" + number_text(loss) + "-" + queue_label(queue);
}

std::string CommandConfiguration::id() const { return scheme + "-" + (cc.empty() ? "default" : cc) + "-" + path_id(); }

CommandScheme parse_scheme(std::string_view text, std::string_view option) {
  const size_t equals = text.find('=');
  if (equals == std::string_view::npos || equals == 0)
    throw UsageError(std::string(option) + " takes NAME=COMMAND (e.g. " + std::string(option) +
                     " 'cubic=iperf3 -c $MAHIMAHI_BASE -p $MM_SWEEP_PORT -t 20'), not \"" + printable(text, 80) + "\"");
  const std::string_view name = text.substr(0, equals);
  if (name.size() > kMaxLabel || label_text(name) != name)
    throw UsageError(std::string(option) + ": the name \"" + printable(name, 60) + "\" must be up to " +
                     std::to_string(kMaxLabel) + " of a-z, 0-9, '.', '_' and '-'");
  check_command_text(text.substr(equals + 1), option);
  return {std::string(name), std::string(text.substr(equals + 1))};
}

CommandLink rate_link(double mbps) {
  const std::string rate = "rate:" + number_text(mbps) + "Mbit/s";
  return {number_text(mbps) + "mbit", rate, rate};
}

CommandLink parse_link(std::string_view text) {
  CommandLink link;
  std::string_view rest = text;
  const size_t equals = text.find('=');
  if (equals != std::string_view::npos) {
    const std::string_view name = text.substr(0, equals);
    if (name.empty() || name.size() > kMaxLabel || label_text(name) != name)
      throw UsageError("--link: the name \"" + printable(name, 60) + "\" must be up to " + std::to_string(kMaxLabel) +
                       " of a-z, 0-9, '.', '_' and '-' (--link NAME=UP,DOWN)");
    link.name = std::string(name);
    rest = text.substr(equals + 1);
  }
  const size_t comma = rest.find(',');
  link.up = std::string(rest.substr(0, comma));
  link.down = comma == std::string_view::npos ? link.up : std::string(rest.substr(comma + 1));
  for (const std::string* side : {&link.up, &link.down}) {
    if (side->empty() || side->size() > kMaxLinkArgument || side->find_first_of(",\r\n") != std::string::npos ||
        !is_valid_utf8(*side))
      throw UsageError("--link \"" + printable(text, 120) +
                       "\": give [NAME=]UP[,DOWN], each a trace file or rate:R as mm-link takes them (e.g. --link "
                       "lte=Verizon-LTE.up,Verizon-LTE.down or --link rate:12Mbit/s)");
  }
  if (link.name.empty()) {
    if (link.up.rfind("rate:", 0) == 0) {
      link.name = label_text(link.up.substr(5));
      std::replace(link.name.begin(), link.name.end(), '/', '-');
      if (link.name.size() > 2 && link.name.compare(link.name.size() - 2, 2, "-s") == 0)
        link.name.resize(link.name.size() - 2);  // "12mbit-s" -> "12mbit"
    } else {
      std::string base = link.up.substr(link.up.find_last_of('/') + 1);
      for (const char* ending : {".up", ".down", ".trace", ".txt"}) {
        const std::string e = ending;
        if (base.size() > e.size() && base.compare(base.size() - e.size(), e.size(), e) == 0) {
          base.resize(base.size() - e.size());
          break;
        }
      }
      link.name = label_text(base);
    }
    if (link.name.empty()) link.name = "link";
  }
  return link;
}

std::vector<std::string> parse_cc_list(std::string_view text) {
  std::vector<std::string> ccs;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string word(text.substr(start, comma - start));
    const bool spelt = !word.empty() && word.size() <= 15 &&
                       word.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos;
    if (!spelt)
      throw UsageError("--cc \"" + printable(text, 100) +
                       "\": a comma-separated list of congestion controls as the kernel names them (e.g. --cc "
                       "reno,bbr; sysctl net.ipv4.tcp_allowed_congestion_control lists those allowed)");
    if (std::find(ccs.begin(), ccs.end(), word) != ccs.end()) throw UsageError("--cc lists " + word + " twice");
    ccs.push_back(word);
    if (ccs.size() > kMaxListValues)
      throw UsageError("--cc has more than " + std::to_string(kMaxListValues) + " names");
    start = comma + 1;
  }
  return ccs;
}

std::vector<CommandConfiguration> command_configurations(const CommandSweepSettings& s) {
  struct Path {
    CommandLink link;
    double rtt_ms;
  };
  std::vector<Path> paths;
  for (const CommandLink& link : s.links)
    for (double rtt : s.rtts_ms) paths.push_back({link, rtt});
  for (const CommandSweepSettings::PresetPath& p : s.preset_paths) paths.push_back({p.link, p.rtt_ms});
  const std::vector<std::string> queues = s.queues.empty() ? std::vector<std::string>{""} : s.queues;
  const std::vector<std::string> ccs = s.ccs.empty() ? std::vector<std::string>{""} : s.ccs;
  const size_t count = paths.size() * s.losses.size() * queues.size() * ccs.size() * s.schemes.size();
  if (count > kMaxConfigurations)
    throw UsageError("the sweep has " + std::to_string(count) +
                     " configurations (paths x loss x queues x ccs x schemes), more than " +
                     std::to_string(kMaxConfigurations) + ": split it into several sweeps");
  std::vector<CommandConfiguration> configs;
  std::set<std::string> ids;
  for (const Path& path : paths)
    for (double loss : s.losses)
      for (const std::string& queue : queues)
        for (const std::string& cc : ccs)
          for (const CommandScheme& scheme : s.schemes) {
            CommandConfiguration c{scheme.name, cc, path.link, path.rtt_ms, loss, queue};
            if (!ids.insert(c.id()).second)
              throw UsageError("two configurations of the sweep are both " + c.id() +
                               " (two links or queues of one name): name the links apart (--link NAME=UP,DOWN)");
            configs.push_back(std::move(c));
          }
  return configs;
}

std::vector<std::string> command_run_argv(const CommandSweepSettings& settings, const CommandConfiguration& config,
                                          const CommandPrograms& programs, const std::string& uplink_log,
                                          const std::string& downlink_log) {
  std::vector<std::string> argv = {programs.delay, number_text(config.rtt_ms / 2)};
  if (!settings.tcp_ecn.empty()) argv.push_back("--tcp-ecn=" + settings.tcp_ecn);  // the shells inside inherit it
  if (config.loss > 0)
    argv.insert(argv.end(), {programs.loss, "uplink", number_text(config.loss), "downlink", number_text(config.loss)});
  argv.insert(argv.end(), {programs.link, config.link.up, config.link.down});
  const std::vector<std::string> queue = queue_arguments(config.queue);
  argv.insert(argv.end(), queue.begin(), queue.end());
  argv.push_back("--uplink-log=" + uplink_log);
  argv.push_back("--downlink-log=" + downlink_log);
  if (!config.cc.empty()) argv.push_back("--tcp-congestion-control=" + config.cc);
  const auto scheme = std::find_if(settings.schemes.begin(), settings.schemes.end(),
                                   [&](const CommandScheme& s) { return s.name == config.scheme; });
  argv.insert(argv.end(), {"--", "sh", "-c", scheme == settings.schemes.end() ? "false" : scheme->command});
  return argv;
}

std::vector<std::string> command_configuration_columns() {
  return {"configuration", "scheme", "cc", "link", "rtt_ms", "loss", "queue"};
}

std::vector<std::string> command_configuration_values(const CommandConfiguration& c) {
  return {c.id(),
          c.scheme,
          c.cc.empty() ? "default" : c.cc,
          c.link.name,
          number_text(c.rtt_ms),
          number_text(c.loss),
          c.queue.empty() ? "infinite" : c.queue};
}

nlohmann::json command_manifest(const CommandSweepSettings& s) {
  nlohmann::json schemes = nlohmann::json::array(), configs = nlohmann::json::array();
  for (const CommandScheme& scheme : s.schemes) schemes.push_back({{"name", scheme.name}, {"command", scheme.command}});
  for (const CommandConfiguration& c : command_configurations(s)) configs.push_back(configuration_json(c));
  return {{"format", "mm-sweep command 1"}, {"schemes", schemes}, {"server", s.server},
          {"tcp_ecn", s.tcp_ecn},           {"runs", s.runs},     {"timeout_s", s.timeout_s},
          {"configurations", configs}};
}

bool is_command_manifest(const nlohmann::json& manifest) {
  return manifest.is_object() && manifest.value("format", "") == "mm-sweep command 1";
}

std::vector<CommandConfiguration> command_manifest_configurations(const nlohmann::json& manifest,
                                                                  const std::string& name) {
  std::vector<CommandConfiguration> configs;
  try {
    if (!is_command_manifest(manifest)) throw std::runtime_error("not a command sweep's manifest");
    for (const nlohmann::json& j : manifest.at("configurations")) {
      CommandConfiguration c{
          j.at("scheme").get<std::string>(),
          j.at("cc").get<std::string>(),
          {j.at("link").get<std::string>(), j.at("up").get<std::string>(), j.at("down").get<std::string>()},
          j.at("rtt_ms").get<double>(),
          j.at("loss").get<double>(),
          j.at("queue").get<std::string>()};
      const std::string id = c.id();
      if (id != j.at("id").get<std::string>() || id.size() > 255 ||
          id.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789._-") != std::string::npos)
        throw std::runtime_error("configuration " + printable(j.at("id").dump(), 80) + " does not match its fields");
      configs.push_back(std::move(c));
      if (configs.size() > kMaxConfigurations) throw std::runtime_error("too many configurations");
    }
  } catch (const std::exception& e) {
    throw UserError(name + " is not a command sweep's manifest (" + printable(e.what(), 200) + ")");
  }
  return configs;
}

std::vector<std::string> command_job_lines(const std::string& program, const CommandSweepSettings& s,
                                           const std::string& out) {
  auto numbers = [](const std::vector<double>& values) {
    std::string text;
    for (double v : values) text += (text.empty() ? "" : ",") + number_text(v);
    return text;
  };
  std::string common = shell_quote(program);
  for (const CommandScheme& scheme : s.schemes)
    common += " --scheme " + shell_quote(scheme.name + "=" + scheme.command);
  if (!s.server.empty()) common += " --server " + shell_quote(s.server);
  for (const CommandLink& link : s.links)
    common += " --link " + shell_quote(link.name + "=" + link.up + "," + link.down);
  std::string presets;
  for (const CommandSweepSettings::PresetPath& p : s.preset_paths) presets += (presets.empty() ? "" : ",") + p.preset;
  if (!presets.empty()) common += " --presets " + shell_quote(presets);
  common += " --rtts " + numbers(s.rtts_ms) + " --loss " + numbers(s.losses);
  for (const std::string& queue : s.queues) common += " --queue " + shell_quote(queue.empty() ? "infinite" : queue);
  std::string ccs;
  for (const std::string& cc : s.ccs) ccs += (ccs.empty() ? "" : ",") + cc;
  if (!ccs.empty()) common += " --cc " + ccs;
  if (!s.tcp_ecn.empty()) common += " --tcp-ecn " + s.tcp_ecn;
  common += " --runs " + std::to_string(s.runs) + " --timeout " + number_text(s.timeout_s) + " --jobs 1";
  std::string base = out;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  std::vector<std::string> lines;
  for (const CommandConfiguration& c : command_configurations(s))
    lines.push_back(common + " --only " + c.id() + " --out " + shell_quote(base + "/parts/" + c.id()));
  return lines;
}

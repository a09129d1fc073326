// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A sweep of a command (mm-sweep --command): what the user asked for (the schemes, each a
// command; a server started outside the shells for each run; the links, round-trip times,
// presets, loss rates, queues and congestion controls), the configurations it spans with their
// ids, and the shell command line of one run. Pure: nothing here starts a process or touches a
// file (the trace files are checked by the frontend).
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "sweep/sweep_grid.hh"

inline constexpr size_t kMaxCommandText = 8192;  // bytes of a scheme's or the server's command
inline constexpr size_t kMaxSchemes = 32;
inline constexpr size_t kMaxLabel = 40;  // a scheme's or a link's name
inline constexpr double kDefaultCommandTimeoutS = 120;

// A scheme: a name (the plots' and ids') and the command run inside the shells, by sh -c.
struct CommandScheme {
  std::string name, command;
  bool operator==(const CommandScheme&) const = default;
};

// A link: mm-link's UP and DOWN arguments (a trace file's absolute path, or rate:R), named.
struct CommandLink {
  std::string name, up, down;
  bool operator==(const CommandLink&) const = default;
};

struct CommandSweepSettings {
  std::vector<CommandScheme> schemes;
  std::string server;  // started by sh -c in the caller's namespace for each run; "" for none
  std::vector<CommandLink> links;
  std::vector<double> rtts_ms;
  // mm-preset's profiles, each a link and a round-trip time of its own (the frontend looks them up).
  struct PresetPath {
    std::string preset;  // as mm-preset names it ("wpt:3g")
    CommandLink link;
    double rtt_ms;
    bool operator==(const PresetPath&) const = default;
  };
  std::vector<PresetPath> preset_paths;
  std::vector<double> losses;
  std::vector<std::string> queues;  // "" for mm-link's default (infinite), else TYPE[:ARGS], both ways
  std::vector<std::string> ccs;     // "" for the namespace's default, else a congestion control's name
  std::string tcp_ecn;              // "" or on|accept|off (mm-delay --tcp-ecn, for every shell inside)
  int runs = 1;
  double timeout_s = kDefaultCommandTimeoutS;
};

// One run's configuration: a scheme with a congestion control over a path (a link inside a
// round-trip time) with a loss rate and a queue.
struct CommandConfiguration {
  std::string scheme, cc;  // cc "" : the namespace's default
  CommandLink link;
  double rtt_ms = 0, loss = 0;
  std::string queue;  // "" : infinite
  // "cubic-default-verizon-lte-40ms-loss0-infinite": a file name, unique in a sweep.
  std::string id() const;
  // The same configuration whatever the scheme and congestion control: what one plot shows
  // ("verizon-lte-40ms-loss0-infinite").
  std::string path_id() const;
  bool operator==(const CommandConfiguration&) const = default;
};

// A name as ids and file names take it: lower case letters, digits, '.', '_' and '-' (anything
// else becomes '-'), at most kMaxLabel.
std::string label_text(std::string_view text);

// --scheme NAME=COMMAND (or --command COMMAND, named "command"). UsageError otherwise.
CommandScheme parse_scheme(std::string_view text, std::string_view option);
// --link [NAME=]UP[,DOWN]: DOWN defaults to UP; each a trace file or rate:R as mm-link takes it;
// the name defaults to the up trace file's name without its extension (or "12mbit" for
// rate:12Mbit/s). Trace paths are returned as given (the frontend makes them absolute).
CommandLink parse_link(std::string_view text);
// --links-from-rates LIST: rate:RMbit/s both ways, named "RMbit".
CommandLink rate_link(double mbps);
// --cc LIST: congestion controls' names, each once.
std::vector<std::string> parse_cc_list(std::string_view text);

// Every configuration: (links x rtts, then presets) x losses x queues x ccs x schemes, in that
// nesting order. UsageError if there are more than kMaxConfigurations or two share an id.
std::vector<CommandConfiguration> command_configurations(const CommandSweepSettings& settings);

struct CommandPrograms {
  std::string delay = "mm-delay", loss = "mm-loss", link = "mm-link";
};

// argv of one run of `config`, its link logs at the two paths:
//   mm-delay RTT/2 [--tcp-ecn=MODE] [mm-loss uplink P downlink P] mm-link UP DOWN [queue options]
//   --uplink-log=U --downlink-log=D [--tcp-congestion-control=CC] -- sh -c COMMAND
std::vector<std::string> command_run_argv(const CommandSweepSettings& settings, const CommandConfiguration& config,
                                          const CommandPrograms& programs, const std::string& uplink_log,
                                          const std::string& downlink_log);

// The columns of a configuration in runs.csv and summary.csv, and a configuration's values.
std::vector<std::string> command_configuration_columns();
std::vector<std::string> command_configuration_values(const CommandConfiguration& config);

// The manifest (RESULTS/sweep.json, "format": "mm-sweep command 1") and its configurations.
nlohmann::json command_manifest(const CommandSweepSettings& settings);
bool is_command_manifest(const nlohmann::json& manifest);
// UserError naming `name` when it is not such a manifest.
std::vector<CommandConfiguration> command_manifest_configurations(const nlohmann::json& manifest,
                                                                  const std::string& name);

// The mm-sweep command lines of --emit-jobs, one per configuration: the same sweep (every link
// as --link NAME=UP,DOWN), --jobs 1, --only ID, --out OUT/parts/ID (OUT as given).
std::vector<std::string> command_job_lines(const std::string& program, const CommandSweepSettings& settings,
                                           const std::string& out);

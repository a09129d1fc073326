// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A sweep's grid: what the user asked for (the recording, the page, the lists of link rates,
// round-trip times and loss rates, the protocol), the configurations it spans with their ids,
// the shell command line that loads the page once in a configuration, and the command lines of
// --emit-jobs. Pure: nothing here starts a process or touches a file.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// Bounds of every input (the man page states them).
inline constexpr size_t kMaxListValues = 100;        // values in each of --rates, --rtts, --loss
inline constexpr size_t kMaxConfigurations = 10000;  // emulated configurations of one sweep
inline constexpr double kMinRateMbps = 0.001;        // 1 kbit/s
inline constexpr double kMaxRateMbps = 100000;       // 100 Gbit/s
inline constexpr double kMaxRttMs = 10000;           // 10 s
inline constexpr double kMaxLoss = 0.99;             // 1 would drop every packet
inline constexpr int kMaxRuns = 10000;               // as mm-pageload --runs
inline constexpr double kMaxTimeoutS = 3600;
inline constexpr size_t kMaxQueueSpec = 200;  // characters of --queue
inline constexpr size_t kMaxUrl = 8192;

// The protocol a configuration's loads use: HTTP/1.1 (mm-pageload --no-http2), HTTP/2 (mm-replay
// --http2, mm-pageload --http2), HTTP/3 (mm-replay --http3, mm-pageload --http3: QUIC forced to
// every https origin; plain-HTTP origins stay HTTP/1.1), or Cumulus (the paper's §5.2: the
// Remote Proxy beside the replay's servers, mm-cumulus-remote, outside the emulated link; the
// browser behind mm-cumulus-local inside it, speaking HTTP/1.1 to the Local Proxy).
enum class Protocol { kH1, kH2, kH3, kCumulus };
std::string protocol_name(Protocol protocol);  // "h1", "h2", "h3", "cumulus"
// --protocols LIST: "h1,h2,h3,cumulus" in any order, each once, at least one; in the order given.
// UsageError naming the option otherwise.
std::vector<Protocol> parse_protocol_list(std::string_view text);

// The protocol and server layout of a configuration: mm-replay's protocol options and --single-server.
struct Variant {
  Protocol protocol_kind = Protocol::kH1;
  bool single_server = false;
  std::string protocol() const { return protocol_name(protocol_kind); }
  std::string servers() const { return single_server ? "single" : "multi"; }
  bool operator==(const Variant&) const = default;
};

// One network configuration: the page loaded through mm-delay RTT/2, mm-loss (when loss > 0) and
// mm-link RATE RATE; or, when not emulated, in mm-replay alone (the baseline that gives the
// optimal page-load time its browser time and site size).
struct Configuration {
  Variant variant;
  bool emulated = true;
  double rate_mbps = 0, rtt_ms = 0, loss = 0;  // 0 when not emulated
  // "h1-multi-12mbit-120ms-loss0", "h2-single-unemulated": a file name, unique in a sweep.
  std::string id() const;
  bool operator==(const Configuration&) const = default;
};

struct SweepSettings {
  std::string recording;  // the recording directory, as an absolute path
  std::string url;
  std::vector<double> rates_mbps, rtts_ms, losses;
  std::string queue;    // "" (mm-link's default) or TYPE[:ARGS], both directions
  std::string tcp_ecn;  // "" (as where mm-sweep runs) or on|accept|off: mm-replay --tcp-ecn, for every shell inside
  std::vector<Protocol> protocols = {Protocol::kH1};  // each configuration once per protocol
  bool single_server = false;
  std::vector<Variant> variants() const;
  bool match_user_agent = false;  // else mm-replay --ignore-user-agent
  int runs = 1;
  std::optional<int> baseline_runs;  // loads of the unemulated baseline (unset: runs); 0: none, no optimal
  int baseline_loads() const { return baseline_runs.value_or(runs); }
  double timeout_s = 60;
};

// "12", "0.2", "12.5": a number as ids, command lines and CSV files write it (up to 10
// significant digits, no exponent for the bounded values here).
std::string number_text(double value);

// A comma-separated list of numbers from `min` to `max` (both included), at most kMaxListValues,
// none twice; returned sorted. UsageError naming `option` and the fix otherwise.
std::vector<double> parse_number_list(std::string_view text, std::string_view option, double min, double max);
// --queue TYPE[:ARGS]: TYPE one of mm-link's queues, ARGS as its --uplink-queue-args take them.
// Returns the text as given; UsageError otherwise.
std::string parse_queue_spec(std::string_view text);

// mm-link's options for the queue TYPE[:ARGS] in both directions ("" : none, mm-link's default).
std::vector<std::string> queue_arguments(const std::string& queue);

// Every configuration of the sweep: the baselines first, one per protocol (unless baseline_runs
// is 0), then rates x rtts x losses x protocols in that nesting order. UsageError if there are more than
// kMaxConfigurations.
std::vector<Configuration> sweep_configurations(const SweepSettings& settings);

// The program paths a load's command line names (found in PATH by the frontend).
struct SweepPrograms {
  std::string replay = "mm-replay", delay = "mm-delay", loss = "mm-loss", link = "mm-link", pageload = "mm-pageload";
  std::string cumulus_remote = "mm-cumulus-remote", cumulus_local = "mm-cumulus-local";
};

// argv (program first) of one load of `config`, writing its result to json_path:
//   mm-replay DIR [--single-server] [--http2|--http3] [--ignore-user-agent] [mm-delay RTT/2
//   [mm-loss uplink P downlink P] mm-link rate:RMbit/s rate:RMbit/s [queue options]] --
//   mm-pageload --runs 1 --timeout S --json FILE --no-http2|--http2|--http3 URL
// Cumulus: mm-replay DIR ... mm-cumulus-remote -- [the emulation shells] -- mm-cumulus-local --
//   mm-pageload ... --no-http2 URL
std::vector<std::string> load_command(const SweepSettings& settings, const Configuration& config,
                                      const SweepPrograms& programs, const std::string& json_path);

// The columns of a configuration in loads.csv and summary.csv, and a configuration's values.
std::vector<std::string> configuration_columns();
std::vector<std::string> configuration_values(const Configuration& config, const std::string& queue);

// The manifest (RESULTS/sweep.json) of a sweep: its settings and its configurations.
nlohmann::json sweep_manifest(const SweepSettings& settings);
// The configurations a manifest lists (also one made by --merge). UserError naming `name` when
// it is not such a manifest.
std::vector<Configuration> manifest_configurations(const nlohmann::json& manifest, const std::string& name);
// The names of the fields in which two manifests differ ("rates_mbps", "url", ...), in order.
std::vector<std::string> manifest_differences(const nlohmann::json& a, const nlohmann::json& b);

// The mm-sweep command lines of --emit-jobs, one per configuration: the same sweep, --jobs 1,
// --only ID, --out OUT/parts/ID (OUT as given).
std::vector<std::string> job_lines(const std::string& program, const SweepSettings& settings, const std::string& out);

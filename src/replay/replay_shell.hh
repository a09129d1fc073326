// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// mm-replay's ferry: the recording loaded and indexed (as the user, after the privilege drop),
// the servers' addresses handed to the supervisor, Apache, dnsmasq, the FastCGI matcher and,
// with --http3, the QUIC server started; --timing=recorded's delay shell around the command.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "replay/replay_http3.hh"
#include "replay/replay_index.hh"
#include "shell/ferry_pair.hh"

// --timing=recorded: where the ferry writes the origins' distances for the mm-delay shell the
// command runs in, a directory named before the fork (the supervisor puts the path on the
// command line; the ferry, with the user's rights, makes the directory and writes the file).
struct TimingSettings {
  bool recorded = false;
  std::filesystem::path directory;
  std::filesystem::path destinations() const { return directory / "destinations"; }
};

struct Http3Settings {
  bool serve = false;
  AltSvcPolicy alt_svc = AltSvcPolicy::kNone;
  std::optional<std::string> qlog_dir;
};

// What mm-replay's command line asks for (see its --help).
struct ReplayShellSettings {
  std::string dir;
  std::optional<std::string> ca_dir;
  bool http2 = false, single_server = false, verbose = false, deterministic = false;
  ReplayOptions options;
  Http3Settings http3;
  TimingSettings timing;
};

// --timing=recorded: names the directory of the delay shell's map and runs `command` inside
// mm-delay 0 --destinations=MAP (in the supervisor, before the fork).
void add_recorded_timing(TimingSettings& timing, std::vector<std::string>& command);

// The ferry's work, with the user's rights; returns its exit status (1 after saying why).
int run_replay_ferry(const ReplayShellSettings& settings, const FerryEndpoints& endpoints,
                     const std::function<void()>& ready);

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// mm-cumulus-remote's service: the Remote Proxy (remote_proxy.hh) on its listening socket, its
// loaders' command line (shells, mm-record, mm-pageload), the user's CA and the work directory,
// and the command it may run beside it (told where the proxy is by MAHIMAHI_CUMULUS_REMOTE).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

// What mm-cumulus-remote's command line asks for (see its --help).
struct RemoteServiceOptions {
  std::optional<std::string> listen, ca_dir, upstream_ca, uplink_trace, downlink_trace, browser, window, token_file;
  double delay_ms = 5, timeout_s = 30;
  bool insecure = false, verbose = false, allow_private = false;
  uint64_t max_pair_mb = 64, max_load_mb = 1024;
  std::vector<std::string> browser_flags;
  std::vector<std::string> command;  // run beside the proxy (empty: serve until interrupted)
};

// The loaders' command line up to the URL ("{dir}" and "{json}" for RemoteProxyOptions::loader):
// mm-delay and mm-link as asked, mm-record (streaming each pair, refusing private upstreams
// outside mm-replay unless allowed, trusting the system's CAs and the user's), mm-pageload.
std::vector<std::string> remote_loader_command(const RemoteServiceOptions& options, const std::filesystem::path& work,
                                               const std::filesystem::path& ca_directory, bool in_replay);

// Serves until interrupted or until the command ends; returns the exit status (the command's,
// or 128 + the signal's). Throws UserError and UsageError for what the user can fix.
int run_remote_service(const RemoteServiceOptions& options);

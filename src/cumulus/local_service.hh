// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// mm-cumulus-local's ferry: the Local Proxy (local_proxy.hh) beside the shell's ferry pair, with
// the Remote Proxy's address and token from --remote, --token-file or MAHIMAHI_CUMULUS_REMOTE,
// the user's CA, and the totals said at the end.
#include <functional>
#include <optional>
#include <string>

#include "cumulus/local_proxy.hh"
#include "shell/ferry_pair.hh"

// What mm-cumulus-local's command line asks for (see its --help).
struct LocalServiceSettings {
  std::optional<std::string> ca_dir, remote, token_file;
  LocalProxyOptions options;
};

// Runs in the ferry process, with the user's rights (the CA, the token file and the environment
// are read as the user); returns the ferry's exit status (1 after saying why it could not start).
int run_local_service(const LocalServiceSettings& settings, const FerryEndpoints& endpoints,
                      const std::function<void()>& ready);

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// mm-record's ferry: the recording proxy (record_proxy.hh) beside the shell's ferry pair, writing
// into DIR (made, or checked for --append) with the user's rights, and the line that ends it.
#include <functional>
#include <optional>
#include <string>

#include "record/record_proxy.hh"
#include "shell/ferry_pair.hh"

// What mm-record's command line asks for (see its --help).
struct RecordShellSettings {
  std::string dir;
  std::optional<std::string> ca_dir;
  RecordProxyOptions options;
  bool append = false, write_at_once = false;
};

// Runs in the ferry process, as the user; returns the ferry's exit status (1 after saying why it
// could not start; kFerryFailedSaidWhy if pairs were lost to the disk).
int run_record_ferry(const RecordShellSettings& settings, const FerryEndpoints& endpoints,
                     const std::function<void()>& ready);

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// mm-pageload's work after its command line: the loads, one line per finished load on standard
// error, the --csv and --json files (rewritten whole after every load, so they are complete
// and consistent even if the run is interrupted), the summary, and the exit status.
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pageload/chromium.hh"

// Bounds of the command line.
inline constexpr int kMaxRuns = 10000;
inline constexpr size_t kMaxUrls = 1000;
inline constexpr size_t kMaxUrlBytes = 8192;
inline constexpr double kMaxTimeoutSeconds = 3600;
inline constexpr int kMaxWindowSide = 8192;
inline constexpr size_t kMaxBrowserFlags = 100;

struct PageloadOptions {
  std::vector<std::string> urls;
  int runs = 1;
  double timeout_seconds = 60;
  std::optional<std::string> csv, json;
  BrowserOptions browser;                  // program: as given (a name is looked up in PATH)
  std::vector<std::filesystem::path> cas;  // --ca files
  bool http3_discovery = false;            // --http3-discovery (LoadOptions::http3_discovery)
  bool wait_for_url = false;               // --wait-for-url (LoadOptions::wait_for_url): urls is empty
  bool speed_index = true;                 // false: --no-speed-index (LoadOptions::screencast)
};

// "1366x768" -> {1366, 768}; throws UsageError naming --window and the text.
std::pair<int, int> parse_window(const std::string& text);
// Checks a URL operand: http:// or https://, a host, no spaces or control bytes, bounded.
// Throws UsageError naming it.
void check_url(const std::string& url);

// Runs the loads; returns the exit status: 0 when every load was ok, 1 otherwise, 128+N when
// signal N (SIGINT, SIGTERM, SIGHUP) interrupted it (the browser closed, the files written with
// the loads that finished). Throws UserError for what the user must fix before any load.
int run_pageload(const PageloadOptions& options);

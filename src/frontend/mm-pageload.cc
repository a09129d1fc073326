// SPDX-License-Identifier: GPL-3.0-or-later
// mm-pageload: loads web pages in headless Chromium and reports their page-load time, paint
// timings, speed index and network figures; runs inside whatever shells wrap it. No privileges.
#include <iostream>
#include <string>

#include "pageload/pageload_tool.hh"
#include "util/args.hh"
#include "util/exception.hh"

namespace {
const ProgramInfo kInfo{
    "mm-pageload", "[OPTION]... URL...",
    "Loads each URL in an unmodified headless Chromium, driven over its DevTools pipe, with a fresh\n"
    "profile per load (no cache, no service workers, QUIC off), and reports per load the page-load\n"
    "time (Navigation Timing: loadEventEnd - startTime), first and largest contentful paint, the\n"
    "speed index of the frames captured during the load, bytes received, requests, origins and\n"
    "each origin's protocol. Run it inside shells: mm-delay 50 mm-pageload https://example.com/\n"
    "\n"
    "  --runs N              loads of each URL (default 1; 1 to 10000)\n"
    "  --timeout S           seconds per load (default 60; up to 3600): after it the load is a\n"
    "                        timeout row with what was measured so far\n"
    "  --csv FILE            one row per load (url, run, status, reason, the metrics)\n"
    "  --json FILE           the same rows as a JSON array of objects\n"
    "  --browser-flag=FLAG   passed to Chromium after mm-pageload's own flags (repeatable)\n"
    "  --http2, --no-http2   allow HTTP/2 (default), or not (--disable-http2)\n"
    "  --quic                allow QUIC (off by default: --disable-quic)\n"
    "  --http3               HTTP/3 to every https origin from the first request (Chromium's\n"
    "                        --origin-to-force-quic-on=*, which also accepts your local CA over\n"
    "                        QUIC; mm-replay --http3 serves it): a load in which any https\n"
    "                        response came over another protocol fails, naming the origin\n"
    "  --http3-discovery     HTTP/3 where the origins' Alt-Svc leads, as on the web: a first load\n"
    "                        in the profile (forced QUIC, not measured) learns Alt-Svc, its cache\n"
    "                        is emptied, then the measured load (see the man page)\n"
    "  --ca FILE             also trust this CA certificate (PEM) besides your mahimahi CA\n"
    "  --window WxH          the viewport (default 1366x768)\n"
    "  --browser PATH        the Chromium binary (default: chromium in PATH)\n"
    "  --no-speed-index      capture no screencast frames: no speed index (frames 0), and none\n"
    "                        of the browser's work encoding them or ours decoding them\n"
    "  --wait-for-url        no URL operand: start the browser, then read the URL from standard\n"
    "                        input (one line: URL, or URL TAB User-Agent TAB Accept-Language,\n"
    "                        which the browser then presents) and load it once; the load's\n"
    "                        time leaves out the browser's start (mm-cumulus-remote's use)\n"
    "  --help                show this help\n"
    "  --version             show the version\n"
    "\n"
    "The summary (median, p75, p95 of each metric over the loads that were ok) goes to standard\n"
    "output, a line per finished load to standard error. Exit status: 0 when every load was ok, 1\n"
    "when some timed out or failed (the rows say why), 2 for a usage error.\n"};

int run(int argc, char** argv) {
  PageloadOptions options;
  options.browser.program = "chromium";
  const auto path_value = [](std::optional<std::string>& target, const char* name) {
    return [&target, name](std::string_view value) {
      if (value.empty()) throw UsageError(std::string("--") + name + " needs a file name");
      target = std::string(value);
    };
  };
  ArgScanner scanner(
      kInfo, {{"runs", true,
               [&](std::string_view value) {
                 const uint64_t runs = parse_unsigned(value, "--runs");
                 if (runs < 1 || runs > static_cast<uint64_t>(kMaxRuns)) {
                   throw UsageError("--runs " + std::string(value) + ": give 1 to " + std::to_string(kMaxRuns));
                 }
                 options.runs = static_cast<int>(runs);
               }},
              {"timeout", true,
               [&](std::string_view value) {
                 const double seconds = parse_nonnegative(value, "--timeout");
                 if (seconds < 1 || seconds > kMaxTimeoutSeconds) {
                   throw UsageError("--timeout " + std::string(value) + ": give 1 to " +
                                    std::to_string(static_cast<int>(kMaxTimeoutSeconds)) + " seconds");
                 }
                 options.timeout_seconds = seconds;
               }},
              {"csv", true, path_value(options.csv, "csv")},
              {"json", true, path_value(options.json, "json")},
              {"browser-flag", true,
               [&](std::string_view value) {
                 if (!value.starts_with("-")) {
                   throw UsageError("--browser-flag=" + std::string(value) + ": a Chromium flag starts with --");
                 }
                 if (value.starts_with("--remote-debugging-") || value.starts_with("--user-data-dir")) {
                   throw UsageError("--browser-flag=" + std::string(value) + ": mm-pageload sets this one itself");
                 }
                 if (options.browser.extra_flags.size() >= kMaxBrowserFlags) {
                   throw UsageError("more than " + std::to_string(kMaxBrowserFlags) + " --browser-flag options");
                 }
                 options.browser.extra_flags.emplace_back(value);
               }},
              {"http2", false, [&](std::string_view) { options.browser.http2 = true; }},
              {"no-http2", false, [&](std::string_view) { options.browser.http2 = false; }},
              {"quic", false, [&](std::string_view) { options.browser.quic = true; }},
              {"http3", false,
               [&](std::string_view) {
                 options.browser.quic = true;
                 options.browser.http3_forced = true;
               }},
              {"http3-discovery", false, [&](std::string_view) { options.http3_discovery = true; }},
              {"wait-for-url", false, [&](std::string_view) { options.wait_for_url = true; }},
              {"no-speed-index", false, [&](std::string_view) { options.speed_index = false; }},
              {"ca", true,
               [&](std::string_view value) {
                 if (value.empty()) throw UsageError("--ca needs a file name");
                 options.cas.emplace_back(std::string(value));
               }},
              {"window", true,
               [&](std::string_view value) {
                 const auto [width, height] = parse_window(std::string(value));
                 options.browser.width = width;
                 options.browser.height = height;
               }},
              {"browser", true, [&](std::string_view value) {
                 if (value.empty()) throw UsageError("--browser needs the path of a Chromium binary");
                 options.browser.program = std::string(value);
               }}});
  const auto add_url = [&](std::string_view word) {
    if (options.urls.size() >= kMaxUrls) throw UsageError("more than " + std::to_string(kMaxUrls) + " URLs");
    check_url(std::string(word));
    options.urls.emplace_back(word);
    return true;
  };
  for (const std::string& word : scanner.scan(argc, argv, add_url)) add_url(word);
  if (options.wait_for_url) {
    if (!options.urls.empty())
      throw UsageError("--wait-for-url reads the URL from standard input: give no URL operand");
    if (options.runs != 1) throw UsageError("--wait-for-url makes one load: no --runs");
    if (options.http3_discovery) throw UsageError("--wait-for-url and --http3-discovery do not go together");
  } else if (options.urls.empty()) {
    throw UsageError("give at least one URL");
  }
  if (options.http3_discovery && options.browser.http3_forced)
    throw UsageError("--http3 and --http3-discovery are two ways to reach HTTP/3: give one");
  if (options.urls.size() * static_cast<size_t>(options.runs) > static_cast<size_t>(kMaxRuns)) {
    throw UsageError("--runs " + std::to_string(options.runs) + " of " + std::to_string(options.urls.size()) +
                     " URLs is more than " + std::to_string(kMaxRuns) + " loads; split the run");
  }
  return run_pageload(options);
}
}  // namespace

int main(int argc, char** argv) {
  return run_tool("mm-pageload", usage_line(kInfo), [&] { return run(argc, argv); });
}

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One page load in a fresh headless Chromium (pageload/chromium.hh), measured over DevTools:
// Navigation Timing's page-load time, paint timings, the network's counts and protocols, and
// the speed index of screencast frames. What the page or the browser does (a timeout, a DNS
// failure, a certificate error, a hung or crashed browser) is a row of the result, not an
// exception.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pageload/chromium.hh"
#include "pageload/load_events.hh"
#include "pageload/load_report.hh"
#include "pageload/speed_index.hh"
#include "util/clock.hh"

struct LoadOptions {
  std::string url;
  int run = 1;
  Nanos timeout = 60 * kNanosPerSec;  // from the navigation to the load event
  BrowserOptions browser;
  // HTTP/3 found as on the web: a first load in the profile (forced QUIC, not measured) learns
  // the origins' Alt-Svc; its HTTP cache is emptied; a second browser on that profile, which
  // accepts the local CA over QUIC for the hosts the first load met but forces nothing, makes the
  // measured load, going to QUIC where an Alt-Svc said so (mm-replay --advertise-h3, or recorded).
  bool http3_discovery = false;
  // The URL comes on standard input once the browser is ready (mm-pageload --wait-for-url, the
  // ready loader of mm-cumulus-remote): one line, "URL" or "URL<TAB>User-Agent<TAB>Accept-Language",
  // the last two (if not empty) presented by the browser for this load. `url` is ignored.
  bool wait_for_url = false;
  // Capture the screencast's frames for the speed index (false: mm-pageload --no-speed-index,
  // no frames and no speed index, and none of the PNG work; mm-cumulus-remote's loads).
  bool screencast = true;
};

// Loads options.url once. Throws Interrupted (a signal on interrupt_fd: the browser is closed
// first) and UserError (the browser cannot be run at all); everything else is in the result.
LoadResult load_page(const LoadOptions& options, BrowserProfileTemplate& profiles, int interrupt_fd);

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Named network profiles of the tools researchers compare against (mm-preset): WebPageTest,
// Lighthouse, Chrome DevTools and browsertime/sitespeed.io, each with the tool's own numbers.
// A profile is a rate each way and a round-trip time, which mm-preset applies as a constant-rate
// mm-link inside an mm-delay of half the round trip each way; none of them sets loss.
//
// Conversions, where the tools differ from packets on a link:
// - DevTools and Lighthouse's "devtools" throttling add latency per request (the nominal RTT
//   times a factor, for the round trips of a connection's set-up), not per packet: a profile takes
//   the round trip the tool states (Lighthouse's 150 ms, not its 562.5 ms request latency), and
//   the rates DevTools applies (nominal times its factor, 0.8 or 0.9);
// - Lighthouse counts a kbps as 1024 bit/s; the others 1000;
// - WebPageTest's latency and browsertime's rtt are round trips (sitespeed.io's throttle applies
//   half of it each way), as here.
// CPU slowdowns (Lighthouse's 4x) are not network settings and are left out.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct NetworkPreset {
  std::string name;  // tool:profile, lower case
  double down_bps, up_bps, rtt_ms;
  std::string source;  // where the numbers are from
};

const std::vector<NetworkPreset>& network_presets();
// By name, case-insensitive ("wpt:3G"); nullopt if there is none.
std::optional<NetworkPreset> find_network_preset(std::string_view name);

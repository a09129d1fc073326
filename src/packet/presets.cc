// SPDX-License-Identifier: GPL-3.0-or-later
#include "packet/presets.hh"

#include "util/text.hh"

namespace {
constexpr double k = 1000, kibi = 1024, M = 1e6;
}  // namespace

const std::vector<NetworkPreset>& network_presets() {
  static const std::vector<NetworkPreset> presets = {
      // Chrome DevTools, front_end/core/sdk/NetworkManager.ts: nominal rates times 0.8 (3G) or
      // 0.9 (4G); latency 400, 150, 60 ms (times 5, 3.75, 2.75 per request: not applied).
      {"devtools:slow3g", 500 * k * 0.8, 500 * k * 0.8, 400, "Chrome DevTools NetworkManager.ts (Slow 3G)"},
      {"devtools:slow4g", 1.6 * M * 0.9, 750 * k * 0.9, 150, "Chrome DevTools NetworkManager.ts (Slow 4G)"},
      {"devtools:fast4g", 9 * M * 0.9, 1.5 * M * 0.9, 60, "Chrome DevTools NetworkManager.ts (Fast 4G)"},
      // Lighthouse, core/config/constants.js (kbps of 1024 bit/s): the RTT its simulation uses and
      // the rates its DevTools throttling applies (not its 562.5 and 1125 ms request latencies).
      {"lighthouse:slow4g", 1474.56 * kibi, 675 * kibi, 150, "Lighthouse constants.js (mobileSlow4G)"},
      {"lighthouse:regular3g", 630 * kibi, 630 * kibi, 300, "Lighthouse constants.js (mobileRegular3G)"},
      {"lighthouse:desktop", 10240 * kibi, 10240 * kibi, 40, "Lighthouse constants.js (desktopDense4G)"},
      // WebPageTest, www/settings/connectivity.ini.sample: down/up and latency (a round trip).
      {"wpt:cable", 5 * M, 1 * M, 28, "WebPageTest connectivity.ini (Cable)"},
      {"wpt:dsl", 1.5 * M, 384 * k, 50, "WebPageTest connectivity.ini (DSL)"},
      {"wpt:fios", 20 * M, 5 * M, 4, "WebPageTest connectivity.ini (FIOS)"},
      {"wpt:dial", 49 * k, 30 * k, 120, "WebPageTest connectivity.ini (Dial)"},
      {"wpt:3g", 1.6 * M, 768 * k, 300, "WebPageTest connectivity.ini (3G)"},
      {"wpt:3gfast", 1.6 * M, 768 * k, 150, "WebPageTest connectivity.ini (3GFast)"},
      {"wpt:3gslow", 780 * k, 330 * k, 200, "WebPageTest connectivity.ini (3GSlow)"},
      {"wpt:edge", 240 * k, 200 * k, 840, "WebPageTest connectivity.ini (Edge)"},
      {"wpt:2g", 35 * k, 32 * k, 1300, "WebPageTest connectivity.ini (2G)"},
      // browsertime, lib/connectivity/trafficShapeParser.js: down/up kbps and rtt (a round trip).
      {"browsertime:3g", 1600 * k, 768 * k, 150, "browsertime trafficShapeParser.js (3g)"},
      {"browsertime:3gfast", 1600 * k, 768 * k, 75, "browsertime trafficShapeParser.js (3gfast)"},
      {"browsertime:3gslow", 400 * k, 400 * k, 200, "browsertime trafficShapeParser.js (3gslow)"},
      {"browsertime:2g", 280 * k, 256 * k, 400, "browsertime trafficShapeParser.js (2g)"},
      {"browsertime:cable", 5000 * k, 1000 * k, 14, "browsertime trafficShapeParser.js (cable)"},
      {"browsertime:dsl", 1500 * k, 384 * k, 25, "browsertime trafficShapeParser.js (dsl)"},
      {"browsertime:4g", 9000 * k, 9000 * k, 85, "browsertime trafficShapeParser.js (4g)"},
      {"browsertime:lte", 12000 * k, 12000 * k, 35, "browsertime trafficShapeParser.js (lte)"},
      {"browsertime:edge", 240 * k, 200 * k, 420, "browsertime trafficShapeParser.js (edge)"},
      {"browsertime:dial", 49 * k, 30 * k, 60, "browsertime trafficShapeParser.js (dial)"},
      {"browsertime:fois", 20000 * k, 5000 * k, 2, "browsertime trafficShapeParser.js (fois, its spelling)"},
  };
  return presets;
}

std::optional<NetworkPreset> find_network_preset(std::string_view name) {
  const std::string wanted = ascii_lowercase(name);
  for (const NetworkPreset& p : network_presets())
    if (p.name == wanted) return p;
  return std::nullopt;
}

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the queue disciplines share: the size limits of a queue (bytes, packets, or both) and
// how their parameters are printed in a link log's header.
#include <cstddef>
#include <cstdint>
#include <iomanip>
#include <sstream>
#include <string>

constexpr uint32_t kMtu = 1500;

// A parameter in milliseconds as the log header shows it (e.g. "5", "2.5").
inline std::string format_ms(double ms) {
  std::ostringstream s;
  s << std::setprecision(12) << ms;  // 3600000 as such, not 3.6e+06; 2.5 as 2.5
  return s.str();
}

struct QueueLimits {
  uint64_t bytes = 0;    // 0: no limit
  uint64_t packets = 0;  // 0: no limit
  bool exceeded(size_t queued_bytes, size_t queued_packets) const {
    return (bytes && queued_bytes > bytes) || (packets && queued_packets > packets);
  }
  std::string describe() const {
    std::string s;
    if (bytes) s += "bytes=" + std::to_string(bytes);
    if (packets) s += std::string(s.empty() ? "" : ", ") + "packets=" + std::to_string(packets);
    return s;
  }
};

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the kernel measured on a TCP connection (TCP_INFO), in a file of its own: glibc's
// <netinet/tcp.h> has no tcpi_min_rtt, and <linux/tcp.h>, which has it, cannot be included
// beside it.
#include <cstdint>
#include <optional>

// The smallest round trip the kernel has measured on the connection (its handshake included),
// in microseconds; nullopt before any sample or for a socket that is not TCP.
std::optional<uint64_t> tcp_min_rtt_us(int fd);

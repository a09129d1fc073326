// SPDX-License-Identifier: GPL-3.0-or-later
// TCP_INFO's fields glibc does not declare (tcp_info.hh).
#include "util/tcp_info.hh"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>

std::optional<uint64_t> tcp_min_rtt_us(int fd) {
  tcp_info info{};
  socklen_t length = sizeof info;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) < 0 ||
      length < offsetof(tcp_info, tcpi_min_rtt) + sizeof info.tcpi_min_rtt || info.tcpi_min_rtt == 0 ||
      info.tcpi_min_rtt == ~0u)
    return std::nullopt;
  return info.tcpi_min_rtt;
}

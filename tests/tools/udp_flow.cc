// SPDX-License-Identifier: GPL-3.0-or-later
// udp-flow: a smooth UDP flow with a chosen ECN field, and its receiver measuring each
// datagram's one-way delay and ECN field, for the integration tests of the queues' ECN marking
// (tests/integration/ecn.sh). Sender and receiver run on one machine (in different network
// namespaces), so CLOCK_MONOTONIC, which namespaces share, times the trip.
//   udp-flow send HOST PORT MBIT SIZE SECONDS TOS
//       datagrams of SIZE bytes of UDP payload at MBIT Mbit/s of IP packets, evenly spaced (an
//       absolute deadline each, so that no burst makes up for a late one), with IP_TOS TOS
//       (its low two bits: ECN); each carries its number and when it was sent
//   udp-flow receive PORT [LATE-MS]
//       until SIGTERM (delays from the kernel's receive timestamps), then prints "received N ce
//       C delay_p50_ms A delay_p99_ms B late L late_ce M": N datagrams, C of them with CE, the
//       50th and 99th percentiles of their one-way delays less the least one (the flow's
//       queueing: what the path adds beyond its fastest trip), and L datagrams whose queueing
//       was over LATE-MS (default 1), M of them with CE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {
int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

[[noreturn]] void die(const std::string& what) {
  std::perror(("udp-flow: " + what).c_str());
  std::exit(1);
}

int send_flow(const char* host, int port, double mbit, int size, double seconds, int tos) {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) die("socket");
  if (setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof tos) < 0) die("IP_TOS");
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host, &to.sin_addr) != 1) die(std::string("address ") + host);
  if (connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) < 0) die("connect");
  const int64_t gap = static_cast<int64_t>((size + 28) * 8 / (mbit * 1e6) * 1e9);
  std::vector<uint8_t> datagram(static_cast<size_t>(size), 0);
  const int64_t start = now_ns(), end = start + static_cast<int64_t>(seconds * 1e9);
  uint64_t number = 0;
  for (int64_t due = start; due < end; due += gap, number++) {
    const timespec at{static_cast<time_t>(due / 1000000000), static_cast<long>(due % 1000000000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, nullptr) == EINTR) {
    }
    const int64_t sent = now_ns();
    std::memcpy(datagram.data(), &number, 8);
    std::memcpy(datagram.data() + 8, &sent, 8);
    (void)send(fd, datagram.data(), datagram.size(), 0);  // a full buffer is a drop, as on a link
  }
  return 0;
}

volatile sig_atomic_t stop = 0;
void on_term(int) { stop = 1; }

int receive_flow(int port, double late_ms) {
  signal(SIGTERM, on_term);
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) die("socket");
  const int one = 1, buffer = 8 << 20;
  setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof one);
  // The kernel's time of arrival (CLOCK_REALTIME), not this process's wake-up: the delays are
  // the path's, without the receiver's scheduling.
  setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(fd, reinterpret_cast<sockaddr*>(&at), sizeof at) < 0) die("bind");
  std::vector<int64_t> delays;
  std::vector<bool> marked;
  uint64_t ce = 0;
  uint8_t data[65536];
  char control[128];
  while (!stop) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    for (;;) {
      iovec iov{data, sizeof data};
      msghdr msg{};
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      const ssize_t n = recvmsg(fd, &msg, MSG_DONTWAIT);
      if (n < 16) break;
      int64_t arrived = now_ns(), sent;
      std::memcpy(&sent, data + 8, 8);
      bool is_ce = false;
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS && (*CMSG_DATA(c) & 3) == 3) is_ce = true;
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
          timespec kernel;
          std::memcpy(&kernel, CMSG_DATA(c), sizeof kernel);
          // Realtime to monotonic: the two clocks' difference now (they do not drift apart
          // within a test).
          timespec real, mono;
          clock_gettime(CLOCK_REALTIME, &real);
          clock_gettime(CLOCK_MONOTONIC, &mono);
          const int64_t offset = (static_cast<int64_t>(real.tv_sec) - mono.tv_sec) * 1000000000 + real.tv_nsec - mono.tv_nsec;
          arrived = static_cast<int64_t>(kernel.tv_sec) * 1000000000 + kernel.tv_nsec - offset;
        }
      }
      delays.push_back(arrived - sent);
      marked.push_back(is_ce);
      ce += is_ce;
    }
  }
  std::vector<int64_t> sorted = delays;
  std::sort(sorted.begin(), sorted.end());
  auto percentile = [&](double q) {
    if (sorted.empty()) return 0.0;
    const size_t k = std::min(sorted.size() - 1, static_cast<size_t>(q * static_cast<double>(sorted.size())));
    return static_cast<double>(sorted[k] - sorted.front()) / 1e6;
  };
  uint64_t late = 0, late_ce = 0;
  for (size_t i = 0; i < delays.size(); i++) {
    if (static_cast<double>(delays[i] - sorted.front()) / 1e6 > late_ms) {
      late++;
      late_ce += marked[i];
    }
  }
  std::printf("received %zu ce %llu delay_p50_ms %.3f delay_p99_ms %.3f late %llu late_ce %llu\n", delays.size(),
              static_cast<unsigned long long>(ce), percentile(0.5), percentile(0.99),
              static_cast<unsigned long long>(late), static_cast<unsigned long long>(late_ce));
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc == 8 && std::strcmp(argv[1], "send") == 0)
    return send_flow(argv[2], std::atoi(argv[3]), std::atof(argv[4]), std::atoi(argv[5]), std::atof(argv[6]),
                     std::atoi(argv[7]));
  if ((argc == 3 || argc == 4) && std::strcmp(argv[1], "receive") == 0)
    return receive_flow(std::atoi(argv[2]), argc == 4 ? std::atof(argv[3]) : 1.0);
  std::fprintf(stderr, "usage: udp-flow send HOST PORT MBIT SIZE SECONDS TOS | udp-flow receive PORT [LATE-MS]\n");
  return 2;
}

// SPDX-License-Identifier: GPL-3.0-or-later
// bench/models' probe: timestamped UDP packets through a shell, and their receiver.
//   model-probe send HOST PORT COUNT INTERVAL-US   COUNT packets, one every INTERVAL-US
//   model-probe receive PORT IDLE-MS               prints "SEQ SENT-NS RECEIVED-NS" per packet
//                                                  until IDLE-MS pass without one
// Both sides read CLOCK_MONOTONIC, which every namespace of the machine shares: the difference
// is the packet's one-way delay.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {
int64_t now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

struct Probe {
  uint64_t seq;
  int64_t sent;
};

int send_packets(const char* host, int port, long count, long interval_us) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, host, &to.sin_addr) != 1) {
    std::fprintf(stderr, "model-probe: %s is not an IPv4 address\n", host);
    return 2;
  }
  char payload[200] = {};
  int64_t next = now_ns();
  for (long i = 0; i < count; i++) {
    next += interval_us * 1000;
    while (now_ns() < next) {
      const int64_t left = next - now_ns();
      if (left > 200'000) {
        timespec wait{0, static_cast<long>(left - 100'000)};
        nanosleep(&wait, nullptr);
      }
    }
    Probe p{static_cast<uint64_t>(i), now_ns()};
    std::memcpy(payload, &p, sizeof p);
    ::sendto(fd, payload, sizeof payload, 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
  }
  return 0;
}

int receive_packets(int port, int idle_ms) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  int size = 8 << 20;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&at), sizeof at) != 0) {
    std::perror("model-probe: bind");
    return 1;
  }
  std::printf("listening\n");
  std::fflush(stdout);
  bool any = false;
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, any ? idle_ms : 60'000) <= 0) break;
    char buffer[2048];
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    const int64_t received = now_ns();
    if (n < static_cast<ssize_t>(sizeof(Probe))) continue;
    Probe probe;
    std::memcpy(&probe, buffer, sizeof probe);
    std::printf("%llu %lld %lld\n", static_cast<unsigned long long>(probe.seq), static_cast<long long>(probe.sent),
                static_cast<long long>(received));
    any = true;
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "send" && argc == 6)
    return send_packets(argv[2], std::atoi(argv[3]), std::atol(argv[4]), std::atol(argv[5]));
  if (mode == "receive" && argc == 4) return receive_packets(std::atoi(argv[2]), std::atoi(argv[3]));
  std::fprintf(stderr, "usage: model-probe send HOST PORT COUNT INTERVAL-US | receive PORT IDLE-MS\n");
  return 2;
}

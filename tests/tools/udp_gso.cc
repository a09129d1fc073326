// SPDX-License-Identifier: GPL-3.0-or-later
// udp-gso: UDP sent as the kernel's segmentation offload sends it (UDP_SEGMENT: one send() of
// many datagrams), and received with the list of what arrived, for the integration tests of
// TUN offloads (tests/integration/offload.sh).
//   udp-gso send HOST PORT DATAGRAMS SIZE BURST
//       DATAGRAMS datagrams of SIZE bytes, BURST per send(); each starts with its number
//   udp-gso receive PORT
//       on SIGTERM, takes what is still queued and prints "received N digest D": N datagrams, D a
//       hash of their numbers in order of arrival (equal digests: the same ones arrived). A
//       shell writes each datagram into the receiving socket within its write(), so once the
//       sending shell has exited, everything it carried is queued here.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

namespace {
int usage() {
  std::fprintf(stderr, "usage: udp-gso send HOST PORT DATAGRAMS SIZE BURST | udp-gso receive PORT\n");
  return 2;
}

int send_datagrams(const char* host, int port, long datagrams, long size, long burst) {
  if (size < 4 || size > 1472 || burst < 1 || burst > 40 || datagrams < 1) return usage();
  const int sock = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, host, &to.sin_addr) != 1) return usage();
  if (::connect(sock, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    std::perror("udp-gso: connect");
    return 1;
  }
  const int segment = static_cast<int>(size);
  if (::setsockopt(sock, SOL_UDP, UDP_SEGMENT, &segment, sizeof segment) != 0) {
    std::perror("udp-gso: UDP_SEGMENT");
    return 1;
  }
  std::vector<uint8_t> buffer(static_cast<size_t>(size * burst));
  for (long first = 0; first < datagrams; first += burst) {
    const long n = std::min(burst, datagrams - first);
    for (long i = 0; i < n; i++) {
      const uint32_t number = htonl(static_cast<uint32_t>(first + i));
      std::memcpy(&buffer[static_cast<size_t>(i * size)], &number, 4);
    }
    // Paced a little (1 ms a burst): what is measured is the shells' drops, not a full queue's.
    if (::send(sock, buffer.data(), static_cast<size_t>(n * size), 0) < 0) {
      std::perror("udp-gso: send");
      return 1;
    }
    ::usleep(1000);
  }
  return 0;
}

int receive_datagrams(int port) {
  const int sock = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_port = htons(static_cast<uint16_t>(port));
  int size = 8 << 20;
  ::setsockopt(sock, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size);
  if (::bind(sock, reinterpret_cast<sockaddr*>(&at), sizeof at) != 0) {
    std::perror("udp-gso: bind");
    return 1;
  }
  // SIGTERM is blocked but while ppoll() waits, so that it can never come unnoticed.
  sigset_t term, waiting;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigprocmask(SIG_BLOCK, &term, &waiting);
  struct sigaction ignore {};
  ignore.sa_handler = [](int) {};
  ::sigaction(SIGTERM, &ignore, nullptr);
  std::printf("listening\n");
  std::fflush(stdout);
  uint64_t digest = 14695981039346656037ull, received = 0;
  bool ending = false;
  for (;;) {
    pollfd p{sock, POLLIN, 0};
    if (!ending && ::ppoll(&p, 1, nullptr, &waiting) < 0) ending = true;  // SIGTERM came
    uint8_t datagram[2048];
    const ssize_t n = ::recv(sock, datagram, sizeof datagram, MSG_DONTWAIT);
    if (n < 0) {
      if (ending) break;  // all that was queued is taken
      continue;
    }
    if (n < 4) continue;
    received++;
    for (int i = 0; i < 4; i++) digest = (digest ^ datagram[i]) * 1099511628211ull;
  }
  std::printf("received %llu digest %016llx\n", static_cast<unsigned long long>(received),
              static_cast<unsigned long long>(digest));
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc == 7 && std::string(argv[1]) == "send")
    return send_datagrams(argv[2], std::atoi(argv[3]), std::atol(argv[4]), std::atol(argv[5]), std::atol(argv[6]));
  if (argc == 3 && std::string(argv[1]) == "receive") return receive_datagrams(std::atoi(argv[2]));
  return usage();
}

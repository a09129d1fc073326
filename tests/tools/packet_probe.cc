// SPDX-License-Identifier: GPL-3.0-or-later
// packet-probe: what crosses the network devices of the current namespace while a command runs,
// seen through a packet socket (no tcpdump): the integration tests of TUN offloads
// (tests/integration/offload.sh) look at the sizes of the packets a shell's devices carry.
//   packet-probe DEVICE -- COMMAND...
// DEVICE is a name, or a prefix ending in '*' (delay-*: a shell's outer device, whose name has
// the shell's pid). Runs COMMAND, then prints, on standard error:
//   packet-probe: DEVICE packets N largest BYTES above-1500 K
// and exits with COMMAND's status. Only IPv4 TCP and UDP packets are counted.
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  if (argc < 4 || std::string(argv[2]) != "--") {
    std::fprintf(stderr, "usage: packet-probe DEVICE -- COMMAND...\n");
    return 2;
  }
  std::string device = argv[1];
  const bool prefix = !device.empty() && device.back() == '*';
  if (prefix) device.pop_back();

  const int sock = ::socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, htons(ETH_P_ALL));
  if (sock < 0) {
    std::perror("packet-probe: packet socket");
    return 1;
  }
  int buffer = 8 << 20;
  ::setsockopt(sock, SOL_SOCKET, SO_RCVBUFFORCE, &buffer, sizeof buffer);

  const pid_t child = ::fork();
  if (child == 0) {
    ::execvp(argv[3], argv + 3);
    std::perror(argv[3]);
    _exit(127);
  }
  const int exited = static_cast<int>(::syscall(SYS_pidfd_open, child, 0));
  unsigned long packets = 0, above = 0, largest = 0;
  int matched_index = -1;
  int status = 0;
  for (;;) {
    // Woken by a packet or by the command's end (its pidfd), never by a clock.
    pollfd p[2] = {{sock, POLLIN, 0}, {exited, POLLIN, 0}};
    ::poll(p, exited >= 0 ? 2 : 1, exited >= 0 ? -1 : 20);
    for (;;) {
      uint8_t head[64];
      sockaddr_ll from{};
      socklen_t from_length = sizeof from;
      // MSG_TRUNC: the packet's whole length, however little of it is copied.
      const ssize_t n = ::recvfrom(sock, head, sizeof head, MSG_TRUNC, reinterpret_cast<sockaddr*>(&from), &from_length);
      if (n < 0) break;
      if (from.sll_protocol != htons(ETH_P_IP) || n < 20 || (head[9] != 6 && head[9] != 17)) continue;
      if (from.sll_ifindex != matched_index) {
        char name[IF_NAMESIZE] = "";
        if (!::if_indextoname(static_cast<unsigned>(from.sll_ifindex), name)) continue;
        const std::string seen = name;
        if (prefix ? seen.compare(0, device.size(), device) != 0 : seen != device) continue;
        matched_index = from.sll_ifindex;  // one device is looked at: remember it
      }
      packets++;
      if (static_cast<unsigned long>(n) > 1500) above++;
      if (static_cast<unsigned long>(n) > largest) largest = static_cast<unsigned long>(n);
    }
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) break;
    if (done < 0 && errno != EINTR) break;
  }
  std::fprintf(stderr, "packet-probe: %s packets %lu largest %lu above-1500 %lu\n", argv[1], packets, largest, above);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

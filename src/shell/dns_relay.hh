// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// DNS for shells whose caller uses a resolver on loopback (systemd-resolved's 127.0.0.53, a
// local dnsmasq): that address does not exist inside the shell's namespace. The privileged
// set-up makes listeners on the resolver's address:53 inside (UDP and TCP) and a relay socket
// outside; the ferry process runs this relay. Queries and answers travel between the two
// halves as UDP datagrams through the emulated link, so DNS sees the link's delay and loss as
// it would with a resolver elsewhere; the outside half asks the real resolver by UDP or TCP,
// as the client did.
#include <netinet/in.h>

#include <cstdint>
#include <map>
#include <vector>

#include "shell/privileged.hh"
#include "util/address.hh"
#include "util/epoll.hh"
#include "util/file_descriptor.hh"

class DnsRelay {
 public:
  explicit DnsRelay(DnsRelaySockets sockets);
  // Adds its sockets to epoll with tags >= base_tag; handle() takes events with those tags.
  void register_with(Epoll& epoll, uint64_t base_tag);
  bool owns(uint64_t tag) const { return tag >= base_tag_; }
  void handle(uint64_t tag);

 private:
  static constexpr size_t kSlots = 4096;  // queries in flight at once
  struct Pending {
    bool used = false;
    uint16_t relay_id = 0;
    bool tcp = false;
    uint16_t client_id = 0;
    uint8_t server = 0;
    sockaddr_in client{};  // UDP client
    int connection = -1;   // TCP client
  };
  struct Connection {
    FileDescriptor fd;
    std::vector<uint8_t> buffer;
  };
  enum Kind : uint64_t { kForward, kOuter, kUdp, kTcpListen, kTcpConnection, kUpstream };

  uint64_t tag(Kind kind, uint64_t index) const { return base_tag_ + (index << 3) + kind; }
  void query_from_udp_client(size_t server);
  void accept_tcp_client(size_t server);
  void read_tcp_client(int fd);
  void send_inward_query(bool tcp, size_t server, const uint8_t* message, size_t length, const sockaddr_in* client,
                         int connection);
  void answer_from_outside();
  void query_from_inside();
  void close_connection(int fd);
  void answer_from_upstream(size_t server);
  int upstream_udp(size_t server);

  DnsRelaySockets sockets_;
  Epoll* epoll_ = nullptr;
  uint64_t base_tag_ = 0;
  uint16_t next_id_ = 1;
  std::vector<Pending> pending_ = std::vector<Pending>(kSlots);
  std::map<int, Connection> connections_;
  std::vector<FileDescriptor> upstream_;  // outside: UDP sockets connected to each resolver
  std::vector<uint8_t> buffer_ = std::vector<uint8_t>(65536 + 2);
};

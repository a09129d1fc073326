// SPDX-License-Identifier: GPL-3.0-or-later
// The HTTP/3 server's handling of what is not a client's handshake, on real sockets on 127.0.0.1:
// the datagrams a client's address sends, fed on the test's thread (Http3Server::receive_for_testing),
// and what the server sends back, read from the socket of that address.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

#include "expect.hh"
#include "quic/http3_server.hh"
#include "temp_files.hh"
#include "tls/certificate_authority.hh"
#include "util/clock.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"

namespace {
struct Fixture {
  TempDir dir;
  Http3Endpoint endpoint;
  Fixture() {
    std::filesystem::create_directories(dir.path / "ca");
    std::filesystem::permissions(dir.path / "ca", std::filesystem::perms::owner_all);
    CertificateAuthority ca = CertificateAuthority::load_or_create(dir.path / "ca");
    ca.write_leaf({"a.test", "127.0.0.1"}, dir.path / "leaf.pem", dir.path / "leaf.key");
    endpoint = {"127.0.0.1", 0, dir.path / "leaf.pem", dir.path / "leaf.key"};
  }
  Http3Server server() {
    return Http3Server(
        {endpoint}, [](const Http3Request&) { return Http3Response{}; }, Http3ServerOptions{});
  }
};

// A UDP socket on 127.0.0.1 standing for a client: its port, and what arrives within `ms`.
struct Peer {
  FileDescriptor fd{::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)};
  uint16_t port = 0;
  Peer() {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof a;
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &length) != 0)
      throw std::runtime_error("peer socket");
    port = ntohs(a.sin_port);
  }
  std::vector<uint8_t> receive(int ms) {
    pollfd p{fd.get(), POLLIN, 0};
    if (::poll(&p, 1, ms) != 1) return {};
    std::vector<uint8_t> data(65536);
    const ssize_t n = ::recv(fd.get(), data.data(), data.size(), 0);
    data.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return data;
  }
};

// A long-header datagram of `version` with 8-byte connection IDs, padded to `size`.
std::vector<uint8_t> long_header(uint32_t version, size_t size) {
  std::vector<uint8_t> d = {0xc0,
                            static_cast<uint8_t>(version >> 24),
                            static_cast<uint8_t>(version >> 16),
                            static_cast<uint8_t>(version >> 8),
                            static_cast<uint8_t>(version),
                            8};
  for (int i = 0; i < 8; i++) d.push_back(static_cast<uint8_t>(0x10 + i));
  d.push_back(8);
  for (int i = 0; i < 8; i++) d.push_back(static_cast<uint8_t>(0x20 + i));
  d.push_back(0);                                    // token length
  d.push_back(0x40 | ((size - d.size() - 2) >> 8));  // length, a 2-byte varint
  d.push_back(static_cast<uint8_t>((size - d.size() - 1) & 0xff));
  d.resize(size, 0x5a);
  return d;
}
}  // namespace

TEST(Http3Server, empty_and_garbage_datagrams_are_dropped_and_make_no_connection) {
  Fixture f;
  Http3Server server = f.server();
  Peer peer;
  server.receive_for_testing(peer.port, nullptr, 0, monotonic_now());  // ngtcp2 would assert on it
  const std::vector<uint8_t> garbage = {0x40, 1,  2,  3,  4,  5,  6,  7,  8,  9,  10,
                                        11,   12, 13, 14, 15, 16, 17, 18, 19, 20, 21};
  server.receive_for_testing(peer.port, garbage.data(), garbage.size(), monotonic_now());
  const std::vector<uint8_t> cut = {0xc0, 0, 0, 0, 1, 8, 1, 2};  // a v1 Initial cut short
  server.receive_for_testing(peer.port, cut.data(), cut.size(), monotonic_now());
  EXPECT_EQ(server.connections(), 0u);
  EXPECT_EQ(server.stats().dropped_datagrams, 3u);
  EXPECT_TRUE(peer.receive(50).empty());
}

TEST(Http3Server, an_initial_that_does_not_decrypt_costs_no_connection) {
  Fixture f;
  Http3Server server = f.server();
  Peer peer;
  const std::vector<uint8_t> initial = long_header(1, 1200);
  server.receive_for_testing(peer.port, initial.data(), initial.size(), monotonic_now());
  EXPECT_EQ(server.connections(), 0u);
  EXPECT_EQ(server.stats().connections, 0u);
  EXPECT_EQ(server.stats().dropped_datagrams, 1u);
}

TEST(Http3Server, an_unknown_version_gets_version_negotiation_only_from_a_full_size_datagram) {
  Fixture f;
  Http3Server server = f.server();
  Peer peer;
  const std::vector<uint8_t> small = long_header(0x0a0a0a0a, 600);
  server.receive_for_testing(peer.port, small.data(), small.size(), monotonic_now());
  EXPECT_TRUE(peer.receive(50).empty()) << "a small datagram must not be answered (no amplification)";
  const std::vector<uint8_t> full = long_header(0x0a0a0a0a, 1200);
  server.receive_for_testing(peer.port, full.data(), full.size(), monotonic_now());
  const std::vector<uint8_t> answer = peer.receive(2000);
  ASSERT_GE(answer.size(), 7u + 16u + 4u);
  EXPECT_EQ(answer[1] | answer[2] | answer[3] | answer[4], 0) << "version 0: Version Negotiation";
  // It echoes the connection IDs swapped and lists version 1.
  EXPECT_EQ(answer[5], 8);
  EXPECT_EQ(answer[6], 0x20);
  bool lists_v1 = false;
  for (size_t i = 5 + 1 + 8 + 1 + 8; i + 4 <= answer.size(); i += 4)
    lists_v1 = lists_v1 || (answer[i] == 0 && answer[i + 1] == 0 && answer[i + 2] == 0 && answer[i + 3] == 1);
  EXPECT_TRUE(lists_v1);
  EXPECT_EQ(server.connections(), 0u);
}

TEST(Http3Server, a_port_in_use_and_a_missing_certificate_are_errors_naming_them) {
  Fixture f;
  Peer taken;
  f.endpoint.port = taken.port;
  EXPECT_THROW_WITH(UserError, f.server(), "cannot serve HTTP/3 on UDP 127.0.0.1:" + std::to_string(taken.port));
  EXPECT_THROW_WITH(UserError, f.server(), "another program has that UDP port");
  Fixture g;
  g.endpoint.certificate = g.dir.path / "missing.pem";
  EXPECT_THROW_WITH(UserError, g.server(), "cannot load the certificate " + (g.dir.path / "missing.pem").string());
}

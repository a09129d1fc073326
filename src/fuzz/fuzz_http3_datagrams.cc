// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: the HTTP/3 server's handling of datagrams (quic/http3_server.cc): routing by
// connection ID, version negotiation, new connections from Initials, the first-datagram check,
// closing and draining, and whatever of ngtcp2's and nghttp3's parsing those reach. The input is
// a sequence of datagrams (the record format is below), fed on the fuzzer's thread to a server on 127.0.0.1 with a
// certificate from a throwaway CA. Each datagram may start with a valid QUIC v1 long header built from its first bytes,
// so that the fuzzer reaches past the header checks. Properties: the server neither crashes nor exceeds its connection
// limit, and every connection it keeps was counted.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

#include "fuzz/fuzz_check.hh"
#include "quic/http3_server.hh"
#include "tls/certificate_authority.hh"
#include "util/clock.hh"
#include "util/private_directory.hh"

namespace {
constexpr size_t kMaxConnections = 8;

Http3Server& server() {
  static Http3Server* made = [] {
    const std::filesystem::path dir = temporary_directory() / ("mm-fuzz-h3." + std::to_string(::getpid()));
    std::filesystem::create_directories(dir / "ca");
    std::filesystem::permissions(dir / "ca", std::filesystem::perms::owner_all);
    CertificateAuthority ca = CertificateAuthority::load_or_create(dir / "ca");
    ca.write_leaf({"a.test", "127.0.0.1"}, dir / "leaf.pem", dir / "leaf.key");
    Http3ServerOptions options;
    options.max_connections = kMaxConnections;
    auto* s = new Http3Server(
        {{"127.0.0.1", 0, dir / "leaf.pem", dir / "leaf.key"}},
        [](const Http3Request& r) {
          Http3Response response;
          response.body = r.method + " " + r.authority + r.path;
          return response;
        },
        options);
    std::filesystem::remove_all(dir);
    return s;
  }();
  return *made;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Http3Server& s = server();
  static Nanos now = monotonic_now();
  // Records: port (2 bytes, big-endian), time step in ms (1), flags (1: bit 0 a long header
  // first, bit 1 padding to 1200 bytes; the long header's type bits from bits 4-5), length (2,
  // big-endian, at most 1500), then that many bytes (fewer at the end of the input).
  size_t at = 0;
  while (size - at >= 6) {
    const uint16_t port = static_cast<uint16_t>(data[at] << 8 | data[at + 1]);
    now += static_cast<Nanos>(data[at + 2]) * kNanosPerMs;
    const uint8_t flags = data[at + 3];
    const size_t length = std::min<size_t>(static_cast<size_t>(data[at + 4] << 8 | data[at + 5]) % 1501, size - at - 6);
    at += 6;
    std::vector<uint8_t> datagram;
    if (flags & 1) {
      // A QUIC v1 long header with 8-byte connection IDs, taken from the record's first 16 bytes.
      datagram = {static_cast<uint8_t>(0xc0 | (flags & 0x30)), 0, 0, 0, 1, 8};
      for (size_t i = 0; i < 16; i++) {
        if (i == 8) datagram.push_back(8);
        datagram.push_back(i < length ? data[at + i] : 0);
      }
    }
    datagram.insert(datagram.end(), data + at, data + at + length);
    at += length;
    if ((flags & 2) && datagram.size() < 1200) datagram.resize(1200, 0);
    s.receive_for_testing(port, datagram.data(), datagram.size(), now);
    FUZZ_CHECK(s.connections() <= kMaxConnections);
    FUZZ_CHECK(s.connections() <= s.stats().connections);
  }
  for (int i = 0; i < 2; i++) {  // the handshake's or idle timeout, then the closing period
    now += 60 * kNanosPerSec;
    s.receive_for_testing(0, nullptr, 0, now);
  }
  FUZZ_CHECK(s.connections() == 0);
  return 0;
}

// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: the HTTP/3 server's handling of datagrams (quic/http3_server.cc): routing by
// connection ID, version negotiation, new connections from Initials, the first-datagram check,
// closing and draining, and whatever of ngtcp2's and nghttp3's parsing those reach. The input is
// a sequence of datagrams, each "port (2 bytes), time step in ms (1 byte), length (2 bytes),
// bytes", fed on the fuzzer's thread to a server on 127.0.0.1 with a certificate from a
// throwaway CA. Each datagram may start with a valid QUIC v1 long header built from its first
// bytes, so that the fuzzer reaches past the header checks. Properties: the server neither
// crashes nor exceeds its connection limit, and every connection it keeps was counted.
#include <fuzzer/FuzzedDataProvider.h>

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
  FuzzedDataProvider input(data, size);
  static Nanos now = monotonic_now();
  while (input.remaining_bytes() > 0) {
    const uint16_t port = input.ConsumeIntegral<uint16_t>();
    now += static_cast<Nanos>(input.ConsumeIntegral<uint8_t>()) * kNanosPerMs;
    std::vector<uint8_t> datagram;
    if (input.ConsumeBool()) {
      // A QUIC v1 long header (Initial, 0-RTT, Handshake or Retry) with 8-byte connection IDs.
      datagram = {static_cast<uint8_t>(0xc0 | (input.ConsumeIntegral<uint8_t>() & 0x33)), 0, 0, 0, 1, 8};
      for (int i = 0; i < 8; i++) datagram.push_back(input.ConsumeIntegral<uint8_t>());
      datagram.push_back(8);
      for (int i = 0; i < 8; i++) datagram.push_back(input.ConsumeIntegral<uint8_t>());
    }
    const std::vector<uint8_t> rest = input.ConsumeBytes<uint8_t>(input.ConsumeIntegralInRange<size_t>(0, 1500));
    datagram.insert(datagram.end(), rest.begin(), rest.end());
    // Pad like a client's first datagram (at least 1200 bytes), half the time.
    if (input.ConsumeBool() && datagram.size() < 1200) datagram.resize(1200, 0);
    s.receive_for_testing(port, datagram.data(), datagram.size(), now);
    FUZZ_CHECK(s.connections() <= kMaxConnections);
    FUZZ_CHECK(s.connections() <= s.stats().connections);
  }
  // Time passes: every connection left ends by its timers (handshake and idle), none outlives them.
  for (int i = 0; i < 2; i++) {  // the handshake's or idle timeout, then the closing period
    now += 60 * kNanosPerSec;
    s.receive_for_testing(0, nullptr, 0, now);
  }
  FUZZ_CHECK(s.connections() == 0);
  return 0;
}

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The recording proxy of mm-record. Every TCP connection leaving the record shell's namespace
// is redirected to it; it connects onward to the original destination (SO_ORIGINAL_DST) and
// relays bytes as they arrive, both ways, while an HTTP parser per direction finds the
// request/response pairs to record. TLS (detected by its first byte, on any port) is ended on
// both sides: upstream with the client's server name, towards the client with a certificate
// for that name minted by the local CA. Anything that is not HTTP/1.x (WebSocket after an
// upgrade, other protocols, unparsable bytes) is relayed unchanged and not recorded.
//
// One thread, one epoll, non-blocking sockets: thousands of connections cost memory, not
// threads. Disk writes happen on the RecordWriter's thread.
#include <netinet/in.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "recording/record_file.hh"
#include "tls/certificate_authority.hh"
#include "util/address.hh"
#include "util/epoll.hh"
#include "util/file_descriptor.hh"

struct RecordProxyOptions {
  bool verify_upstream = true;   // check servers' certificates (system CAs, or SSL_CERT_FILE)
  std::string upstream_ca_file;  // trusted for servers instead of the system's CAs (PEM bundle)
  bool verbose = false;          // a line per connection
  // HTML pages reach the client with the script of http/deterministic_page.hh (recorded as the
  // server sent them): mm-record --deterministic.
  bool deterministic = false;
  // Connections to these destinations are refused (reset), not made: mm-record --refuse-upstream,
  // which mm-cumulus-remote's loaders use so that nobody can read, through them, what only the
  // Remote Proxy's machine reaches.
  std::vector<Ipv4Net> refused_upstream;
  // A message whose body passes it is relayed whole but neither kept in memory nor recorded
  // (mm-record --max-body; 0: every body is kept and recorded).
  uint64_t max_body_bytes = 0;
};

// --refuse-upstream's LIST: comma-separated ADDRESS[/BITS] and the word "private" (loopback,
// this network, private, shared (CGNAT), link-local, IETF protocol assignments, benchmarking,
// multicast and reserved space). Throws UsageError naming the bad item.
std::vector<Ipv4Net> parse_refused_upstream(std::string_view list);

class RecordProxy {
 public:
  RecordProxy(FileDescriptor listener, CertificateAuthority& ca, RecordWriter& writer, RecordProxyOptions options);
  ~RecordProxy();
  RecordProxy(const RecordProxy&) = delete;
  RecordProxy& operator=(const RecordProxy&) = delete;

  void run();                           // until stop(); closes every connection on the way out
  void stop();                          // from any thread
  uint64_t failed_connections() const;  // upstream unreachable, or TLS failed: the client was reset
  uint64_t refused_connections() const { return refused_; }  // to a refused destination
  uint64_t not_recorded() const { return not_recorded_; }    // pairs over max_body_bytes

  struct Connection;
  struct Probe;

 private:
  void accept_all();
  void start_connection(FileDescriptor client);
  void handle(uint64_t key, uint32_t events);
  void pump(Connection& c);
  void pump_again();
  void update_interest(Connection& c);
  void close(Connection& c, bool reset);
  void fail(Connection& c, const std::string& why);

  bool sniff(Connection& c);
  bool start_server_tls(Connection& c);
  bool client_handshake(Connection& c);
  bool upstream_handshake(Connection& c);
  bool relay(Connection& c);
  void on_client_bytes(Connection& c, std::string_view data);
  void on_server_bytes(Connection& c, std::string_view data);
  bool relay_deterministic(Connection& c, std::string_view data);  // false: the client's side failed
  bool release_held(Connection& c);
  void take_requests(Connection& c, uint64_t now, bool was_idle);
  void take_responses(Connection& c, uint64_t now, bool was_idle);

  static int client_hello(struct ssl_st* ssl, int* alert, void* arg);
  // The servers' TLS sessions (tickets), one per origin: a later connection to the same origin
  // resumes, skipping the certificate's parse and verification (verified when the session was
  // made, for the same address, port and name).
  static int new_upstream_session(struct ssl_st* ssl, struct ssl_session_st* session);
  // Which protocol each HTTPS origin offers (h2 or only HTTP/1.1): the proxy speaks HTTP/1.1 to
  // servers, so a second handshake of its own, offering h2, asks; the replay then serves h2
  // where the origin did. A pair of an origin being asked waits (at most kProbeTimeout) for
  // the answer before it is written.
  void start_probe(const Connection& c);
  void handle_probe(Probe& p, uint32_t events);
  void finish_probe(uint64_t id, const std::string& alpn);
  void write_pair(const std::string& origin, RecordedPair&& pair);
  uint64_t expire_probes();  // ends those past their deadline; returns the next deadline (monotonic us, 0: none)

  FileDescriptor listener_;
  sockaddr_in listener_address_{};
  FileDescriptor stop_;
  Epoll epoll_;
  CertificateAuthority& ca_;
  RecordWriter& writer_;
  RecordProxyOptions options_;
  std::unique_ptr<struct ssl_ctx_st, void (*)(struct ssl_ctx_st*)> hello_context_;
  std::unique_ptr<struct ssl_ctx_st, void (*)(struct ssl_ctx_st*)> upstream_context_;
  std::unique_ptr<struct ssl_ctx_st, void (*)(struct ssl_ctx_st*)> probe_context_;
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> connections_;
  std::unordered_map<uint64_t, std::unique_ptr<Probe>> probes_;
  std::map<std::string, uint64_t> probing_;                // origin -> its probe's id
  std::map<std::string, std::string> origin_alpn_;         // origin -> what its probe learned ("" if nothing)
  std::map<std::string, std::vector<RecordedPair>> held_;  // origin -> pairs waiting for its probe
  std::map<std::string, std::unique_ptr<struct ssl_session_st, void (*)(struct ssl_session_st*)>>
      upstream_sessions_;        // origin -> its latest session
  std::vector<uint64_t> again_;  // connections to pump again before waiting (pump_again)
  uint64_t next_id_ = 1;
  std::string buffer_;               // one read buffer for all connections
  std::atomic<uint64_t> failed_{0};  // read by failed_connections() from another thread
  std::atomic<uint64_t> refused_{0}, not_recorded_{0};
};

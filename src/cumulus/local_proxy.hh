// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Cumulus's Local Proxy (the paper's §5.2), the proxy of mm-cumulus-local: every TCP connection
// leaving the shell's namespace is redirected to it, as to mm-record's proxy, but it answers
// the browser itself instead of relaying. TLS is ended towards the browser at once, with a
// certificate of the user's CA for the name it asks (no round trip to the origin first).
//
// A connection to the Remote Proxy is opened when the proxy starts and again after each page
// load, so that a page load finds its handshake done.
//
// A page load: the browser's navigation (a GET with Sec-Fetch-Dest: document, or the first GET
// the shell sees) empties the cache and opens a bulk connection to the Remote Proxy
// (cumulus/bulk.hh) asking for that URL; every pair the bulk brings goes into the cache
// (cumulus/bulk_cache.hh) and answers the requests waiting for it. A request the cache cannot
// answer waits while the bulk is still coming (the Remote Proxy's browser is likely to be
// fetching it); once the bulk has ended, failed, or stalled (nothing for stall_timeout), such
// requests go to their origin through the emulated link, as the browser would have sent them
// (one connection to the origin per browser connection, opened when first needed), and so do
// requests that are not GET or HEAD, and bytes that are not HTTP/1.x (relayed as they are).
//
// One thread, one epoll, non-blocking sockets; bounded: the cache (max_cache_bytes), the browser's
// connections (kMaxClients), what waits for each browser connection and for all of them (held
// requests), what is relayed (read stops at a high-water mark while the other side is slow).
// It serves only its shell's command: a connection from another address, or not redirected (to
// the listener itself, which would loop), is reset at once.
#include <netinet/in.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cumulus/bulk.hh"
#include "cumulus/bulk_cache.hh"
#include "tls/certificate_authority.hh"
#include "util/address.hh"
#include "util/clock.hh"
#include "util/epoll.hh"
#include "util/file_descriptor.hh"

struct LocalProxyOptions {
  sockaddr_in remote{};     // the Remote Proxy
  std::string remote_text;  // "ADDRESS:PORT", for messages and the bulk request's Host
  std::string token;        // the Remote Proxy's (bulk.hh)
  Ipv4 client_address;      // the only peer served: the shell's command (0: any)
  bool verify_upstream = true;
  std::string upstream_ca_file;  // trusted for origins besides the system's CAs and the user's CA
  uint64_t max_cache_bytes = 512ull << 20;
  Nanos stall_timeout = 10 * kNanosPerSec;
  bool verbose = false;
  std::function<void(const std::string&)> say;  // one line for standard error (no newline)
};

// What the proxy did, for the closing line.
struct LocalProxyTotals {
  uint64_t page_loads = 0;     // bulk requests sent
  uint64_t bulk_failures = 0;  // bulks that failed, stalled or were cut
  uint64_t bulk_pairs = 0;     // pairs the bulks brought
  uint64_t bulk_bytes = 0;     // bytes of the bulk streams
  uint64_t from_cache = 0;     // requests answered from a bulk
  uint64_t forwarded = 0;      // requests sent to their origins
  uint64_t failed_connections = 0;
  uint64_t refused_connections = 0;  // not from the shell's command, to the proxy itself, or too many
};

class LocalProxy {
 public:
  LocalProxy(FileDescriptor listener, CertificateAuthority& ca, LocalProxyOptions options);
  ~LocalProxy();
  LocalProxy(const LocalProxy&) = delete;
  LocalProxy& operator=(const LocalProxy&) = delete;

  void run();                       // until stop()
  void stop();                      // from any thread
  LocalProxyTotals totals() const;  // after run() returned

  struct Client;
  struct Bulk;

 private:
  void accept_all();
  void handle_client(Client& c, uint32_t events);
  void handle_upstream(Client& c, uint32_t events);
  void handle_bulk(uint32_t events);
  bool sniff(Client& c);
  bool read_client(Client& c);
  bool read_upstream(Client& c);
  void advance(Client& c);
  bool answer_from_cache(Client& c);
  bool forward_head(Client& c);
  bool open_upstream(Client& c);
  bool upstream_ready(Client& c);
  void start_bulk(const std::string& url, const HttpMessage& navigation);
  void end_bulk(bool ok, const std::string& why);
  void bulk_frames();
  void release_waiting();
  void update_interest(Client& c);
  void close(Client& c, const std::string& why);
  void check_stall();
  void open_ready_connection();
  void handle_ready(uint32_t events);
  size_t held_total() const;  // what every browser connection holds unanswered

  static int client_hello(struct ssl_st* ssl, int* alert, void* arg);

  FileDescriptor listener_;
  FileDescriptor stop_;
  Epoll epoll_;
  CertificateAuthority& ca_;
  LocalProxyOptions options_;
  std::unique_ptr<struct ssl_ctx_st, void (*)(struct ssl_ctx_st*)> hello_context_;
  std::unique_ptr<struct ssl_ctx_st, void (*)(struct ssl_ctx_st*)> upstream_context_;
  std::unordered_map<uint64_t, std::unique_ptr<Client>> clients_;
  std::unique_ptr<Bulk> bulk_;
  std::unique_ptr<Bulk> ready_;  // a connection to the Remote Proxy opened ahead of the next page load
  bool stopping_ = false;
  BulkCache cache_;
  bool any_navigation_ = false;
  uint64_t next_id_ = 2;  // keys id << 1 (| 1) stay clear of the listener's, the stop's and the bulk's
  std::string buffer_;
  LocalProxyTotals totals_;
};

// SPDX-License-Identifier: GPL-3.0-or-later
// A recording proxy's connection, phase by phase (record_proxy_parts.hh): the sniff of its first
// byte, the TLS handshakes (the client's paused at its hello until the server's is done and
// verified), the relaying both ways, and the parsing that finds the pairs to record
// (--deterministic's held pages included). The loop that drives it is in record_proxy.cc.
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <ctime>
#include <iostream>

#include "http/chunked.hh"
#include "http/deterministic_page.hh"
#include "http/start_line.hh"
#include "record/record_proxy_parts.hh"
#include "tls/client_hello.hh"
#include "tls/openssl_error.hh"
#include "tls/proxy_tls.hh"
#include "util/host_name.hh"
#include "util/tcp_info.hh"
#include "util/text.hh"

using namespace record_proxy;

namespace {

uint64_t now_us() {
  timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
}

// The DNS names (subjectAltName) of the certificate the server presented, as many as a pair
// keeps and only those that are host names.
std::vector<std::string> certificate_dns_names(SSL* ssl) {
  std::vector<std::string> names;
  X509* certificate = SSL_get0_peer_certificate(ssl);
  if (!certificate) return names;
  auto* general = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(certificate, NID_subject_alt_name, nullptr, nullptr));
  if (!general) return names;
  for (int i = 0; i < sk_GENERAL_NAME_num(general) && names.size() < kMaxCertificateNames; i++) {
    const GENERAL_NAME* g = sk_GENERAL_NAME_value(general, i);
    if (g->type != GEN_DNS) continue;
    const std::string name(reinterpret_cast<const char*>(ASN1_STRING_get0_data(g->d.dNSName)),
                           static_cast<size_t>(ASN1_STRING_length(g->d.dNSName)));
    if (is_certificate_name(name)) names.push_back(ascii_lowercase(name));
  }
  GENERAL_NAMES_free(general);
  return names;
}

}  // namespace

// Decides from the client's first byte what the connection carries: TLS, HTTP (a request line
// starts with an upper-case method) or something else.
bool RecordProxy::sniff(Connection& c) {
  using Phase = Connection::Phase;
  const FirstByte first = peek_first_byte(c.client.fd());
  switch (first) {
    case FirstByte::Tls:
      if (!start_client_tls(c.client, hello_context_.get(), &c)) {
        fail(c, openssl_failure("SSL_new").what());
        return false;
      }
      SSL_set_read_ahead(c.client.ssl(), 1);  // (see the constructor)
      c.phase = Phase::ClientHello;
      return true;
    case FirstByte::Http:
    case FirstByte::Other:
      c.phase = Phase::Relaying;
      c.parsing_requests = c.parsing_responses = first == FirstByte::Http;
      return true;
    case FirstByte::Closed:
      c.phase = Phase::Relaying;  // the client closed without a word: relay the close
      return true;
    case FirstByte::None:
      break;
  }
  char b;
  if (::recv(c.server.fd(), &b, 1, MSG_PEEK | MSG_DONTWAIT) >= 0) {
    c.phase = Phase::Relaying;  // the server speaks first (or closed): not HTTP
    return true;
  }
  return false;
}

int RecordProxy::client_hello(SSL* ssl, int* alert, void* arg) {
  auto* proxy = static_cast<RecordProxy*>(arg);
  auto* c = static_cast<Connection*>(SSL_get_app_data(ssl));
  if (!c->upstream_ready) {
    // First call: learn the name, then pause this handshake until the server's is done, so
    // that a server we cannot reach or verify is never impersonated.
    c->server_name = client_hello_server_name(ssl);
    return SSL_CLIENT_HELLO_RETRY;
  }
  std::string why;
  const int answer = use_minted_certificate(ssl, proxy->ca_, c->server_name, c->ip, alert, &why);
  if (answer == SSL_CLIENT_HELLO_ERROR)
    std::cerr << "mm-record: minting a certificate for " << c->where() << ": " << why << std::endl;
  return answer;
}

bool RecordProxy::start_server_tls(Connection& c) {
  SSL* ssl = SSL_new(upstream_context_.get());
  if (!ssl) {
    fail(c, openssl_failure("SSL_new").what());
    return false;
  }
  c.server.start_tls(ssl);
  start_probe(c);
  set_upstream_identity(ssl, c.server_name, c.ip);
  SSL_set_app_data(ssl, &c);  // for new_upstream_session
  if (const auto session = upstream_sessions_.find(c.origin()); session != upstream_sessions_.end())
    SSL_set_session(ssl, session->second.get());
  SSL_set_connect_state(ssl);
  return true;
}

// The client's handshake: paused after its hello (phase ClientHello) until the server's is done,
// then completed (phase ClientTls) with a certificate for the name it asked for.
bool RecordProxy::client_handshake(Connection& c) {
  using Phase = Connection::Phase;
  const TlsStream::Handshake state = c.client.handshake();
  if (state == TlsStream::Handshake::Done) {
    const unsigned char* protocol;
    unsigned int length;
    SSL_get0_alpn_selected(c.client.ssl(), &protocol, &length);
    c.alpn.assign(reinterpret_cast<const char*>(protocol), length);
    c.https = true;
    c.phase = Phase::Relaying;
    c.parsing_requests = c.parsing_responses = true;
    return true;
  }
  if (state == TlsStream::Handshake::HelloPaused && c.phase == Phase::ClientHello) {
    if (!start_server_tls(c)) return false;
    c.phase = Phase::UpstreamTls;
    return true;
  }
  if (state == TlsStream::Handshake::Blocked) return false;
  const std::string why = c.client.peer_closed() ? "the client closed the connection" : c.client.error();
  if (c.phase == Phase::ClientTls) {
    fail(c, "TLS with the client for " + c.where() + " failed: " + why + kTrustHint);
  } else {
    fail(c, "TLS with the client for " + c.where() + " failed: " + why);
  }
  return false;
}

// The server's handshake, verified (unless --insecure-upstream) before the client's goes on.
bool RecordProxy::upstream_handshake(Connection& c) {
  const TlsStream::Handshake state = c.server.handshake();
  if (state == TlsStream::Handshake::Done) {
    c.upstream_ready = true;
    c.phase = Connection::Phase::ClientTls;
    c.certificate_names = certificate_dns_names(c.server.ssl());
    c.tls_version = SSL_get_version(c.server.ssl());
    return true;
  }
  if (state == TlsStream::Handshake::Blocked) return false;
  std::string why;
  const long verify = SSL_get_verify_result(c.server.ssl());
  if (verify != X509_V_OK) {
    why = std::string("the server's certificate is not trusted: ") + X509_verify_cert_error_string(verify) +
          " (give a CA bundle with its issuer by --upstream-ca=FILE or SSL_CERT_FILE, or use --insecure-upstream)";
  } else if (c.server.peer_closed() && c.server.error().empty()) {
    why = "the server closed the connection during the handshake";
  } else {
    why = c.server.error();
  }
  fail(c, "TLS to " + c.where() + " failed: " + why + "; the client's connection was reset");
  return false;
}

bool RecordProxy::relay(Connection& c) {
  bool progress = false;
  if (!c.client.flush() || !c.server.flush()) {
    if (options_.verbose)
      std::cerr << "mm-record: " << c.where() << ": " << c.client.error() << c.server.error() << std::endl;
    close(c, true);
    return false;
  }
  // Client to server.
  if (!c.client.read_closed() && c.server.pending() < kHighWater) {
    const ssize_t n = c.client.read(buffer_.data(), buffer_.size());
    if (n > 0) {
      on_client_bytes(c, std::string_view(buffer_.data(), static_cast<size_t>(n)));
      progress = true;
    } else if (n == 0) {
      progress = true;
    } else if (n == TlsStream::kFailed) {
      close(c, true);
      return false;
    }
  }
  if (c.dead) return false;
  // Server to client.
  if (!c.server.read_closed() && c.client.pending() < kHighWater) {
    const ssize_t n = c.server.read(buffer_.data(), buffer_.size());
    if (n > 0) {
      on_server_bytes(c, std::string_view(buffer_.data(), static_cast<size_t>(n)));
      progress = true;
    } else if (n == 0 || n == TlsStream::kFailed) {
      if (c.parsing_responses) {
        const bool clean = c.responses.finish();  // ends a close-delimited body
        if (c.hold != Connection::Hold::None && !release_held(c)) {
          close(c, true);
          return false;
        }
        take_responses(c, now_us(), false);
        if (!clean && options_.verbose)
          std::cerr << "mm-record: " << c.where() << ": the server closed in the middle of a response" << std::endl;
        c.parsing_responses = false;
      }
      if (n == TlsStream::kFailed) {
        close(c, true);  // reset: pass it on
        return false;
      }
      progress = true;
    }
  }
  if (c.dead) return false;
  if (c.client.read_closed() && c.server.pending() == 0 && !c.server.write_shut()) {
    c.server.shut_write();
    progress = true;
  }
  if (c.server.read_closed() && c.client.pending() == 0 && !c.client.write_shut()) {
    c.client.shut_write();
    progress = true;
  }
  if (c.client.read_closed() && c.server.read_closed() && c.client.pending() == 0 && c.server.pending() == 0) {
    close(c, false);
    return false;
  }
  return progress;
}

// Each side's bytes go on toward the other before they are parsed for the recording: the parse
// never changes what is relayed, so it need not delay it (and a pair whose response was read
// whole is recorded even if the client has gone).
void RecordProxy::on_client_bytes(Connection& c, std::string_view data) {
  const bool sent = c.server.send(data);
  if (c.parsing_requests) {
    const uint64_t now = now_us();
    const bool was_idle = !c.requests.in_message();
    c.requests.feed(data);
    take_requests(c, now, was_idle);
    if (c.requests.state() != HttpParser::State::Http) {
      c.parsing_requests = false;
      if (c.pending.empty()) c.parsing_responses = false;
      if (options_.verbose && c.requests.state() == HttpParser::State::Error)
        std::cerr << "mm-record: " << c.where() << ": not HTTP from the client (" << c.requests.error()
                  << "); relaying unrecorded" << std::endl;
    }
  }
  if (!sent) close(c, true);
}

void RecordProxy::on_server_bytes(Connection& c, std::string_view data) {
  if (options_.deterministic && c.parsing_responses) {
    if (!relay_deterministic(c, data)) close(c, true);
    return;
  }
  const bool sent = c.client.send(data);
  if (c.parsing_responses) {
    const uint64_t now = now_us();
    const bool was_idle = !c.responses.in_message();
    c.responses.feed(data);
    take_responses(c, now, was_idle);
    if (c.responses.state() != HttpParser::State::Http) {
      c.parsing_requests = c.parsing_responses = false;
      if (options_.verbose && c.responses.state() == HttpParser::State::Error)
        std::cerr << "mm-record: " << c.where() << ": not HTTP from the server (" << c.responses.error()
                  << "); relaying unrecorded" << std::endl;
    } else if (!c.parsing_requests && c.pending.empty() && !c.responses.in_message()) {
      c.parsing_responses = false;  // the requests stopped being HTTP: nothing more to pair
    }
  }
  if (!sent) close(c, true);
}

// One response at a time (HttpParser::feed_step): its bytes go to the client as they come, but
// for the header section (held until it says what the response is) and an HTML page (held
// whole, then sent changed). The recording gets what the server sent.
bool RecordProxy::relay_deterministic(Connection& c, std::string_view data) {
  using Hold = Connection::Hold;
  bool sent = true;
  while (!data.empty()) {
    if (!c.parsing_responses) {  // not HTTP any more: the rest goes as it is
      sent = release_held(c) && sent;
      return c.client.send(data) && sent;
    }
    const uint64_t now = now_us();
    const bool was_idle = !c.responses.in_message();
    const size_t n = c.responses.feed_step(data);
    const std::string_view piece = data.substr(0, n);
    data.remove_prefix(n);
    if (c.hold == Hold::None && was_idle) c.hold = Hold::Head;
    if (c.hold == Hold::None) {
      sent = c.client.send(piece) && sent;
    } else {
      c.held.append(piece);
    }
    if (c.responses.state() != HttpParser::State::Http) {
      sent = release_held(c) && sent;  // a tunnel's start, or what was not HTTP: as it came
      sent = c.client.send(data) && sent;
      data = {};
    } else if (c.responses.has_completed()) {
      sent = release_held(c) && sent;
    } else if (const HttpMessage* head = c.responses.head(); head && c.hold == Hold::Head) {
      const auto status = three_digit_status(split_status_line(head->first_line).code);
      const bool head_request =
          !c.pending.empty() && split_request_line(c.pending.front().request.first_line).method == "HEAD";
      if (status && *status >= 200 && *status != 206 && !head_request && is_html_response(head->headers)) {
        c.hold = Hold::Page;
        c.page_start_ms = (c.pending.empty() ? now : c.pending.front().start_us) / 1000;
      } else {
        sent = release_held(c) && sent;
      }
    } else if (c.hold == Hold::Page && c.held.size() > kMaxDeterministicPage) {
      if (options_.verbose)
        std::cerr << "mm-record: " << c.where() << ": an HTML page of over " << kMaxDeterministicPage
                  << " bytes goes to the client without the deterministic script" << std::endl;
      sent = release_held(c) && sent;
    } else if (c.hold == Hold::Head && !c.responses.in_message()) {
      sent = release_held(c) && sent;  // blank lines between responses
    }
    take_responses(c, now, was_idle);
    if (c.responses.state() != HttpParser::State::Http) {
      c.parsing_requests = c.parsing_responses = false;
    } else if (!c.parsing_requests && c.pending.empty() && !c.responses.in_message()) {
      c.parsing_responses = false;
    }
  }
  return sent;
}

// Sends what is held: an HTML page just completed goes with the script in it (as the server
// sent it if the script cannot go in); anything else as it came. Nothing is held after it.
bool RecordProxy::release_held(Connection& c) {
  using Hold = Connection::Hold;
  std::string out;
  if (c.hold == Hold::Page && c.responses.has_completed() && c.responses.front_completed().dropped_body_bytes == 0) {
    HttpMessage page = c.responses.front_completed().message;
    if (is_chunked(page)) {
      page.body = decoded_body(page);
      std::erase_if(page.headers, [](const HttpHeader& h) {
        return equals_ignoring_case(h.key, "Transfer-Encoding") || equals_ignoring_case(h.key, "Trailer");
      });
    }
    std::string why;
    if (add_deterministic_script(page.headers, page.body, c.page_start_ms, &why)) {
      out = page.serialize();
    } else if (!why.empty() && options_.verbose) {
      std::cerr << "mm-record: " << c.where() << ": a page goes without the deterministic script: " << why << std::endl;
    }
  }
  if (out.empty()) out = std::move(c.held);
  c.held.clear();
  c.hold = Hold::None;
  return out.empty() || c.client.send(out);
}

void RecordProxy::take_requests(Connection& c, uint64_t now, bool was_idle) {
  bool completed = false;
  while (c.requests.has_completed()) {
    HttpParser::Completed done = c.requests.pop_completed();
    const uint64_t start = (!completed && !was_idle) ? c.request_start_us : now;
    completed = true;
    c.responses.expect_response_to(split_request_line(done.message.first_line).method);
    c.pending.push_back({std::move(done.message), start, now, done.dropped_body_bytes});
  }
  if (c.requests.in_message() && (was_idle || completed)) c.request_start_us = now;
}

void RecordProxy::take_responses(Connection& c, uint64_t now, bool was_idle) {
  bool completed = false;
  while (c.responses.has_completed()) {
    HttpParser::Completed done = c.responses.pop_completed();
    const uint64_t start = (!completed && !was_idle) ? c.response_start_us : now;
    completed = true;
    if (done.interim) continue;       // 100 Continue, 103 Early Hints: relayed, the final one follows
    if (c.pending.empty()) continue;  // a response nobody asked for: relayed, nothing to pair
    Connection::PendingRequest request = std::move(c.pending.front());
    c.pending.pop_front();
    if (c.responses.upgraded()) continue;  // 101 / CONNECT: the connection is a tunnel now
    if (request.dropped_body_bytes > 0 || done.dropped_body_bytes > 0) {
      // Relayed whole, but not kept: a line for the first few, and the closing line counts them.
      if (++not_recorded_ <= 10)
        std::cerr << "mm-record: " << c.where() << ": " << printable(request.request.first_line, 200) << ": a "
                  << (request.dropped_body_bytes > 0 ? "request" : "response") << " body of "
                  << std::max(request.dropped_body_bytes, done.dropped_body_bytes) << " bytes, over --max-body ("
                  << options_.max_body_bytes << "): relayed, not recorded" << std::endl;
      continue;
    }
    RecordedPair pair;
    pair.ip = c.ip;
    pair.port = c.port;
    pair.https = c.https;
    pair.request = std::move(request.request);
    pair.response = std::move(done.message);
    pair.request_start_us = request.start_us;
    pair.request_end_us = request.end_us;
    pair.response_first_byte_us = start;
    pair.response_last_byte_us = now;
    pair.server_name = c.server_name;
    // The server's timing, from this side of the proxy only: the request's last byte went to
    // the server as it was read (before the timestamp), and the response's first byte is
    // stamped as it is read, so the proxy's work toward the client is not in them.
    pair.server_connect_us = c.connect_us;
    pair.server_certificate_names = c.certificate_names;
    pair.server_tls_version = c.tls_version;
    pair.server_rtt_us = tcp_min_rtt_us(c.server.fd());
    if (!pair.server_rtt_us) pair.server_rtt_us = c.connect_us;
    if (pair.server_rtt_us && start >= request.end_us) {
      const uint64_t wait = start - request.end_us;
      pair.server_think_us = wait > *pair.server_rtt_us ? wait - *pair.server_rtt_us : 0;
    }
    if (!c.alpn.empty()) {
      pair.protocol = c.alpn;
    } else {
      pair.protocol = ascii_lowercase(split_request_line(pair.request.first_line).version);
    }
    write_pair(c.https ? c.origin() : std::string(), std::move(pair));
    c.pairs++;
  }
  if (c.responses.in_message() && (was_idle || completed)) c.response_start_us = now;
}

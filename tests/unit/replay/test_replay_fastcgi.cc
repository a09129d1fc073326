// SPDX-License-Identifier: GPL-3.0-or-later
// The replay's FastCGI server, driven end to end by a minimal FastCGI client (the web server's
// side of the protocol) over its unix socket: answers, misses, HEAD, a web server that goes away,
// concurrent requests, and a matcher that fails.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "expect.hh"
#include "replay/replay_close.hh"
#include "replay/replay_fastcgi.hh"
#include "replay/replay_index.hh"
#include "replay_fixture.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"

using namespace replay_test;

namespace {
// ---- A minimal FastCGI client (the web server's side of the protocol) ----
constexpr uint8_t kBeginRequest = 1, kEndRequest = 3, kParams = 4, kStdin = 5, kStdout = 6;

std::string record(uint8_t type, uint16_t id, std::string_view content) {
  std::string r;
  r += static_cast<char>(1);
  r += static_cast<char>(type);
  r += static_cast<char>(id >> 8);
  r += static_cast<char>(id & 0xff);
  r += static_cast<char>(content.size() >> 8);
  r += static_cast<char>(content.size() & 0xff);
  r += static_cast<char>(0);  // padding
  r += static_cast<char>(0);
  r += content;
  return r;
}

std::string name_value_length(size_t n) {
  if (n < 128) return std::string(1, static_cast<char>(n));
  return {static_cast<char>(0x80 | (n >> 24)), static_cast<char>((n >> 16) & 0xff), static_cast<char>((n >> 8) & 0xff),
          static_cast<char>(n & 0xff)};
}

using Params = std::vector<std::pair<std::string, std::string>>;

std::string request_bytes(uint16_t id, const Params& params, bool keep_connection) {
  std::string begin = {0, 1, static_cast<char>(keep_connection ? 1 : 0), 0, 0, 0, 0, 0};  // role RESPONDER
  std::string out = record(kBeginRequest, id, begin);
  std::string encoded;
  for (const auto& [name, value] : params)
    encoded += name_value_length(name.size()) + name_value_length(value.size()) + name + value;
  out += record(kParams, id, encoded);
  out += record(kParams, id, "");
  out += record(kStdin, id, "");
  return out;
}

int connect_unix(const fs::path& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    throw std::runtime_error("connect " + path.string() + ": " + std::strerror(errno));
  }
  return fd;
}

void send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) throw std::runtime_error("send failed");
    data.remove_prefix(static_cast<size_t>(n));
  }
}

bool read_exact(int fd, char* buffer, size_t n) {
  while (n > 0) {
    const ssize_t got = ::read(fd, buffer, n);
    if (got <= 0) return false;
    buffer += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

// The application's FCGI_STDOUT up to FCGI_END_REQUEST; throws if the connection ends first.
std::string read_reply(int fd) {
  std::string out;
  for (;;) {
    unsigned char h[8];
    if (!read_exact(fd, reinterpret_cast<char*>(h), 8)) throw std::runtime_error("connection ended before END_REQUEST");
    const size_t length = (size_t{h[4]} << 8) | h[5];
    std::string content(length + h[6], '\0');
    if (!read_exact(fd, content.data(), content.size())) throw std::runtime_error("truncated record");
    if (h[1] == kStdout) out.append(content, 0, length);
    if (h[1] == kEndRequest) return out;
  }
}

std::string fcgi_request(const fs::path& socket, const Params& params) {
  const int fd = connect_unix(socket);
  std::string reply;
  try {
    send_all(fd, request_bytes(1, params, false));
    reply = read_reply(fd);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return reply;
}

Params params_for(const std::string& method, const std::string& uri, const std::string& host, bool https = false) {
  Params p = {{"REQUEST_METHOD", method},     {"REQUEST_URI", uri},        {"HTTP_HOST", host},
              {"HTTP_USER_AGENT", "UA"},      {"SERVER_ADDR", "10.0.0.1"}, {"SERVER_PORT", https ? "443" : "80"},
              {"SERVER_PROTOCOL", "HTTP/1.1"}};
  if (https) p.emplace_back("HTTPS", "on");
  return p;
}

struct CgiReply {
  std::string status;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string header(const std::string& key) const {
    for (const auto& [k, v] : headers) {
      if (equals_ignoring_case(k, key)) return v;
    }
    return "";
  }
};

CgiReply parse_cgi(const std::string& out) {
  CgiReply reply;
  const size_t end = out.find("\r\n\r\n");
  if (end == std::string::npos) throw std::runtime_error("no end of CGI headers in: " + out.substr(0, 200));
  reply.body = out.substr(end + 4);
  size_t pos = 0;
  while (pos < end) {
    size_t eol = out.find("\r\n", pos);
    if (eol > end) eol = end;
    const std::string line = out.substr(pos, eol - pos);
    const size_t colon = line.find(": ");
    if (colon == std::string::npos) throw std::runtime_error("bad CGI header line " + line);
    if (line.compare(0, colon, "Status") == 0) {
      reply.status = line.substr(colon + 2);
    } else {
      reply.headers.emplace_back(line.substr(0, colon), line.substr(colon + 2));
    }
    pos = eol + 2;
  }
  return reply;
}

// A FastCGI server's matcher answering from rec's index.
ReplayFastCgi::Matcher matcher_of(Recording& rec, ReplayOptions options = {}) {
  return [&rec, options](const ReplayRequest& r) { return rec.index->match(r, options); };
}
}  // namespace

TEST(ReplayFastCgi, replay_fastcgi_end_to_end) {
  PairSpec page = at("GET /page?v=1 HTTP/1.1", "<html>hi</html>");
  page.response_headers = {
      {"Content-Type", "text/html"}, {"Connection", "close"}, {"Set-Cookie", "a=1"}, {"Set-Cookie", "b=2"}};
  page.status_line = "HTTP/1.1 201 Created Here";
  PairSpec secure = at("GET /s HTTP/1.1", "tls", "example.com");
  secure.https = true;
  secure.port = 443;
  Recording rec({page, secure});
  const fs::path socket = rec.dir.path / "fcgi.sock";
  std::vector<std::string> logged;
  std::mutex log_mutex;
  {
    ReplayFastCgi server(matcher_of(rec), socket, 2, [&](const std::string& line) {
      std::lock_guard lock(log_mutex);
      logged.push_back(line);
    });
    struct stat st;
    ASSERT_TRUE(::lstat(socket.c_str(), &st) == 0);
    ASSERT_TRUE(S_ISSOCK(st.st_mode));
    ASSERT_EQ(st.st_mode & 0777, 0600u);
    server.start();

    const CgiReply ok = parse_cgi(fcgi_request(socket, params_for("GET", "/page?v=1", "example.com")));
    ASSERT_EQ(ok.status, std::string("201 Created Here"));
    ASSERT_EQ(ok.header("Content-Type"), std::string("text/html"));
    ASSERT_EQ(ok.header("Content-Length"), std::string("15"));
    ASSERT_EQ(ok.header("Connection"), std::string(""));
    ASSERT_EQ(ok.headers.size(), size_t{4});  // both cookies, in order
    ASSERT_EQ(ok.headers[1].second, std::string("a=1"));
    ASSERT_EQ(ok.headers[2].second, std::string("b=2"));
    ASSERT_EQ(ok.body, std::string("<html>hi</html>"));

    const CgiReply tls = parse_cgi(fcgi_request(socket, params_for("GET", "/s", "example.com:443", true)));
    ASSERT_EQ(tls.status, std::string("200 OK"));
    ASSERT_EQ(tls.body, std::string("tls"));

    const CgiReply head = parse_cgi(fcgi_request(socket, params_for("HEAD", "/nope", "example.com")));
    ASSERT_EQ(head.status, std::string("404 Not Found"));
    ASSERT_TRUE(head.body.empty());

    const CgiReply miss = parse_cgi(fcgi_request(socket, params_for("GET", "/nope", "example.com")));
    ASSERT_EQ(miss.status, std::string("404 Not Found"));
    ASSERT_TRUE(contains(miss.header("Content-Type"), "text/plain"));
    ASSERT_TRUE(contains(miss.body, "GET http://example.com/nope"));
    ASSERT_EQ(miss.header("Content-Length"), std::to_string(miss.body.size()));
    ASSERT_EQ(server.served(), uint64_t{2});
    ASSERT_EQ(server.missed(), uint64_t{2});
    server.stop();
    server.stop();  // idempotent
  }
  ASSERT_TRUE(!fs::exists(socket));  // removed on destruction
  ASSERT_EQ(logged.size(), size_t{2});
  ASSERT_TRUE(contains(logged[1], "no recorded response for GET http://example.com/nope"));
}

TEST(ReplayFastCgi, replay_fastcgi_robustness) {
  PairSpec big = at("GET /big HTTP/1.1", std::string(4 << 20, 'x'));
  Recording rec({big, at("GET /small HTTP/1.1", "small")});
  const fs::path socket = rec.dir.path / "fcgi.sock";
  ReplayFastCgi server(matcher_of(rec), socket, 2, nullptr);
  server.start();
  // A web server that goes away mid-response, twice as many times as there are threads.
  for (int i = 0; i < 4; i++) {
    const int fd = connect_unix(socket);
    send_all(fd, request_bytes(1, params_for("GET", "/big", "example.com"), false));
    char some[1000];
    ASSERT_TRUE(read_exact(fd, some, sizeof some));
    ::close(fd);
  }
  // Garbage instead of FastCGI, and a connection closed before a word.
  {
    const int fd = connect_unix(socket);
    send_all(fd, std::string(100, '\x7f'));
    ::close(fd);
    ::close(connect_unix(socket));
  }
  ASSERT_EQ(parse_cgi(fcgi_request(socket, params_for("GET", "/small", "example.com"))).body, std::string("small"));
  ASSERT_EQ(parse_cgi(fcgi_request(socket, params_for("GET", "/big", "example.com"))).body.size(), size_t{4} << 20);

  // FCGI_KEEP_CONN: several requests on one connection; then stop() with the connection idle.
  const int kept = connect_unix(socket);
  for (uint16_t id = 1; id <= 3; id++) {
    send_all(kept, request_bytes(id, params_for("GET", "/small", "example.com"), true));
    ASSERT_EQ(parse_cgi(read_reply(kept)).body, std::string("small"));
  }
  const auto before = std::chrono::steady_clock::now();
  server.stop();
  ASSERT_TRUE(std::chrono::steady_clock::now() - before < std::chrono::seconds(1));
  char byte;
  ASSERT_TRUE(::read(kept, &byte, 1) == 0);  // closed by the server
  ::close(kept);
}

TEST(ReplayFastCgi, replay_fastcgi_concurrent_requests) {
  std::vector<PairSpec> specs;
  for (int i = 0; i < 50; i++)
    specs.push_back(at("GET /item/" + std::to_string(i) + " HTTP/1.1", "body " + std::to_string(i)));
  Recording rec(specs);
  const fs::path socket = rec.dir.path / "fcgi.sock";
  ReplayFastCgi server(matcher_of(rec), socket, 8, nullptr);
  server.start();
  std::atomic<int> correct{0}, wrong{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; t++) {
    clients.emplace_back([&, t] {
      for (int i = 0; i < 200; i++) {
        const int item = (t * 200 + i) % 50;
        try {
          const CgiReply r =
              parse_cgi(fcgi_request(socket, params_for("GET", "/item/" + std::to_string(item), "example.com")));
          const std::string expected = "body " + std::to_string(item);
          (r.status == "200 OK" && r.body == expected && r.header("Content-Length") == std::to_string(expected.size())
               ? correct
               : wrong)++;
        } catch (const std::exception&) {
          wrong++;
        }
      }
    });
  }
  for (std::thread& c : clients) c.join();
  ASSERT_EQ(wrong.load(), 0);
  ASSERT_EQ(correct.load(), 1600);
  ASSERT_EQ(server.served(), uint64_t{1600});
}

TEST(ReplayFastCgi, replay_fastcgi_failing_matcher_answers_500) {
  TempDir dir;
  const fs::path socket = dir.path / "fcgi.sock";
  std::vector<std::string> logged;
  ReplayFastCgi server([](const ReplayRequest&) -> ReplayMatch { throw std::runtime_error("broken recording"); },
                       socket, 1, [&](const std::string& line) { logged.push_back(line); });
  server.start();
  const CgiReply reply = parse_cgi(fcgi_request(socket, params_for("GET", "/x", "example.com")));
  ASSERT_EQ(reply.status, std::string("500 Internal Server Error"));
  ASSERT_TRUE(contains(reply.body, "cannot answer GET /x: broken recording"));
  server.stop();
  ASSERT_EQ(logged.size(), size_t{1});
  ASSERT_EQ(server.served() + server.missed(), uint64_t{0});
}

// --timing=recorded: an answer waits its think time from the request's end, and requests wait
// side by side (each on its own thread), not one after another.
TEST(ReplayFastCgi, think_time_delays_each_answer_and_requests_wait_side_by_side) {
  PairSpec spec = at("GET /slow HTTP/1.1", "slow");
  spec.think_us = 200'000;
  Recording rec({spec});
  const fs::path socket = rec.dir.path / "fcgi.sock";
  ReplayFastCgi server(matcher_of(rec), socket, 8, nullptr);
  server.start();
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> clients;
  std::vector<std::chrono::steady_clock::duration> took(6);
  std::atomic<int> correct{0};
  for (size_t i = 0; i < took.size(); i++) {
    clients.emplace_back([&, i] {
      const auto t0 = std::chrono::steady_clock::now();
      if (parse_cgi(fcgi_request(socket, params_for("GET", "/slow", "example.com"))).body == "slow") correct++;
      took[i] = std::chrono::steady_clock::now() - t0;
    });
  }
  for (std::thread& c : clients) c.join();
  const auto all = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(correct.load(), 6);
  for (auto t : took) EXPECT_GE(t, std::chrono::milliseconds(200));  // never early
  // Side by side: six waits of 200 ms one after another would take 1.2 s.
  EXPECT_LT(all, std::chrono::milliseconds(1000));
}

TEST(ReplayFastCgi, stop_ends_a_think_time_at_once) {
  PairSpec spec = at("GET /slow HTTP/1.1", "slow");
  spec.think_us = kMaxThinkUs;
  Recording rec({spec});
  const fs::path socket = rec.dir.path / "fcgi.sock";
  ReplayFastCgi server(matcher_of(rec), socket, 2, nullptr);
  server.start();
  std::thread client([&] {
    try {
      (void)fcgi_request(socket, params_for("GET", "/slow", "example.com"));
    } catch (const std::exception&) {
      // the connection closed without an answer: what stopping does
    }
  });
  // Until the request is being answered (its think time begins), with a deadline.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (server.served() == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(server.served(), 1u) << "the request never reached the matcher";  // stop() below ends it anyway
  const auto t0 = std::chrono::steady_clock::now();
  server.stop();
  client.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));  // not the 30 s think time
}

// mm-replay --verbose's last line, one request or several.
TEST(ReplayFastCgi, summary_counts_requests_in_agreement) {
  EXPECT_EQ(replay_summary(1, 0), "1 request answered from the recording, 0 not found");
  EXPECT_EQ(replay_summary(0, 1), "0 requests answered from the recording, 1 not found");
  EXPECT_EQ(replay_summary(12, 3), "12 requests answered from the recording, 3 not found");
}

// mm-replay --unmatched=close: the FastCGI server shuts down, in the web server's process (here
// this test's, holding the server's side of a TCP connection on loopback as an Apache worker
// does), the connection the unmatched request came on; the client reads end-of-file. A request
// that was found, on another connection, leaves that one open.
TEST(ReplayFastCgi, unmatched_close_ends_the_clients_connection_in_the_web_server) {
  Recording rec({at("GET /here HTTP/1.1", "here")});
  const fs::path socket = rec.dir.path / "fcgi.sock";
  ReplayOptions close;
  close.close_unmatched = true;
  std::vector<std::string> logged;
  std::mutex log_mutex;
  ReplayFastCgi server(matcher_of(rec, close), socket, 2, [&](const std::string& line) {
    std::lock_guard lock(log_mutex);
    logged.push_back(line);
  });
  server.start();
  FileDescriptor listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  ASSERT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(listener.get(), 4), 0);
  ASSERT_EQ(::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&address), &length), 0);
  // A client connection and the web server's side of it; the client's port, as REMOTE_PORT.
  auto connect_client = [&](FileDescriptor* client, FileDescriptor* accepted) {
    *client = FileDescriptor(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    ASSERT_EQ(::connect(client->get(), reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    *accepted = FileDescriptor(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    ASSERT_GE(accepted->get(), 0);
  };
  auto port_of = [](const FileDescriptor& fd) {
    sockaddr_in local{};
    socklen_t size = sizeof local;
    ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &size);
    return std::to_string(ntohs(local.sin_port));
  };
  auto params = [&](const std::string& uri, const std::string& remote_port) {
    Params p = params_for("GET", uri, "example.com");
    for (auto& [name, value] : p)
      if (name == "SERVER_ADDR") value = "127.0.0.1";
    p.emplace_back("REMOTE_ADDR", "127.0.0.1");
    p.emplace_back("REMOTE_PORT", remote_port);
    return p;
  };
  FileDescriptor hit_client, hit_server, miss_client, miss_server;
  connect_client(&hit_client, &hit_server);
  connect_client(&miss_client, &miss_server);

  EXPECT_EQ(parse_cgi(fcgi_request(socket, params("/here", port_of(hit_client)))).body, "here");
  // The 404 still goes to the web server, whose write to the client then fails unseen.
  EXPECT_EQ(parse_cgi(fcgi_request(socket, params("/gone", port_of(miss_client)))).status.substr(0, 3), "404");
  pollfd ready{miss_client.get(), POLLIN, 0};
  ASSERT_EQ(::poll(&ready, 1, 10'000), 1) << "the client's connection did not end";
  char byte;
  EXPECT_EQ(::recv(miss_client.get(), &byte, 1, 0), 0);             // end-of-file, not data
  EXPECT_EQ(::recv(hit_client.get(), &byte, 1, MSG_DONTWAIT), -1);  // still open, nothing to read
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(::send(hit_server.get(), "x", 1, MSG_NOSIGNAL), 1);

  // No such connection (a port nothing uses): said in the log, and the 404 answers.
  EXPECT_EQ(parse_cgi(fcgi_request(socket, params("/gone", "1"))).status.substr(0, 3), "404");
  std::lock_guard lock(log_mutex);
  ASSERT_EQ(logged.size(), 3u);
  EXPECT_NE(logged[2].find("cannot close the connection of the request above (no socket of the web server's worker"),
            std::string::npos)
      << logged[2];
}

TEST(ReplayFastCgi, client_connection_of_takes_literals_and_a_port) {
  const auto v4 = client_connection_of("10.0.0.2", "54321", "10.0.0.1");
  ASSERT_TRUE(v4.has_value());
  EXPECT_EQ(v4->client_port, 54321);
  EXPECT_TRUE(client_connection_of("::1", "1", "::1").has_value());
  EXPECT_FALSE(client_connection_of("10.0.0.2", "0", "10.0.0.1").has_value());
  EXPECT_FALSE(client_connection_of("10.0.0.2", "65536", "10.0.0.1").has_value());
  EXPECT_FALSE(client_connection_of("10.0.0.2", "80x", "10.0.0.1").has_value());
  EXPECT_FALSE(client_connection_of("client.test", "80", "10.0.0.1").has_value());
  EXPECT_FALSE(client_connection_of("10.0.0.2", "80", nullptr).has_value());
}

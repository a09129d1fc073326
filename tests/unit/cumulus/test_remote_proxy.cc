// SPDX-License-Identifier: GPL-3.0-or-later
// RemoteProxy with a loader of the test's own (a shell script standing for mm-delay, mm-record
// and mm-pageload: it makes its directory, reads its line, links record files in, exits): the
// pairs stream as frames in the order they appear, then the end with the load's status; a
// failing loader's words reach the end frame; a bad request gets a 400; a client that goes away
// stops its load; a request without the token gets a 401 and loads nothing; connections that say
// nothing time out and cannot keep the token's holders out; the byte caps. Loopback only.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>

#include "cumulus/bulk.hh"
#include "cumulus/remote_proxy.hh"
#include "expect.hh"
#include "loopback.hh"
#include "recording/record_file.hh"
#include "temp_files.hh"
#include "util/exception.hh"

namespace fs = std::filesystem;

namespace {

const std::string kToken = "0123456789abcdef0123456789abcdef";

RecordedPair sample_pair(const std::string& path) {
  RecordedPair p;
  p.ip = "10.0.0.1";
  p.port = 80;
  p.request.first_line = "GET " + path + " HTTP/1.1";
  p.request.headers = {{"Host", "a.test"}};
  p.response.first_line = "HTTP/1.1 200 OK";
  p.response.headers = {{"Content-Length", "4"}};
  p.response.body = "body";
  return p;
}

// Runs a RemoteProxy whose loader is `script` (sh -c SCRIPT DIR: $1 is the load's directory).
struct Harness {
  TempDir tmp;
  sockaddr_in address{};
  int stop[2] = {-1, -1};
  std::vector<std::string> said;
  std::mutex said_lock;
  std::unique_ptr<RemoteProxy> proxy;
  std::thread runner;

  explicit Harness(const std::string& script, const std::function<void(RemoteProxyOptions&)>& adjust = {}) {
    check_syscall("pipe", ::pipe(stop));
    RemoteProxyOptions options;
    options.token = kToken;
    options.listener = loopback_listener(&address);
    options.loader = {"/bin/sh", "-c", script, "loader", "{dir}", "--json={json}"};
    fs::create_directory(tmp.path / "work");
    options.work_directory = tmp.path / "work";
    options.say = [this](const std::string& line) {
      const std::lock_guard<std::mutex> hold(said_lock);
      said.push_back(line);
    };
    if (adjust) adjust(options);
    proxy = std::make_unique<RemoteProxy>(std::move(options));
    runner = std::thread([this] { proxy->run({stop[0]}); });
  }
  ~Harness() {
    (void)!::write(stop[1], "x", 1);
    runner.join();
    proxy.reset();
    ::close(stop[0]);
    ::close(stop[1]);
  }

  bool said_contains(const std::string& text) {
    const std::lock_guard<std::mutex> hold(said_lock);
    for (const std::string& line : said)
      if (line.find(text) != std::string::npos) return true;
    return false;
  }

  // From `from` (a loopback address: 127.0.0.1 unless told).
  FileDescriptor connect_client(const char* from = nullptr) {
    FileDescriptor fd(check_syscall("socket", ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)));
    if (from) {
      sockaddr_in source{};
      source.sin_family = AF_INET;
      ::inet_pton(AF_INET, from, &source.sin_addr);
      check_syscall("bind", ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&source), sizeof source));
    }
    check_syscall("connect", ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address));
    return fd;
  }

  // Everything the proxy sends until it closes (at most 20 s).
  static std::string read_all(int fd) {
    std::string all;
    char buffer[65536];
    for (;;) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 20000) <= 0) break;
      const ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n <= 0) break;
      all.append(buffer, static_cast<size_t>(n));
    }
    return all;
  }
};

std::vector<BulkDecoder::Frame> frames_of(const std::string& stream, std::string* error) {
  BulkDecoder decoder;
  std::vector<BulkDecoder::Frame> frames;
  if (!decoder.feed(stream)) *error = decoder.error();
  while (auto frame = decoder.next()) frames.push_back(std::move(*frame));
  return frames;
}

std::string load_request(const std::string& url, const std::string& token = kToken) {
  return encode_bulk_request({url, "TestAgent/1", "de", token}, "127.0.0.1:1");
}

// The frames of one load of `url` from a new client of h's proxy, until it closes.
std::vector<BulkDecoder::Frame> load_frames(Harness& h, const std::string& url, std::string* error) {
  FileDescriptor client = h.connect_client();
  const std::string request = load_request(url);
  if (::write(client.get(), request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    *error = "the request could not be sent";
    return {};
  }
  return frames_of(Harness::read_all(client.get()), error);
}

void send_all(int fd, const std::string& bytes) {
  ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
}

// What mm-pageload --json=FILE writes of a load ($2 is --json=FILE): ok, PLT 42.4 ms.
std::string ok_result() {
  return "printf '%s' '[{\"url\":\"http://a.test/\",\"run\":1,\"status\":\"ok\",\"plt_ms\":42.4}]' > "
         "\"${2#--json=}\"";
}

// A loader that links a pair of `body_bytes` bytes COUNT times, then says its load was ok.
std::string pairs_loader(const fs::path& dir, size_t body_bytes, int count) {
  RecordedPair pair = sample_pair("/big");
  pair.response.body = std::string(body_bytes, 'x');
  pair.response.headers = {{"Content-Length", std::to_string(body_bytes)}};
  std::ofstream(dir / "pair", std::ios::binary) << serialize_pair(pair);
  return "mkdir \"$1\" && read -r line && for i in $(seq " + std::to_string(count) + "); do cp " +
         (dir / "pair").string() +
         " \"$1/.tmp\" && mv \"$1/.tmp\" \"$1/save.$i\"; done;"
         " " +
         ok_result();
}
}  // namespace

TEST(RemoteProxy, streams_each_pair_then_the_end_with_the_loads_status) {
  TempDir files;
  for (const std::string name : {"one", "two", "three"}) {
    std::ofstream(files.path / name, std::ios::binary) << serialize_pair(sample_pair("/" + name));
  }
  // The loader reports its line, then links the records in one after the other, as mm-record does.
  Harness h("mkdir \"$1\" && read -r line && printf '%s\\n' \"$line\" > " + (files.path / "line").string() +
            " && for f in one two three; do cp " + files.path.string() +
            "/$f \"$1/.tmp\" && mv \"$1/.tmp\" \"$1/save.$f\";"
            " sleep 0.05; done; " +
            ok_result());
  FileDescriptor client = h.connect_client();
  const std::string request = load_request("http://a.test/");
  ASSERT_EQ(::write(client.get(), request.data(), request.size()), static_cast<ssize_t>(request.size()));
  std::string error;
  const std::vector<BulkDecoder::Frame> frames = frames_of(Harness::read_all(client.get()), &error);
  ASSERT_TRUE(error.empty()) << error;
  ASSERT_EQ(frames.size(), 4u);
  const char* order[] = {"/one", "/two", "/three"};
  for (size_t i = 0; i < 3; i++) {
    ASSERT_EQ(frames[i].kind, BulkFrameKind::Pair);
    std::string why;
    std::optional<RecordedPair> pair = parse_owned_pair(std::string(frames[i].payload), &why);
    ASSERT_TRUE(pair) << why;
    EXPECT_EQ(pair->request.first_line, std::string("GET ") + order[i] + " HTTP/1.1");
  }
  ASSERT_EQ(frames[3].kind, BulkFrameKind::End);
  const auto end = parse_bulk_end(frames[3].payload);
  EXPECT_EQ(end.at("status"), "ok");
  EXPECT_EQ(end.at("pairs"), "3");
  EXPECT_EQ(end.at("load_ms"), "42");
  EXPECT_TRUE(end.contains("cpu_ms"));
  std::string line;
  std::getline(std::ifstream(files.path / "line"), line);
  EXPECT_EQ(line, "http://a.test/\tTestAgent/1\tde");
  // The load's directory is gone; the next loader waits ready.
  EXPECT_FALSE(fs::exists(h.tmp.path / "work" / "load-1"));
}

TEST(RemoteProxy, a_failing_loader_is_an_error_end_with_its_words) {
  Harness h("mkdir \"$1\"; read -r line; echo 'chromium: cannot open display' >&2; exit 3");
  std::string error;
  const std::vector<BulkDecoder::Frame> frames = load_frames(h, "https://b.test/", &error);
  ASSERT_EQ(frames.size(), 1u) << error;
  const auto end = parse_bulk_end(frames[0].payload);
  EXPECT_EQ(end.at("status"), "error");
  EXPECT_EQ(end.at("reason"), "the loader exited with status 3: chromium: cannot open display");
}

TEST(RemoteProxy, a_load_that_timed_out_says_so_from_mm_pageloads_json) {
  // Its words on standard error are not what the proxy reads: the --json file is.
  Harness h(
      "mkdir \"$1\"; read -r line; echo 'mm-pageload: [1/1] http://b.test/ run 1: ok  PLT 7 ms' >&2;"
      " printf '%s' '[{\"url\":\"http://b.test/\",\"run\":1,\"status\":\"timeout\",\"reason\":\"no load "
      "event within 30 s\"}]' > \"${2#--json=}\"; exit 1");
  std::string error;
  const std::vector<BulkDecoder::Frame> frames = load_frames(h, "http://b.test/", &error);
  ASSERT_EQ(frames.size(), 1u) << error;
  const auto end = parse_bulk_end(frames[0].payload);
  EXPECT_EQ(end.at("status"), "timeout");
  EXPECT_EQ(end.at("reason"), "timeout (no load event within 30 s)");
  EXPECT_FALSE(end.contains("load_ms"));
  EXPECT_FALSE(fs::exists(h.tmp.path / "work" / "load-1.json"));
}

TEST(RemoteProxy, a_pair_file_it_cannot_read_is_left_out_with_a_line) {
  TempDir files;
  std::ofstream(files.path / "one", std::ios::binary) << serialize_pair(sample_pair("/one"));
  // save.0 is a directory: no pair can be read from it.
  Harness h("mkdir \"$1\" && read -r line && mkdir \"$1/save.0\" && cp " + (files.path / "one").string() +
            " \"$1/.tmp\" && mv \"$1/.tmp\" \"$1/save.1\"; " + ok_result());
  std::string error;
  const std::vector<BulkDecoder::Frame> frames = load_frames(h, "http://a.test/", &error);
  ASSERT_EQ(frames.size(), 2u) << error;
  const auto end = parse_bulk_end(frames[1].payload);
  EXPECT_EQ(end.at("pairs"), "1");
  EXPECT_EQ(end.at("left_out"), "1");
  EXPECT_TRUE(h.said_contains("save.0 could not be read (not a regular file): left out"));
}

TEST(RemoteProxy, a_request_that_is_not_a_load_gets_400) {
  Harness h("mkdir \"$1\"; read -r line");
  FileDescriptor client = h.connect_client();
  const std::string request = "GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(::write(client.get(), request.data(), request.size()), static_cast<ssize_t>(request.size()));
  const std::string answer = Harness::read_all(client.get());
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 400 Bad Request\r\n")) << answer;
  EXPECT_NE(answer.find("not /cumulus/1/load"), std::string::npos);
}

TEST(RemoteProxy, a_client_that_goes_away_stops_its_load) {
  TempDir files;
  const fs::path marker = files.path / "stopped";
  // The loader would take a minute; SIGTERM ends it (and it says so).
  Harness h("trap 'touch " + marker.string() +
            "; kill $!; exit 143' TERM; mkdir \"$1\"; read -r line; sleep 60 & wait");
  {
    FileDescriptor client = h.connect_client();
    const std::string request = load_request("http://slow.test/");
    ASSERT_EQ(::write(client.get(), request.data(), request.size()), static_cast<ssize_t>(request.size()));
    char head[16];
    pollfd p{client.get(), POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 10000), 1);
    ASSERT_GT(::read(client.get(), head, sizeof head), 0);  // the load began
    // ... and its loader is past its trap (a loader killed earlier dies at once, unseen).
    for (int i = 0; i < 200 && !fs::exists(h.tmp.path / "work" / "load-1"); i++) ::usleep(50'000);
  }
  for (int i = 0; i < 200 && !fs::exists(marker); i++) ::usleep(50'000);
  EXPECT_TRUE(fs::exists(marker));
}

// A load that begins before its loader has made its directory still streams its pairs as they
// come (the work directory's watch sees the directory made, then the directory's the files).
TEST(RemoteProxy, pairs_stream_even_when_the_directory_comes_late) {
  TempDir files;
  std::ofstream(files.path / "one", std::ios::binary) << serialize_pair(sample_pair("/late"));
  // The loader reads its line first, then makes its directory, links a pair, and waits for a
  // go file that the test makes only once the pair has reached the client.
  const fs::path go = files.path / "go";
  Harness h("read -r line && sleep 0.2 && mkdir \"$1\" && cp " + (files.path / "one").string() +
            " \"$1/.tmp\" && mv \"$1/.tmp\" \"$1/save.one\" && while [ ! -e " + go.string() +
            " ]; do sleep 0.05; done");
  FileDescriptor client = h.connect_client();
  const std::string request = load_request("http://a.test/");
  ASSERT_EQ(::write(client.get(), request.data(), request.size()), static_cast<ssize_t>(request.size()));
  BulkDecoder decoder;
  std::optional<BulkDecoder::Frame> frame;
  char buffer[65536];
  for (int i = 0; i < 200 && !frame; i++) {
    pollfd p{client.get(), POLLIN, 0};
    if (::poll(&p, 1, 50) == 1) {
      const ssize_t n = ::read(client.get(), buffer, sizeof buffer);
      ASSERT_GT(n, 0);
      ASSERT_TRUE(decoder.feed(std::string_view(buffer, static_cast<size_t>(n)))) << decoder.error();
      frame = decoder.next();
    }
  }
  std::ofstream(go) << "go\n";  // the loader may end now
  ASSERT_TRUE(frame) << "the pair did not come while the loader ran";
  EXPECT_EQ(frame->kind, BulkFrameKind::Pair);
}

TEST(RemoteProxy, a_request_without_the_token_gets_401_and_loads_nothing) {
  TempDir files;
  const fs::path line = files.path / "line";
  Harness h("mkdir \"$1\"; read -r line && printf '%s\\n' \"$line\" > " + line.string());
  for (const std::string& token : {std::string(), std::string("ffffffffffffffffffffffffffffffff"), kToken + "0"}) {
    FileDescriptor client = h.connect_client();
    send_all(client.get(), load_request("http://169.254.169.254/latest/meta-data/", token));
    const std::string answer = Harness::read_all(client.get());
    EXPECT_TRUE(answer.starts_with("HTTP/1.1 401 Unauthorized\r\n")) << answer;
    EXPECT_NE(answer.find("token"), std::string::npos);
  }
  EXPECT_FALSE(fs::exists(line)) << "a load began";
  const std::lock_guard<std::mutex> hold(h.said_lock);
  ASSERT_FALSE(h.said.empty());
  EXPECT_NE(h.said.front().find("refused a request from 127.0.0.1: no token"), std::string::npos) << h.said.front();
}

TEST(RemoteProxy, a_connection_that_sends_no_request_is_closed_with_408) {
  Harness h("mkdir \"$1\"; read -r line", [](RemoteProxyOptions& o) { o.head_timeout = 300'000'000; });
  FileDescriptor client = h.connect_client();
  const Nanos started = monotonic_now();
  const std::string answer = Harness::read_all(client.get());
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 408 Request Timeout\r\n")) << answer;
  EXPECT_LT(monotonic_now() - started, 10 * kNanosPerSec);
}

// Idle connections from many addresses fill the table; an authorised request still gets its
// load (the oldest idle one is closed for it), and one address cannot hold more than its share.
TEST(RemoteProxy, idle_connections_cannot_keep_the_tokens_holders_out) {
  TempDir files;
  Harness h(pairs_loader(files.path, 10, 1));
  std::vector<FileDescriptor> idle;
  const char* sources[] = {"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"};
  for (const char* from : sources)
    for (size_t i = 0; i < kMaxConnectionsPerPeer; i++) idle.push_back(h.connect_client(from));
  ASSERT_EQ(idle.size(), kMaxConnections);
  // One more from an address that has its share: refused at once.
  FileDescriptor extra = h.connect_client("127.0.0.2");
  EXPECT_NE(Harness::read_all(extra.get()).find("503 Service Unavailable"), std::string::npos);
  FileDescriptor client = h.connect_client();
  send_all(client.get(), load_request("http://a.test/"));
  std::string error;
  const std::vector<BulkDecoder::Frame> frames = frames_of(Harness::read_all(client.get()), &error);
  ASSERT_EQ(frames.size(), 2u) << error;
  EXPECT_EQ(parse_bulk_end(frames[1].payload).at("status"), "ok");
}

TEST(RemoteProxy, a_pair_beyond_the_cap_is_left_out_and_the_others_stream_from_their_files) {
  TempDir files;
  // Pairs of 3 MiB each, streamed in pieces (never held whole); a cap of 1 MiB leaves them out.
  {
    Harness h(pairs_loader(files.path, 3 << 20, 2));
    FileDescriptor client = h.connect_client();
    send_all(client.get(), load_request("http://a.test/"));
    std::string error;
    const std::vector<BulkDecoder::Frame> frames = frames_of(Harness::read_all(client.get()), &error);
    ASSERT_EQ(frames.size(), 3u) << error;
    std::string why;
    std::optional<RecordedPair> pair = parse_owned_pair(std::string(frames[0].payload), &why);
    ASSERT_TRUE(pair) << why;
    EXPECT_EQ(pair->response.body.size(), 3u << 20);
  }
  Harness h(pairs_loader(files.path, 3 << 20, 2), [](RemoteProxyOptions& o) { o.max_pair_bytes = 1 << 20; });
  FileDescriptor client = h.connect_client();
  send_all(client.get(), load_request("http://a.test/"));
  std::string error;
  const std::vector<BulkDecoder::Frame> frames = frames_of(Harness::read_all(client.get()), &error);
  ASSERT_EQ(frames.size(), 1u) << error;
  const auto end = parse_bulk_end(frames[0].payload);
  EXPECT_EQ(end.at("pairs"), "0");
  EXPECT_EQ(end.at("left_out"), "2");
}

TEST(RemoteProxy, a_load_whose_pairs_pass_the_cap_is_stopped_with_an_error) {
  TempDir files;
  // 40 pairs of 100 KiB against a cap of 1 MiB; the loader would then wait a minute.
  Harness h(pairs_loader(files.path, 100 << 10, 40) + "; sleep 60 & wait",
            [](RemoteProxyOptions& o) { o.max_load_bytes = 1 << 20; });
  FileDescriptor client = h.connect_client();
  send_all(client.get(), load_request("http://a.test/"));
  std::string error;
  const Nanos started = monotonic_now();
  const std::vector<BulkDecoder::Frame> frames = frames_of(Harness::read_all(client.get()), &error);
  ASSERT_FALSE(frames.empty()) << error;
  EXPECT_LT(monotonic_now() - started, 30 * kNanosPerSec);
  const auto end = parse_bulk_end(frames.back().payload);
  EXPECT_EQ(end.at("status"), "error");
  EXPECT_NE(end.at("reason").find("--max-load"), std::string::npos) << end.at("reason");
}

TEST(RemoteProxy, a_client_that_stops_reading_is_dropped_and_its_load_stopped) {
  TempDir files;
  const fs::path marker = files.path / "stopped";
  // 16 pairs of 1 MiB: more than the socket buffers take; the client reads none of it.
  Harness h("trap 'touch " + marker.string() + "; kill $!; exit 143' TERM; " + pairs_loader(files.path, 1 << 20, 16) +
                "; sleep 60 & wait",
            [](RemoteProxyOptions& o) { o.send_timeout = 500'000'000; });
  FileDescriptor client = h.connect_client();
  const int small = 4096;
  (void)::setsockopt(client.get(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  send_all(client.get(), load_request("http://a.test/"));
  for (int i = 0; i < 400 && !fs::exists(marker); i++) ::usleep(50'000);
  EXPECT_TRUE(fs::exists(marker)) << "the load was not stopped";
  const std::lock_guard<std::mutex> hold(h.said_lock);
  bool dropped = false;
  for (const std::string& line : h.said) dropped |= line.find("took nothing for") != std::string::npos;
  EXPECT_TRUE(dropped);
}

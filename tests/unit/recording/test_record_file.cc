// Recording files and HAR conversion: exact round trips, compatibility with the original
// Mahimahi's files, atomic background writing (including write errors and a full disk), and
// the conversion of browser HARs into replayable HTTP/1.1 exchanges.
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "expect.hh"
#include "recording/har.hh"
#include "recording/http_record.pb.h"
#include "recording/record_file.hh"
#include "util/exception.hh"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {
struct TempDir {
  fs::path path;
  TempDir() {
    char name[] = "/tmp/mm-record-test-XXXXXX";
    if (!::mkdtemp(name)) throw std::runtime_error("mkdtemp failed");
    path = name;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string bytes_of(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out += static_cast<char>(v);
  return out;
}

RecordedPair sample_pair(int n) {
  RecordedPair p;
  p.ip = "10.0.0." + std::to_string(n % 250 + 1);
  p.port = static_cast<uint16_t>(n % 2 ? 443 : 8080);
  p.https = n % 2;
  p.request.first_line = "GET /item/" + std::to_string(n) + "?a=1&b=two HTTP/1.1";
  p.request.headers = {{"Host", "example.com"}, {"User-Agent", "test"}, {"x-lower", "v"}};
  p.response.first_line = "HTTP/1.1 200 OK";
  p.response.headers = {{"Content-Type", "application/octet-stream"}, {"Content-Length", "9"}};
  p.response.body = std::string("bin\0ary", 7) + static_cast<char>(0xff) + std::to_string(n % 10);
  p.request_start_us = 1700000000000000ULL + static_cast<uint64_t>(n) * 1000;
  p.request_end_us = p.request_start_us + 150;
  p.response_first_byte_us = p.request_start_us + 20000;
  p.response_last_byte_us = p.request_start_us + 25000;
  p.server_name = p.https ? "example.com" : "";
  p.protocol = "http/1.1";
  return p;
}

// Protobuf wire format by hand, so the "original" file does not depend on our generated code.
std::string varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
  return out;
}
std::string field_bytes(int number, const std::string& data) {
  return varint(static_cast<uint64_t>(number) << 3 | 2) + varint(data.size()) + data;
}
std::string field_varint(int number, uint64_t v) { return varint(static_cast<uint64_t>(number) << 3) + varint(v); }
std::string original_message(const HttpMessage& m) {
  std::string out = field_bytes(1, m.first_line);
  for (const HttpHeader& h : m.headers) out += field_bytes(2, field_bytes(1, h.key) + field_bytes(2, h.value));
  return out + field_bytes(3, m.body);
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

bool any_temp_file(const fs::path& dir) {
  for (const auto& name : names_in(dir)) {
    if (name.rfind(".tmp-", 0) == 0) return true;
  }
  return false;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

std::string run_command(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return out;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  ::pclose(pipe);
  return out;
}
}  // namespace

TEST(RecordFile, record_round_trip_keeps_binary_bodies_and_our_fields) {
  RecordedPair p = sample_pair(3);
  p.request.first_line = "POST /upload HTTP/1.1";
  p.request.body = bytes_of({0, 1, 2, 0, 0xff, 0xfe, '\r', '\n', 0});
  p.request.headers.push_back({"Weird\x01", std::string("v\0al\xff", 5)});
  p.response.body = std::string(100000, '\0') + "tail";
  const std::string bytes = serialize_pair(p);
  std::string why;
  auto back = parse_pair(bytes, &why);
  ASSERT_TRUE(back.has_value());
  ASSERT_TRUE(*back == p);
  ASSERT_EQ(back->request.body.size(), size_t{9});
  ASSERT_EQ(back->response_last_byte_us, p.response_last_byte_us);
  ASSERT_EQ(back->server_name, std::string("example.com"));
  ASSERT_EQ(back->protocol, std::string("http/1.1"));
  ASSERT_EQ(back->port, uint16_t{443});
  ASSERT_TRUE(back->https);
}

TEST(RecordFile, record_original_files_parse_with_our_fields_zero) {
  HttpMessage request{"GET /a HTTP/1.1", {{"Host", "old.example"}}, ""};
  HttpMessage response{"HTTP/1.1 200 OK", {{"Content-Length", "2"}}, "hi"};
  const std::string original = field_bytes(1, "192.168.1.5") + field_varint(2, 80) + field_varint(3, 1) +
                               field_bytes(4, original_message(request)) + field_bytes(5, original_message(response));
  std::string why;
  auto pair = parse_pair(original, &why);
  ASSERT_TRUE(pair.has_value());
  ASSERT_EQ(pair->ip, std::string("192.168.1.5"));
  ASSERT_EQ(pair->port, uint16_t{80});
  ASSERT_TRUE(!pair->https);
  ASSERT_EQ(pair->request.first_line, request.first_line);
  ASSERT_EQ(pair->request.headers.at(0).value, std::string("old.example"));
  ASSERT_EQ(pair->response.body, std::string("hi"));
  ASSERT_EQ(pair->request_start_us + pair->request_end_us + pair->response_first_byte_us + pair->response_last_byte_us,
            uint64_t{0});
  ASSERT_TRUE(pair->server_name.empty() && pair->protocol.empty());
  // With nothing of ours known, we write exactly what the original writes.
  ASSERT_TRUE(serialize_pair(*pair) == original);

  // The same through the generated classes with only fields 1-5 set.
  MahimahiProtobufs::RequestResponse old;
  old.set_ip("1.2.3.4");
  old.set_port(443);
  old.set_scheme(MahimahiProtobufs::RequestResponse::HTTPS);
  old.mutable_request()->set_first_line("GET / HTTP/1.1");
  old.mutable_response()->set_first_line("HTTP/1.1 204 No Content");
  auto parsed = parse_pair(old.SerializeAsString(), &why);
  ASSERT_TRUE(parsed.has_value());
  ASSERT_TRUE(parsed->https);
  ASSERT_EQ(parsed->request_start_us, uint64_t{0});
  ASSERT_TRUE(parsed->response.body.empty());
}

TEST(RecordFile, record_invalid_bytes_are_rejected_with_a_reason) {
  const std::string bytes = serialize_pair(sample_pair(1));
  // Cut anywhere inside the request or the response: never a record.
  MahimahiProtobufs::RequestResponse full;
  ASSERT_TRUE(full.ParseFromString(bytes));
  MahimahiProtobufs::RequestResponse head;
  head.set_ip(full.ip());
  head.set_port(full.port());
  head.set_scheme(full.scheme());
  const size_t messages_start = head.SerializeAsString().size();
  const size_t messages_end = messages_start + field_bytes(4, full.request().SerializeAsString()).size() +
                              field_bytes(5, full.response().SerializeAsString()).size();
  for (size_t cut = 0; cut < messages_end; cut++) {
    std::string why;
    ASSERT_TRUE(!parse_pair(std::string_view(bytes).substr(0, cut), &why).has_value());
    ASSERT_TRUE(!why.empty());
  }
  std::string why;
  ASSERT_TRUE(!parse_pair("", &why));
  ASSERT_EQ(why, std::string("empty file"));
  ASSERT_TRUE(!parse_pair("<html>this is not a record</html>\n", &why));
  ASSERT_TRUE(!why.empty());
  ASSERT_TRUE(!parse_pair(bytes_of({0x0a, 0x05, 'a'}), &why));  // a length running past the end
  ASSERT_TRUE(why.find("truncated") != std::string::npos);
}

TEST(RecordFile, record_writer_stores_every_pair_atomically) {
  TempDir tmp;
  std::vector<std::string> errors;
  std::mutex errors_mutex;
  constexpr int kThreads = 4, kPerThread = 60;
  {
    RecordWriter writer(tmp.path, [&](const std::string& e) {
      std::lock_guard lock(errors_mutex);
      errors.push_back(e);
    });
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++) {
      threads.emplace_back([&writer, t] {
        for (int i = 0; i < kPerThread; i++) writer.write(sample_pair(t * 1000 + i));
      });
    }
    for (auto& t : threads) t.join();
    writer.finish();
    writer.finish();  // idempotent
    ASSERT_EQ(writer.written(), uint64_t{kThreads * kPerThread});
    ASSERT_EQ(writer.failed(), uint64_t{0});
  }
  ASSERT_TRUE(errors.empty());
  const auto names = names_in(tmp.path);
  ASSERT_EQ(names.size(), size_t{kThreads * kPerThread});
  ASSERT_TRUE(!any_temp_file(tmp.path));
  std::set<std::string> targets;
  for (const auto& name : names) {
    ASSERT_TRUE(name.rfind("save.", 0) == 0);
    ASSERT_EQ(name.size(), size_t{11});
    struct stat st;
    ASSERT_TRUE(::stat((tmp.path / name).c_str(), &st) == 0);
    ASSERT_EQ(st.st_mode & 07777, 0600u);
    std::string why;
    auto pair = parse_pair(read_file(tmp.path / name), &why);
    ASSERT_TRUE(pair.has_value());
    targets.insert(pair->request.first_line);
  }
  ASSERT_EQ(targets.size(), size_t{kThreads * kPerThread});  // every pair once
}

TEST(RecordFile, record_writer_back_pressure_loses_nothing) {
  TempDir tmp;
  RecordWriter writer(tmp.path, nullptr, 4096);  // about two pairs' worth
  for (int i = 0; i < 40; i++) {
    RecordedPair p = sample_pair(i);
    p.response.body = std::string(1500, static_cast<char>('a' + i % 26));
    writer.write(std::move(p));
  }
  RecordedPair big = sample_pair(99);
  big.response.body = std::string(100000, 'z');  // bigger than the whole bound: still accepted
  writer.write(std::move(big));
  writer.finish();
  ASSERT_EQ(writer.written(), uint64_t{41});
  ASSERT_EQ(names_in(tmp.path).size(), size_t{41});
}

TEST(RecordFile, record_destructor_writes_what_is_queued) {
  TempDir tmp;
  {
    RecordWriter writer(tmp.path, nullptr);
    for (int i = 0; i < 25; i++) writer.write(sample_pair(i));
  }
  ASSERT_EQ(names_in(tmp.path).size(), size_t{25});
}

TEST(RecordFile, record_load_skips_and_warns_about_bad_files) {
  TempDir tmp;
  write_file(tmp.path / "save.b", serialize_pair(sample_pair(2)));
  write_file(tmp.path / "save.a", serialize_pair(sample_pair(1)));
  write_file(tmp.path / "garbage", "this is not a protobuf at all, just some text\n");
  write_file(tmp.path / "empty", "");
  write_file(tmp.path / ".tmp-abc", "half written");  // hidden: ignored silently
  fs::create_directory(tmp.path / "subdir");          // not a regular file: ignored
  const LoadedRecording loaded = load_recording(tmp.path);
  ASSERT_EQ(loaded.entries.size(), size_t{2});
  ASSERT_EQ(loaded.entries[0].file.filename().string(), std::string("save.a"));
  ASSERT_TRUE(loaded.entries[0].pair == sample_pair(1));
  ASSERT_TRUE(loaded.entries[1].pair == sample_pair(2));
  ASSERT_EQ(loaded.warnings.size(), size_t{2});
  const std::string all = loaded.warnings[0] + "\n" + loaded.warnings[1];
  ASSERT_TRUE(all.find("garbage") != std::string::npos);
  ASSERT_TRUE(all.find("empty: not a recorded request/response (empty file)") != std::string::npos);

  EXPECT_THROW_WITH(UserError, load_recording(tmp.path / "missing"), "missing");
  EXPECT_THROW_WITH(UserError, load_recording(tmp.path / "save.a"), "is not a directory");
}

TEST(RecordFile, record_load_never_reads_fifos_sockets_or_symbolic_links) {
  TempDir tmp;
  write_file(tmp.path / "save.a", serialize_pair(sample_pair(1)));
  ASSERT_TRUE(::mkfifo((tmp.path / "save.fifo").c_str(), 0600) == 0);  // reading it would block forever
  fs::create_symlink(tmp.path / "save.a", tmp.path / "save.link");
  fs::create_symlink("/nonexistent", tmp.path / "save.dangling");
  const LoadedRecording loaded = load_recording(tmp.path);
  ASSERT_EQ(loaded.entries.size(), size_t{1});
  ASSERT_EQ(loaded.warnings.size(), size_t{3});
  std::string all;
  for (const std::string& w : loaded.warnings) all += w + "\n";
  ASSERT_TRUE(all.find("save.fifo: a FIFO (named pipe), not a regular file; skipped") != std::string::npos);
  ASSERT_TRUE(all.find("save.link: a symbolic link, not a regular file; skipped") != std::string::npos);
  ASSERT_TRUE(all.find("save.dangling: a symbolic link") != std::string::npos);
  EXPECT_THROW_WITH(UserError, read_recording_file(tmp.path / "save.fifo"), "FIFO");
  EXPECT_THROW_WITH(UserError, read_recording_file(tmp.path / "save.link"), "symbolic link");
  ASSERT_TRUE(parse_pair(read_recording_file(tmp.path / "save.a"), nullptr) == sample_pair(1));

  // The directory itself: a symbolic link to it is refused with the way out.
  fs::create_directory_symlink(tmp.path, tmp.path / "linked");
  EXPECT_THROW_WITH(UserError, load_recording(tmp.path / "linked"),
                    "is a symbolic link: name the recording directory itself");
  ASSERT_EQ(load_recording(tmp.path.string() + "/linked/").entries.size(), size_t{1});
}

TEST(RecordFile, record_scan_holds_one_file_at_a_time_in_name_order) {
  TempDir tmp;
  for (int i = 0; i < 5; i++) write_file(tmp.path / ("save." + std::to_string(i)), serialize_pair(sample_pair(i)));
  write_file(tmp.path / "save.9", "junk");
  std::vector<std::string> order, warnings;
  scan_recording(
      tmp.path,
      [&](const fs::path& file, RecordedPair&& pair) {
        ASSERT_TRUE(pair == sample_pair(std::stoi(file.extension().string().substr(1))));
        order.push_back(file.filename().string());
      },
      [&](std::string w) { warnings.push_back(std::move(w)); });
  ASSERT_EQ(order.size(), size_t{5});
  ASSERT_TRUE(std::is_sorted(order.begin(), order.end()));
  ASSERT_EQ(warnings.size(), size_t{1});
  ASSERT_TRUE(warnings[0].find("save.9: not a recorded request/response") != std::string::npos);
}

TEST(RecordFile, record_create_directory_refuses_existing_paths) {
  TempDir tmp;
  const fs::path dir = tmp.path / "rec";
  create_record_directory(dir);
  struct stat st;
  ASSERT_TRUE(::stat(dir.c_str(), &st) == 0);
  ASSERT_TRUE(S_ISDIR(st.st_mode));
  ASSERT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_THROW_WITH(UserError, create_record_directory(dir), "already exists: choose a new directory");
  EXPECT_THROW_WITH(UserError, create_record_directory(tmp.path / "no" / "rec"),
                    (tmp.path / "no").string() + " does not exist");
}

TEST(RecordFile, record_writer_reports_a_vanished_directory_once) {
  TempDir tmp;
  const fs::path dir = tmp.path / "rec";
  create_record_directory(dir);
  std::vector<std::string> errors;
  std::mutex m;
  RecordWriter writer(dir, [&](const std::string& e) {
    std::lock_guard lock(m);
    errors.push_back(e);
  });
  fs::remove(dir);
  for (int i = 0; i < 5; i++) writer.write(sample_pair(i));
  writer.finish();
  ASSERT_EQ(writer.written(), uint64_t{0});
  ASSERT_EQ(writer.failed(), uint64_t{5});
  ASSERT_EQ(errors.size(), size_t{1});
  ASSERT_TRUE(errors[0].find(dir.string()) != std::string::npos);
  ASSERT_TRUE(errors[0].find(std::strerror(ENOENT)) != std::string::npos);
  ASSERT_TRUE(!fs::exists(dir));
}

TEST(RecordFile, record_writer_in_read_only_directory_leaves_nothing) {
  if (::geteuid() == 0) return;  // root writes anyway; the full-disk test covers root
  TempDir tmp;
  ::chmod(tmp.path.c_str(), 0500);
  std::vector<std::string> errors;
  {
    RecordWriter writer(tmp.path, [&](const std::string& e) { errors.push_back(e); });
    writer.write(sample_pair(1));
    writer.finish();
    ASSERT_EQ(writer.failed(), uint64_t{1});
  }
  ::chmod(tmp.path.c_str(), 0700);
  ASSERT_EQ(errors.size(), size_t{1});
  ASSERT_TRUE(names_in(tmp.path).empty());
}

// A 64 KiB tmpfs fills up: the pairs that do not fit fail cleanly, one message, no leftovers.
TEST(RecordFile, record_writer_full_disk_leaves_no_partial_file) {
  TempDir tmp;
  if (::mount("tmpfs", tmp.path.c_str(), "tmpfs", 0, "size=64k,mode=0700") != 0) return;  // cannot mount: skip
  std::vector<std::string> errors;
  std::mutex m;
  uint64_t written = 0, failed = 0;
  {
    RecordWriter writer(tmp.path, [&](const std::string& e) {
      std::lock_guard lock(m);
      errors.push_back(e);
    });
    for (int i = 0; i < 12; i++) {
      RecordedPair p = sample_pair(i);
      p.response.body = std::string(20000, static_cast<char>('a' + i));
      writer.write(std::move(p));
    }
    writer.finish();
    written = writer.written();
    failed = writer.failed();
  }
  const auto names = names_in(tmp.path);
  bool complete = true;
  for (const auto& name : names) complete = complete && parse_pair(read_file(tmp.path / name), nullptr).has_value();
  const bool leftovers = any_temp_file(tmp.path);
  ::umount(tmp.path.c_str());
  ASSERT_TRUE(written >= 1);
  ASSERT_TRUE(failed >= 1);
  ASSERT_EQ(written + failed, uint64_t{12});
  ASSERT_EQ(names.size(), size_t(written));
  ASSERT_TRUE(complete);
  ASSERT_TRUE(!leftovers);
  ASSERT_EQ(errors.size(), size_t{1});
  ASSERT_TRUE(errors[0].find(std::strerror(ENOSPC)) != std::string::npos);
  ASSERT_TRUE(errors[0].find(tmp.path.string()) != std::string::npos);
}

TEST(RecordFile, record_decoded_body_dechunks_with_extensions_and_trailers) {
  HttpMessage m{"HTTP/1.1 200 OK", {{"Transfer-Encoding", "chunked"}}, ""};
  m.body = "5;name=value\r\nhello\r\n1A\r\n" + std::string(26, 'x') + "\r\n0\r\nExpires: never\r\nX-Trailer: 1\r\n\r\n";
  ASSERT_EQ(decoded_body(m), "hello" + std::string(26, 'x'));
  m.headers = {{"transfer-encoding", "gzip, Chunked"}};
  ASSERT_EQ(decoded_body(m), "hello" + std::string(26, 'x'));
  m.body = std::string("3\r\na\0b\r\n0\r\n\r\n", 13);
  ASSERT_EQ(decoded_body(m), std::string("a\0b", 3));
  m.body = "5\r\nhel";  // truncated: what arrived
  ASSERT_EQ(decoded_body(m), std::string("hel"));
  m.headers = {{"Content-Length", "6"}};
  m.body = "5\r\nhel";  // not chunked: as is
  ASSERT_EQ(decoded_body(m), std::string("5\r\nhel"));
  m.headers = {{"Transfer-Encoding", "chunked, gzip"}};  // chunked is not the final coding
  ASSERT_TRUE(!is_chunked(m));
}

TEST(RecordFile, record_original_schema_decodes_our_file) {
  const fs::path proto = fs::path(__FILE__).parent_path().parent_path() / "fixtures" / "original_http_record.proto";
  if (!fs::exists(proto) || run_command("protoc --version 2>/dev/null").empty()) return;  // no protoc: skip
  TempDir tmp;
  write_file(tmp.path / "save.x", serialize_pair(sample_pair(1)));
  const std::string decoded =
      run_command("protoc --decode=MahimahiProtobufs.RequestResponse -I " + proto.parent_path().string() + " " +
                  proto.string() + " < " + (tmp.path / "save.x").string() + " 2>&1");
  ASSERT_TRUE(decoded.find("ip: \"10.0.0.2\"") != std::string::npos);
  ASSERT_TRUE(decoded.find("scheme: HTTPS") != std::string::npos);
  ASSERT_TRUE(decoded.find("first_line: \"GET /item/1?a=1&b=two HTTP/1.1\"") != std::string::npos);
  ASSERT_TRUE(decoded.find("100: 1700000000001000") != std::string::npos);  // ours: an unknown field to the original
}

// ---- HAR ----

namespace {
std::vector<RecordingEntry> varied_entries() {
  std::vector<RecordingEntry> entries;
  RecordedPair chunked = sample_pair(1);
  chunked.response.headers = {{"Content-Type", "text/html; charset=utf-8"}, {"Transfer-Encoding", "chunked"}};
  chunked.response.body = "4;ext=1\r\n<h1>\r\n6\r\nhéllo\r\n0\r\nX-Trailer: yes\r\n\r\n";
  entries.push_back({"save.chunked", chunked});

  RecordedPair binary = sample_pair(2);
  binary.response.headers = {{"Content-Type", "image/png"}, {"Content-Length", "8"}};
  binary.response.body = bytes_of({0x89, 'P', 'N', 'G', 0, 0, 0xff, 0x0a});
  binary.request.headers.push_back({"X-Latin1", bytes_of({'c', 0xe9})});  // not UTF-8
  entries.push_back({"save.binary", binary});

  RecordedPair post = sample_pair(3);
  post.request.first_line = "POST /form?x=%41+b&y HTTP/1.1";
  post.request.headers = {
      {"Host", "example.com:8443"}, {"Content-Type", "application/x-www-form-urlencoded"}, {"Content-Length", "7"}};
  post.request.body = "a=1&b=2";
  post.port = 8443;
  post.https = false;
  entries.push_back({"save.post", post});

  RecordedPair binary_post = sample_pair(4);
  binary_post.request.first_line = "PUT /blob HTTP/1.1";
  binary_post.request.body = bytes_of({0, 0xc3, 0x28, 0xff});
  entries.push_back({"save.binpost", binary_post});

  RecordedPair not_modified = sample_pair(5);
  not_modified.response.first_line = "HTTP/1.1 304 Not Modified";
  not_modified.response.headers = {{"ETag", "\"abc\""}};
  not_modified.response.body = "";
  entries.push_back({"save.304", not_modified});

  RecordedPair old;  // as the original records: no timestamps, no server name
  old.ip = "172.16.0.9";
  old.port = 80;
  old.request = {"GET / HTTP/1.0", {}, ""};
  old.response = {std::string("HTTP/1.0 200 Fine \xff", 19), {{"Server", "x"}}, "body"};
  entries.push_back({"save.old", old});
  return entries;
}
}  // namespace

TEST(RecordFile, har_round_trip_is_byte_exact) {
  const auto entries = varied_entries();
  const json har = to_har(entries);
  const std::string text = har.dump(2);  // must not throw: every string is valid UTF-8
  std::vector<std::string> warnings;
  const auto pairs = from_har(parse_har_text(text, "test.har"), &warnings, "test.har");
  ASSERT_TRUE(warnings.empty());
  ASSERT_EQ(pairs.size(), entries.size());
  // to_har orders by request time; match by first line and body instead of position.
  for (const RecordingEntry& e : entries) {
    size_t matches = 0;
    for (const RecordedPair& p : pairs) matches += p == e.pair;
    ASSERT_EQ(matches, size_t{1});
  }
}

TEST(RecordFile, har_standard_fields_describe_the_exchange) {
  const json har = to_har(varied_entries());
  ASSERT_EQ(har["log"]["version"].get<std::string>(), std::string("1.2"));
  ASSERT_EQ(har["log"]["creator"]["name"].get<std::string>(), std::string("mahimahi"));
  const json& entries = har["log"]["entries"];
  ASSERT_EQ(entries.size(), size_t{6});
  auto find = [&](const std::string& file) -> const json& {
    for (const json& e : entries) {
      if (e["_mahimahi"]["file"] == file) return e;
    }
    throw std::runtime_error("no entry " + file);
  };
  const json& old = find("save.old");
  ASSERT_EQ(old["startedDateTime"].get<std::string>(), std::string("1970-01-01T00:00:00.000Z"));
  ASSERT_EQ(old["timings"]["send"].get<double>(), -1.0);
  ASSERT_EQ(old["request"]["url"].get<std::string>(), std::string("http://172.16.0.9/"));
  ASSERT_EQ(old["response"]["status"].get<int>(), 200);

  const json& chunked = find("save.chunked");
  ASSERT_EQ(chunked["request"]["url"].get<std::string>(), std::string("https://example.com/item/1?a=1&b=two"));
  ASSERT_EQ(chunked["response"]["content"]["text"].get<std::string>(), std::string("<h1>héllo"));
  ASSERT_EQ(chunked["connection"].get<std::string>(), std::string("443"));
  ASSERT_EQ(chunked["startedDateTime"].get<std::string>(), std::string("2023-11-14T22:13:20.001Z"));
  ASSERT_EQ(chunked["timings"]["send"].get<double>(), 0.15);
  ASSERT_EQ(chunked["timings"]["wait"].get<double>(), 19.85);
  ASSERT_EQ(chunked["timings"]["receive"].get<double>(), 5.0);
  ASSERT_EQ(chunked["time"].get<double>(), 25.0);
  ASSERT_EQ(chunked["request"]["queryString"][1]["value"].get<std::string>(), std::string("two"));

  const json& binary = find("save.binary");
  ASSERT_EQ(binary["response"]["content"]["encoding"].get<std::string>(), std::string("base64"));
  ASSERT_EQ(*base64_decode(binary["response"]["content"]["text"].get<std::string>()),
            bytes_of({0x89, 'P', 'N', 'G', 0, 0, 0xff, 0x0a}));
  ASSERT_TRUE(binary["_mahimahi"].contains("request_headers_raw"));

  const json& post = find("save.post");
  ASSERT_EQ(post["request"]["url"].get<std::string>(), std::string("http://example.com:8443/form?x=%41+b&y"));
  ASSERT_EQ(post["request"]["postData"]["text"].get<std::string>(), std::string("a=1&b=2"));
  ASSERT_EQ(post["request"]["queryString"][0]["value"].get<std::string>(), std::string("A b"));
  const json& binpost = find("save.binpost");
  ASSERT_EQ(*base64_decode(binpost["request"]["postData"]["_text_base64"].get<std::string>()),
            bytes_of({0, 0xc3, 0x28, 0xff}));
  ASSERT_EQ(find("save.304")["response"]["bodySize"].get<int>(), 0);
  ASSERT_TRUE(!find("save.304")["request"].contains("postData"));
}

TEST(RecordFile, har_from_browser_becomes_valid_http1) {
  const std::string png = bytes_of({0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 0x0d});
  const json har = {
      {"log",
       {{"version", "1.2"},
        {"creator", {{"name", "WebInspector"}, {"version", "537.36"}}},
        {"entries",
         {{{"startedDateTime", "2024-03-01T10:00:00.500+01:00"},
           {"time", 30.5},
           {"serverIPAddress", "93.184.216.34"},
           {"request",
            {{"method", "GET"},
             {"url", "https://www.example.com/page?q=1#frag"},
             {"httpVersion", "h2"},
             {"headers",
              {{{"name", ":method"}, {"value", "GET"}},
               {{"name", ":authority"}, {"value", "www.example.com"}},
               {{"name", ":scheme"}, {"value", "https"}},
               {{"name", ":path"}, {"value", "/page?q=1"}},
               {{"name", "accept-encoding"}, {"value", "gzip, br"}}}}}},
           {"response",
            {{"status", 200},
             {"statusText", ""},
             {"httpVersion", "h2"},
             {"headers",
              {{{"name", "content-type"}, {"value", "text/html"}},
               {{"name", "content-encoding"}, {"value", "gzip"}},
               {{"name", "content-length"}, {"value", "31"}}}},
             {"content", {{"size", 12}, {"mimeType", "text/html"}, {"text", "<p>hello</p>"}}}}},
           {"timings",
            {{"blocked", 1.0}, {"dns", -1}, {"connect", 2.0}, {"send", 0.5}, {"wait", 20.0}, {"receive", 7.0}}}},
          {{"serverIPAddress", "[93.184.216.35]"},
           {"request",
            {{"method", "GET"},
             {"url", "http://img.example.com:8080/logo.png"},
             {"httpVersion", "HTTP/1.1"},
             {"headers", json::array()}}},
           {"response",
            {{"status", 200},
             {"statusText", "OK"},
             {"httpVersion", "HTTP/1.1"},
             {"headers", {{{"name", "Transfer-Encoding"}, {"value", "chunked"}}}},
             {"content",
              {{"size", png.size()},
               {"mimeType", "image/png"},
               {"text", base64_encode(png)},
               {"encoding", "base64"}}}}}},
          {{"serverIPAddress", "[2606:2800:220:1::]"},
           {"request", {{"method", "GET"}, {"url", "https://v6.example.com/"}, {"httpVersion", "h3"}}},
           {"response", {{"status", 200}, {"content", {{"size", 1}, {"text", "x"}}}}}},
          {{"serverIPAddress", "93.184.216.34"},
           {"request", {{"method", "GET"}, {"url", "https://www.example.com/blocked"}, {"httpVersion", "h2"}}},
           {"response", {{"status", 0}, {"content", {{"size", 0}}}}}},
          {{"serverIPAddress", "93.184.216.34"},
           {"request", {{"method", "GET"}, {"url", "https://www.example.com/nobody"}}},
           {"response", {{"status", 200}}}}}}}}};
  std::vector<std::string> warnings;
  const auto pairs = from_har(har, &warnings, "browser.har");
  ASSERT_EQ(pairs.size(), size_t{2});
  ASSERT_EQ(warnings.size(), size_t{3});
  ASSERT_TRUE(warnings[0].find("browser.har: entry 3 (https://v6.example.com/)") != std::string::npos);
  ASSERT_TRUE(warnings[0].find("IPv4") != std::string::npos);
  ASSERT_TRUE(warnings[1].find("status 0") != std::string::npos);
  ASSERT_TRUE(warnings[2].find("no response content") != std::string::npos);

  const RecordedPair& page = pairs[0];
  ASSERT_EQ(page.request.first_line, std::string("GET /page?q=1 HTTP/1.1"));
  ASSERT_EQ(page.request.headers.at(0).key, std::string("Host"));
  ASSERT_EQ(page.request.headers.at(0).value, std::string("www.example.com"));
  for (const auto& h : page.request.headers) ASSERT_TRUE(h.key[0] != ':');
  ASSERT_EQ(page.response.first_line, std::string("HTTP/1.1 200 OK"));
  ASSERT_TRUE(!page.response.header("Content-Encoding"));
  ASSERT_EQ(std::string(*page.response.header("Content-Length")), std::string("12"));
  ASSERT_EQ(page.response.body, std::string("<p>hello</p>"));
  ASSERT_EQ(page.ip, std::string("93.184.216.34"));
  ASSERT_EQ(page.port, uint16_t{443});
  ASSERT_TRUE(page.https);
  ASSERT_EQ(page.server_name, std::string("www.example.com"));
  // 10:00:00.5 at +01:00 is 09:00:00.5 UTC; the request starts after blocked (1) and connect (2).
  const uint64_t started = 1709283600500000ULL;
  ASSERT_EQ(page.request_start_us, started + 3000);
  ASSERT_EQ(page.request_end_us, started + 3500);
  ASSERT_EQ(page.response_first_byte_us, started + 23500);
  ASSERT_EQ(page.response_last_byte_us, started + 30500);

  const RecordedPair& logo = pairs[1];
  ASSERT_EQ(logo.ip, std::string("93.184.216.35"));
  ASSERT_EQ(logo.port, uint16_t{8080});
  ASSERT_TRUE(!logo.https);
  ASSERT_EQ(logo.request.first_line, std::string("GET /logo.png HTTP/1.1"));
  ASSERT_EQ(std::string(*logo.request.header("Host")), std::string("img.example.com:8080"));
  ASSERT_EQ(logo.response.body, png);
  ASSERT_TRUE(!logo.response.header("Transfer-Encoding"));
  ASSERT_EQ(std::string(*logo.response.header("Content-Length")), std::to_string(png.size()));
  ASSERT_EQ(decoded_body(logo.response), png);
  // The converted pairs survive our own round trip too.
  const auto again = from_har(to_har({{"a", page}, {"b", logo}}), &warnings, "x");
  ASSERT_EQ(again.size(), size_t{2});
  ASSERT_TRUE((again[0] == page && again[1] == logo) || (again[0] == logo && again[1] == page));
}

TEST(RecordFile, har_malformed_input_is_a_user_error) {
  EXPECT_THROW_WITH(UserError, parse_har_text("{\"log\": [1, 2", "broken.har"), "broken.har is not valid JSON");
  EXPECT_THROW_WITH(UserError, from_har(json::parse("{\"foo\": 1}"), nullptr, "other.json"),
                    "other.json is not a HAR file");
  EXPECT_THROW_WITH(UserError, from_har(json::parse("{\"log\": {}}"), nullptr, "x.har"), "no \"entries\" array");
  EXPECT_THROW_WITH(UserError, from_har(json::parse("[1]"), nullptr, "arr.har"), "arr.har is not a HAR file");
  std::vector<std::string> warnings;
  // A damaged _mahimahi entry is skipped, not half-converted.
  json har = to_har(varied_entries());
  har["log"]["entries"][0]["_mahimahi"]["response_body_raw_base64"] = "not base64!";
  har["log"]["entries"][1] = 42;
  const auto pairs = from_har(har, &warnings, "x.har");
  ASSERT_EQ(pairs.size(), size_t{4});
  ASSERT_EQ(warnings.size(), size_t{2});
  ASSERT_TRUE(warnings[0].find("not valid base64") != std::string::npos);
}

TEST(RecordFile, har_helpers_base64_utf8_and_time) {
  std::string all;
  for (int i = 0; i < 256; i++) all += static_cast<char>(i);
  for (size_t n = 0; n <= all.size(); n += 1) {
    const std::string data = all.substr(0, n);
    auto back = base64_decode(base64_encode(data));
    ASSERT_TRUE(back.has_value());
    ASSERT_TRUE(*back == data);
  }
  ASSERT_EQ(base64_encode("ab"), std::string("YWI="));
  ASSERT_EQ(*base64_decode("YWI"), std::string("ab"));        // missing padding tolerated
  ASSERT_EQ(*base64_decode("YW\nJj\n"), std::string("abc"));  // line breaks ignored
  ASSERT_TRUE(!base64_decode("YW=I"));
  ASSERT_TRUE(!base64_decode("Y"));
  ASSERT_TRUE(!base64_decode("YWJj!"));
  const std::string big(5 << 20, '\x7f');  // more than one EVP block call
  ASSERT_TRUE(*base64_decode(base64_encode(big)) == big);

  ASSERT_TRUE(is_valid_utf8("plain"));
  ASSERT_TRUE(is_valid_utf8("h\xc3\xa9llo \xf0\x9f\x98\x80"));
  ASSERT_TRUE(is_valid_utf8(std::string("nul\0inside", 10)));
  ASSERT_TRUE(!is_valid_utf8("\xff"));
  ASSERT_TRUE(!is_valid_utf8("\xc3"));
  ASSERT_TRUE(!is_valid_utf8("\xc0\xaf"));          // overlong
  ASSERT_TRUE(!is_valid_utf8("\xed\xa0\x80"));      // surrogate
  ASSERT_TRUE(!is_valid_utf8("\xf4\x90\x80\x80"));  // above U+10FFFF

  ASSERT_EQ(iso8601_from_us(0), std::string("1970-01-01T00:00:00.000Z"));
  ASSERT_EQ(iso8601_from_us(1700000000123456ULL), std::string("2023-11-14T22:13:20.123Z"));
  ASSERT_EQ(*us_from_iso8601("2023-11-14T22:13:20.123456Z"), uint64_t{1700000000123456ULL});
  ASSERT_EQ(*us_from_iso8601("2023-11-14T23:13:20.1+01:00"), uint64_t{1700000000100000ULL});
  ASSERT_EQ(*us_from_iso8601("2023-11-14T22:13:20Z"), uint64_t{1700000000000000ULL});
  ASSERT_TRUE(!us_from_iso8601("yesterday"));
  ASSERT_TRUE(!us_from_iso8601("2023-13-14T22:13:20Z"));
}

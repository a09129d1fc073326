// SPDX-License-Identifier: GPL-3.0-or-later
// Recording files: exact round trips, compatibility with the original Mahimahi's files, atomic
// background writing (including write errors and a full disk), loading a directory safely.
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "expect.hh"
#include "recording/http_record.pb.h"
#include "recording/record_file.hh"
#include "samples.hh"
#include "temp_files.hh"
#include "util/exception.hh"

namespace fs = std::filesystem;

namespace {
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
  auto back = parse_owned_pair(std::string(bytes), &why);
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
  auto pair = parse_owned_pair(std::string(original), &why);
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
  auto parsed = parse_owned_pair(old.SerializeAsString(), &why);
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
    ASSERT_TRUE(!parse_owned_pair(std::string(std::string_view(bytes).substr(0, cut)), &why).has_value());
    ASSERT_TRUE(!why.empty());
  }
  std::string why;
  ASSERT_TRUE(!parse_owned_pair(std::string(""), &why));
  ASSERT_EQ(why, std::string("empty file"));
  ASSERT_TRUE(!parse_owned_pair(std::string("<html>this is not a record</html>\n"), &why));
  ASSERT_TRUE(!why.empty());
  ASSERT_TRUE(!parse_owned_pair(std::string(bytes_of({0x0a, 0x05, 'a'})), &why));  // a length running past the end
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
    auto pair = parse_owned_pair(read_file(tmp.path / name), &why);
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

// In the background the writer waits for a pause in the pairs: they reach the disk after it
// without finish(), finish() writes them at once, and a full queue is written, never lost.
TEST(RecordFile, record_background_writer_writes_in_pauses_and_when_asked) {
  TempDir tmp;
  RecordWriter writer(tmp.path, nullptr, 4096, RecordWriter::Priority::Background);
  for (int i = 0; i < 3; i++) writer.write(sample_pair(i));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (writer.written() < 3 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(writer.written(), uint64_t{3});  // after the pause, with nobody asking
  for (int i = 3; i < 8; i++) writer.write(sample_pair(i));
  writer.finish();
  ASSERT_EQ(writer.written(), uint64_t{8});
  ASSERT_EQ(names_in(tmp.path).size(), size_t{8});
  for (int i = 8; i < 48; i++) {  // many times the queue's bound: back-pressure, no loss
    RecordedPair p = sample_pair(i);
    p.response.body = std::string(1500, 'b');
    writer.write(std::move(p));
  }
  writer.finish();
  ASSERT_EQ(writer.written(), uint64_t{48});
  ASSERT_EQ(names_in(tmp.path).size(), size_t{48});
  ASSERT_TRUE(!any_temp_file(tmp.path));
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
  ASSERT_TRUE(parse_owned_pair(read_recording_file(tmp.path / "save.a"), nullptr) == sample_pair(1));

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
  for (const auto& name : names)
    complete = complete && parse_owned_pair(read_file(tmp.path / name), nullptr).has_value();
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

// A pair that does not fit on the disk frees its space before the next pair of its batch is
// written: the small pair after a big one is saved (the writer batches them in the background).
TEST(RecordFile, record_writer_batch_on_a_full_disk_saves_what_fits) {
  TempDir tmp;
  if (::mount("tmpfs", tmp.path.c_str(), "tmpfs", 0, "size=64k,mode=0700") != 0) return;  // cannot mount: skip
  uint64_t written = 0, failed = 0;
  {
    RecordWriter writer(tmp.path, nullptr, RecordWriter::kDefaultMaxQueuedBytes, RecordWriter::Priority::Background);
    RecordedPair big = sample_pair(1);
    big.response.body = std::string(200000, 'x');
    writer.write(std::move(big));
    writer.write(sample_pair(2));
    writer.finish();
    written = writer.written();
    failed = writer.failed();
  }
  const auto names = names_in(tmp.path);
  const bool leftovers = any_temp_file(tmp.path);
  ::umount(tmp.path.c_str());
  ASSERT_EQ(written, uint64_t{1});
  ASSERT_EQ(failed, uint64_t{1});
  ASSERT_EQ(names.size(), size_t{1});
  ASSERT_TRUE(!leftovers);
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

TEST(RecordFile, record_append_accepts_recordings_and_refuses_anything_else) {
  TempDir tmp;
  const fs::path rec = tmp.path / "rec";
  create_record_directory(rec);
  check_recording_to_append(rec);  // empty: a recording of nothing yet
  {
    RecordWriter writer(rec, nullptr);
    writer.write(sample_pair(1));
    writer.finish();
  }
  const std::vector<std::string> before = names_in(rec);
  const std::string first = read_file(rec / before.front());
  check_recording_to_append(rec);
  write_file(rec / ".tmp-leftover", "unfinished");  // hidden files are no part of it
  check_recording_to_append(rec);
  {  // Appending: new names only, the recorded file untouched.
    RecordWriter writer(rec, nullptr);
    for (int i = 0; i < 20; i++) writer.write(sample_pair(i));
    writer.finish();
    EXPECT_EQ(writer.written(), 20u);
  }
  EXPECT_EQ(names_in(rec).size(), before.size() + 21);
  EXPECT_EQ(read_file(rec / before.front()), first);

  EXPECT_THROW_WITH(UserError, check_recording_to_append(tmp.path / "none"), "does not exist: nothing to append to");
  write_file(tmp.path / "file", "x");
  EXPECT_THROW_WITH(UserError, check_recording_to_append(tmp.path / "file"), "is not a recording: it is");
  fs::create_symlink(rec, tmp.path / "link");
  EXPECT_THROW_WITH(UserError, check_recording_to_append(tmp.path / "link"), "is a symbolic link");
  const fs::path home = tmp.path / "home";
  fs::create_directories(home / "Documents");
  EXPECT_THROW_WITH(UserError, check_recording_to_append(home), "Documents is a directory");
  const fs::path notes = tmp.path / "notes";
  fs::create_directories(notes);
  write_file(notes / "a.txt", "not a record");
  EXPECT_THROW_WITH(UserError, check_recording_to_append(notes),
                    (notes / "a.txt").string() + " is not a recorded request/response");
}

// A writer killed with SIGKILL at any point (the recording shell's ferry killed mid-recording)
// leaves only whole pairs under final names and no unfinished file, named or hidden: each pair
// is written to an unnamed file (O_TMPFILE) and linked once it is complete.
TEST(RecordFile, record_writer_killed_leaves_whole_pairs_and_no_unfinished_file) {
  TempDir tmp;
  const fs::path dir = tmp.path / "rec";
  create_record_directory(dir);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    RecordWriter writer(dir, [](const std::string&) {});
    std::string body(256 * 1024, 'b');  // big enough that the kill often lands mid-write
    for (int i = 0;; i++) {
      RecordedPair pair = sample_pair(i);
      pair.response.body = body;
      writer.write(std::move(pair));
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  auto count = [&] {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir)) n += e.path().filename().string().starts_with("save.") ? 1 : 0;
    return n;
  };
  while (count() < 20 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  size_t whole = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    ASSERT_TRUE(name.starts_with("save.")) << "left behind: " << name;
    std::string why;
    const auto pair = parse_owned_pair(read_recording_file(e.path()), &why);
    ASSERT_TRUE(pair.has_value()) << name << ": " << why;
    ASSERT_EQ(pair->response.body.size(), size_t{256 * 1024}) << name;
    whole++;
  }
  ASSERT_GE(whole, size_t{20});
}

// The certificate names a record holds are the recording's word: only host names are kept, and
// at most kMaxCertificateNames of them.
TEST(RecordFile, certificate_names_are_host_names_and_bounded) {
  RecordedPair p = sample_pair(1);
  p.server_certificate_names = {"a.test",  "*.a.test", "bad name", "\x1b[31m", "", "*.", std::string(254, 'a'),
                                "b_c.test"};
  for (int i = 0; i < 300; i++) p.server_certificate_names.push_back("h" + std::to_string(i) + ".test");
  std::string why;
  auto back = parse_owned_pair(serialize_pair(p), &why);
  ASSERT_TRUE(back.has_value()) << why;
  ASSERT_EQ(back->server_certificate_names.size(), kMaxCertificateNames);
  EXPECT_EQ(back->server_certificate_names[0], "a.test");
  EXPECT_EQ(back->server_certificate_names[1], "*.a.test");
  EXPECT_EQ(back->server_certificate_names[2], "b_c.test");
  EXPECT_EQ(back->server_certificate_names[3], "h0.test");
  EXPECT_TRUE(is_certificate_name("xn--bcher-kva.example"));
  EXPECT_FALSE(is_certificate_name("*"));
}

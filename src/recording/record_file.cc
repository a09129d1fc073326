// SPDX-License-Identifier: GPL-3.0-or-later
// Recording files: protobuf (de)serialization, atomic background writing, directory loading.
#include "recording/record_file.hh"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdio>

#include "recording/http_record.pb.h"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/private_directory.hh"
#include "util/random.hh"

namespace fs = std::filesystem;

namespace {
bool same_headers(const std::vector<HttpHeader>& a, const std::vector<HttpHeader>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const HttpHeader& x, const HttpHeader& y) { return x.key == y.key && x.value == y.value; });
}

bool same_message(const HttpMessage& a, const HttpMessage& b) {
  return a.first_line == b.first_line && same_headers(a.headers, b.headers) && a.body == b.body;
}

void to_proto(const HttpMessage& in, MahimahiProtobufs::HTTPMessage* out) {
  out->set_first_line(in.first_line);
  for (const HttpHeader& h : in.headers) {
    auto* header = out->add_header();
    header->set_key(h.key);
    header->set_value(h.value);
  }
  out->set_body(in.body);
}

// Moves the strings out of the message (the body may be most of the file).
HttpMessage from_proto(MahimahiProtobufs::HTTPMessage& in) {
  HttpMessage out;
  out.first_line = std::move(*in.mutable_first_line());
  out.headers.reserve(static_cast<size_t>(in.header_size()));
  for (auto& h : *in.mutable_header())
    out.headers.push_back({std::move(*h.mutable_key()), std::move(*h.mutable_value())});
  out.body = std::move(*in.mutable_body());
  return out;
}

// Roughly the memory a queued pair holds, for the queue's bound.
size_t footprint(const RecordedPair& pair) {
  size_t bytes = sizeof pair + pair.ip.size() + pair.server_name.size() + pair.protocol.size();
  for (const HttpMessage* m : {&pair.request, &pair.response}) {
    bytes += m->first_line.size() + m->body.size();
    for (const HttpHeader& h : m->headers) bytes += sizeof h + h.key.size() + h.value.size();
  }
  return bytes;
}

// Letters and digits, like mkstemp's XXXXXX. One generator per thread: only the writer thread
// names files.
std::string random_name(std::string_view prefix, size_t length) {
  static constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local Random random(Random::fresh_seed());
  std::string name(prefix);
  for (size_t i = 0; i < length; i++) name += kAlphabet[random.next() % kAlphabet.size()];
  return name;
}

// Renames without ever replacing an existing file: EEXIST if `to` exists.
int rename_noreplace(int dir_fd, const std::string& from, const std::string& to) {
  if (::renameat2(dir_fd, from.c_str(), dir_fd, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return -1;
  // A file system without RENAME_NOREPLACE: link() refuses to replace too.
  if (::linkat(dir_fd, from.c_str(), dir_fd, to.c_str(), 0) != 0) return -1;
  ::unlinkat(dir_fd, from.c_str(), 0);
  return 0;
}

// The directory a path names, for messages: "a/b/" -> "a", "b" -> ".".
fs::path parent_directory(const fs::path& dir) {
  fs::path p = dir.has_filename() ? dir : dir.parent_path();
  fs::path parent = p.parent_path();
  return parent.empty() ? fs::path(".") : parent;
}
}  // namespace

bool is_certificate_name(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  if (name.size() > 2 && name.substr(0, 2) == "*.") name.remove_prefix(2);
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_')) return false;
  }
  return true;
}

bool RecordedPair::operator==(const RecordedPair& other) const {
  return ip == other.ip && port == other.port && https == other.https && same_message(request, other.request) &&
         same_message(response, other.response) && request_start_us == other.request_start_us &&
         request_end_us == other.request_end_us && response_first_byte_us == other.response_first_byte_us &&
         response_last_byte_us == other.response_last_byte_us && server_name == other.server_name &&
         protocol == other.protocol && server_rtt_us == other.server_rtt_us &&
         server_connect_us == other.server_connect_us && server_think_us == other.server_think_us &&
         server_certificate_names == other.server_certificate_names && server_tls_version == other.server_tls_version;
}

std::string serialize_pair(const RecordedPair& pair) {
  MahimahiProtobufs::RequestResponse record;
  record.set_ip(pair.ip);
  record.set_port(pair.port);
  record.set_scheme(pair.https ? MahimahiProtobufs::RequestResponse::HTTPS : MahimahiProtobufs::RequestResponse::HTTP);
  to_proto(pair.request, record.mutable_request());
  to_proto(pair.response, record.mutable_response());
  // Unknown values stay absent, so a file with nothing of ours is exactly what the original writes.
  if (pair.request_start_us) record.set_request_start_us(pair.request_start_us);
  if (pair.request_end_us) record.set_request_end_us(pair.request_end_us);
  if (pair.response_first_byte_us) record.set_response_first_byte_us(pair.response_first_byte_us);
  if (pair.response_last_byte_us) record.set_response_last_byte_us(pair.response_last_byte_us);
  if (!pair.server_name.empty()) record.set_server_name(pair.server_name);
  if (!pair.protocol.empty()) record.set_protocol(pair.protocol);
  if (pair.server_rtt_us) record.set_server_rtt_us(*pair.server_rtt_us);
  if (pair.server_connect_us) record.set_server_connect_us(*pair.server_connect_us);
  if (pair.server_think_us) record.set_server_think_us(*pair.server_think_us);
  for (const std::string& name : pair.server_certificate_names) record.add_server_certificate_names(name);
  if (!pair.server_tls_version.empty()) record.set_server_tls_version(pair.server_tls_version);
  std::string bytes;
  if (!record.SerializeToString(&bytes)) throw std::runtime_error("cannot serialize a recorded pair (over 2 GiB?)");
  return bytes;
}

// The bytes are freed as soon as the message is parsed, so that a large file is not held three
// times (bytes, message, pair).
std::optional<RecordedPair> parse_owned_pair(std::string&& bytes, std::string* why) {
  auto fail = [&](const std::string& reason) -> std::optional<RecordedPair> {
    if (why) *why = reason;
    return std::nullopt;
  };
  if (bytes.empty()) return fail("empty file");
  if (bytes.size() > kMaxRecordFileBytes) return fail("too large for a record (over 2 GiB)");
  MahimahiProtobufs::RequestResponse record;
  const bool parsed = record.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
  std::string().swap(bytes);
  if (!parsed) return fail("not a RequestResponse protobuf: truncated, or another kind of file");
  if (!record.has_request()) return fail("no request in the record");
  if (!record.has_response()) return fail("no response in the record");
  if (record.request().first_line().empty()) return fail("the request has no first line");
  if (record.response().first_line().empty()) return fail("the response has no first line");
  if (record.port() > 65535) return fail("port " + std::to_string(record.port()) + " is out of range");

  RecordedPair pair;
  pair.ip = record.ip();
  pair.port = static_cast<uint16_t>(record.port());
  pair.https = record.scheme() == MahimahiProtobufs::RequestResponse::HTTPS;
  pair.request = from_proto(*record.mutable_request());
  pair.response = from_proto(*record.mutable_response());
  pair.request_start_us = record.request_start_us();
  pair.request_end_us = record.request_end_us();
  pair.response_first_byte_us = record.response_first_byte_us();
  pair.response_last_byte_us = record.response_last_byte_us();
  pair.server_name = record.server_name();
  pair.protocol = record.protocol();
  if (record.has_server_rtt_us()) pair.server_rtt_us = record.server_rtt_us();
  if (record.has_server_connect_us()) pair.server_connect_us = record.server_connect_us();
  if (record.has_server_think_us()) pair.server_think_us = record.server_think_us();
  pair.server_tls_version = record.server_tls_version();
  // A recording's word only: names that are not host names are dropped, at most the bound kept.
  for (int i = 0; i < record.server_certificate_names_size(); i++) {
    if (pair.server_certificate_names.size() == kMaxCertificateNames) break;
    if (is_certificate_name(record.server_certificate_names(i)))
      pair.server_certificate_names.push_back(record.server_certificate_names(i));
  }
  return pair;
}

void create_record_directory(const fs::path& dir) {
  int err = 0;
  try {
    make_private_directory(dir, {.create_parents = false, .must_be_new = true, .fix = "choose a new directory"});
    return;
  } catch (const PrivateDirectoryError& e) {
    if (e.error() == 0) throw;
    err = e.error();
  }
  const std::string name = dir.string(), parent = parent_directory(dir).string();
  switch (err) {
    case EEXIST:
      throw UserError(name +
                      " already exists: choose a new directory (a recording is never overwritten; mm-record --append "
                      "adds to one)");
    case ENOENT:
      throw UserError("cannot create " + name + ": the directory " + parent +
                      " does not exist (create it first, or choose another place)");
    case EACCES:
    case EPERM:
    case EROFS:
      throw UserError("cannot create " + name + ": " + parent + " is not writable (" + std::strerror(err) +
                      "); choose a directory you can write to");
    default:
      throw UserError("cannot create recording directory " + name + ": " + std::strerror(err));
  }
}

RecordWriter::RecordWriter(fs::path dir, std::function<void(const std::string&)> report_error, size_t max_queued_bytes,
                           Priority priority)
    : dir_(std::move(dir)),
      report_error_(std::move(report_error)),
      max_queued_bytes_(max_queued_bytes),
      priority_(priority) {
  // Held open so that a later chdir or rename of a parent changes nothing.
  dir_fd_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd_ < 0) throw UserError("cannot open recording directory " + dir_.string() + ": " + std::strerror(errno));
  // Unnamed files are linked through /proc/self/fd: without /proc (a bare chroot), named ones.
  unnamed_files_ = ::access("/proc/self/fd", X_OK) == 0;
  thread_ = std::thread([this] { run(); });
}

RecordWriter::~RecordWriter() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  thread_.join();
  ::close(dir_fd_);
}

void RecordWriter::write(RecordedPair pair) {
  const size_t bytes = footprint(pair);
  std::unique_lock lock(mutex_);
  const auto room = [&] { return queued_bytes_ == 0 || queued_bytes_ + bytes <= max_queued_bytes_; };
  if (!room()) {
    waiting_for_room_++;
    work_ready_.notify_one();
    room_or_done_.wait(lock, room);
    waiting_for_room_--;
  }
  const auto now = std::chrono::steady_clock::now();
  if (queue_.empty()) oldest_queued_ = now;
  // In the background the writer looks at the time of the last pair when its wait ends: it
  // needs waking only to start waiting, or to write at once.
  const bool wake = priority_ == Priority::Normal || queue_.empty() || queued_bytes_ + bytes >= deferred_bytes_limit();
  last_queued_ = now;
  queue_.push_back({std::move(pair), bytes});
  queued_bytes_ += bytes;
  submitted_++;
  lock.unlock();
  if (wake) work_ready_.notify_one();
}

void RecordWriter::finish() {
  std::unique_lock lock(mutex_);
  const uint64_t target = submitted_;
  if (synced_ >= target) return;
  waiting_for_disk_++;
  work_ready_.notify_one();
  room_or_done_.wait(lock, [&] { return synced_ >= target; });
  waiting_for_disk_--;
}

bool RecordWriter::flush_now() const {
  return priority_ == Priority::Normal || stopping_ || waiting_for_room_ > 0 || waiting_for_disk_ > 0 ||
         queued_bytes_ >= deferred_bytes_limit();
}

size_t RecordWriter::deferred_bytes_limit() const { return std::min(kMaxDeferredBytes, max_queued_bytes_ / 2); }

uint64_t RecordWriter::written() const {
  std::lock_guard lock(mutex_);
  return written_;
}

uint64_t RecordWriter::failed() const {
  std::lock_guard lock(mutex_);
  return failed_;
}

void RecordWriter::run() {
  // Per thread on Linux: only this one. Lowering one's priority is always allowed.
  if (priority_ == Priority::Background) (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 19);
  std::unique_lock lock(mutex_);
  for (;;) {
    if (queue_.empty()) {
      if (dirty_) {
        // The queue drained: make the renames durable, then tell finish().
        const uint64_t done = completed_;
        dirty_ = false;
        lock.unlock();
        sync_directory();
        lock.lock();
        synced_ = done;
        room_or_done_.notify_all();
        continue;
      }
      if (stopping_) return;
      work_ready_.wait(lock);
      continue;
    }
    if (!flush_now()) {
      const auto due = std::min(last_queued_ + kQuietTime, oldest_queued_ + kMaxDelay);
      if (std::chrono::steady_clock::now() < due) {
        work_ready_.wait_until(lock, due);
        continue;
      }
    }
    std::vector<Item> batch;
    while (!queue_.empty() && batch.size() < kMaxBatch) {
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    lock.unlock();
    std::vector<PendingFile> files;
    files.reserve(batch.size());
    for (const Item& item : batch) {
      try {
        files.push_back(write_temporary(item.pair));
      } catch (const std::exception& e) {  // e.g. out of memory while serializing
        report(-1, "cannot save a recorded request/response", e.what());
        files.emplace_back();  // no file: counted as failed
      }
    }
    for (PendingFile& file : files) {
      if (file.fd >= 0 && ::fsync(file.fd) != 0) file.err = errno;
    }
    size_t stored = 0;
    for (PendingFile& file : files) stored += name_durably(file) ? 1 : 0;
    lock.lock();
    for (const Item& item : batch) queued_bytes_ -= item.bytes;
    completed_ += batch.size();
    written_ += stored;
    failed_ += batch.size() - stored;
    dirty_ = true;
    room_or_done_.notify_all();
  }
}

RecordWriter::PendingFile RecordWriter::write_temporary(const RecordedPair& pair) {
  const std::string bytes = serialize_pair(pair);
  PendingFile file;
  if (unnamed_files_) {
    file.fd = ::openat(dir_fd_, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    // Named ones from now on where the file system cannot (EOPNOTSUPP; EISDIR from kernels
    // without it); for any other error a named one this time, which names the reason too.
    if (file.fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) unnamed_files_ = false;
  }
  for (int attempt = 0; attempt < 100 && file.fd < 0; attempt++) {
    file.temp = random_name(".tmp-", 8);
    file.fd = ::openat(dir_fd_, file.temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (file.fd < 0 && errno != EEXIST) break;
  }
  if (file.fd < 0) {
    report(errno, "cannot create a file");
    return file;
  }
  try {
    write_all(file.fd, bytes);
  } catch (const SystemError& e) {
    file.err = e.error();
  }
  if (!file.err && ::fchmod(file.fd, 0600) != 0) file.err = errno;  // exactly 0600 whatever the umask
  // Removed at once, not with the rest of the batch: on a full disk its blocks are what the next
  // pairs of the batch need.
  if (file.err) name_durably(file);
  return file;
}

// After its fsync (run): closed, and renamed to its final name, or, after an error, removed.
bool RecordWriter::name_durably(PendingFile& file) {
  if (file.fd < 0) return false;  // never created, or removed already: reported
  int err = file.err;
  if (file.temp.empty()) {  // unnamed: linked through /proc (linkat with AT_EMPTY_PATH needs a capability)
    const std::string self = "/proc/self/fd/" + std::to_string(file.fd);
    std::string name;
    for (int attempt = 0; attempt < 100 && !err && name.empty(); attempt++) {
      std::string candidate = random_name("save.", 6);
      if (::linkat(AT_FDCWD, self.c_str(), dir_fd_, candidate.c_str(), AT_SYMLINK_FOLLOW) == 0) {
        name = std::move(candidate);
      } else if (errno != EEXIST || attempt == 99) {
        err = errno;
      }
    }
    if (::close(file.fd) != 0 && !err) err = errno;
    file.fd = -1;
    if (!err) return true;
    if (!name.empty()) ::unlinkat(dir_fd_, name.c_str(), 0);  // never a file that may be incomplete
    report(err, "cannot save a recorded request/response");
    return false;
  }
  if (::close(file.fd) != 0 && !err) err = errno;  // NFS and others report write errors here
  file.fd = -1;
  if (!err) {
    for (int attempt = 0; attempt < 100; attempt++) {
      if (rename_noreplace(dir_fd_, file.temp, random_name("save.", 6)) == 0) return true;
      err = errno;
      if (err != EEXIST) break;
    }
  }
  ::unlinkat(dir_fd_, file.temp.c_str(), 0);
  report(err, "cannot save a recorded request/response");
  return false;
}

void RecordWriter::sync_directory() {
  if (::fsync(dir_fd_) != 0 && errno != EINVAL && errno != EROFS) report(errno, "cannot sync the directory");
}

// One line per distinct error, so a full disk gives one message rather than one per pair.
void RecordWriter::report(int err, const std::string& what, const std::string& detail) {
  {
    std::lock_guard lock(mutex_);
    if (!reported_errors_.insert(err).second) return;
  }
  const std::string reason = err > 0 ? std::string(std::strerror(err)) : detail;
  if (report_error_) {
    report_error_(what + " in recording directory " + dir_.string() + ": " + reason +
                  " (later pairs failing the same way are counted, not reported)");
  }
}

namespace {
// What a file that is not a regular file is, for messages.
const char* file_kind(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISDIR(mode)) return "a directory";
  return "not a regular file";
}

// Reads one recording file, NAME relative to dir_fd (or a path, with AT_FDCWD), never blocking
// and never following a symbolic link: a FIFO, socket, device or symbolic link put in place of
// a file (even between the directory listing and the open) is refused, as is a file too large
// for a record. nullopt with *why ("shown: reason") if it cannot be read.
std::optional<std::string> read_record_file(int dir_fd, const std::string& name, const std::string& shown,
                                            std::string* why) {
  auto fail = [&](const std::string& reason) -> std::optional<std::string> {
    *why = shown + ": " + reason;
    return std::nullopt;
  };
  struct stat st;
  // Checked before the open too, so that no device is ever opened (opening some has effects).
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) return fail(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return fail(std::string(file_kind(st.st_mode)) + ", not a regular file");
  FileDescriptor fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid()) {
    if (errno == ELOOP) return fail("a symbolic link, not a regular file");
    return fail(std::strerror(errno));
  }
  if (::fstat(fd.get(), &st) < 0) return fail(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return fail(std::string(file_kind(st.st_mode)) + ", not a regular file");
  auto too_large = [&](uint64_t size) {
    return fail("too large for a record (" + std::to_string(size) + " bytes; a record is less than 2 GiB)");
  };
  if (static_cast<uint64_t>(st.st_size) > kMaxRecordFileBytes) return too_large(static_cast<uint64_t>(st.st_size));
  std::string bytes;
  bytes.resize(static_cast<size_t>(st.st_size) + 1);  // one more byte: notices a file that grew
  size_t got = 0;
  for (;;) {
    if (got == bytes.size()) {
      if (bytes.size() > kMaxRecordFileBytes) return too_large(bytes.size());
      bytes.resize(std::min<size_t>(bytes.size() * 2, kMaxRecordFileBytes + 1));
    }
    const ssize_t n = ::read(fd.get(), bytes.data() + got, bytes.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(std::strerror(errno));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  bytes.resize(got);
  return bytes;
}

// The names of the files of a recording, sorted: not hidden ones (unfinished temporary files
// and the like), not subdirectories. UserError if the directory cannot be listed or holds more
// than kMaxRecordingFiles.
std::vector<std::string> recording_file_names(int dir_fd, const fs::path& dir) {
  DIR* listing = ::fdopendir(::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0));
  if (!listing) throw UserError("cannot read recording directory " + dir.string() + ": " + std::strerror(errno));
  std::vector<std::string> names;
  int err = 0;
  for (;;) {
    errno = 0;
    const dirent* d = ::readdir(listing);
    if (!d) {
      err = errno;
      break;
    }
    const std::string name = d->d_name;
    if (name.empty() || name[0] == '.') continue;  // hidden: unfinished temporary files and the like
    if (d->d_type == DT_DIR) continue;             // not files of the recording
    if (d->d_type == DT_UNKNOWN) {
      struct stat st;
      if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) continue;
    }
    if (names.size() == kMaxRecordingFiles) {
      ::closedir(listing);
      throw UserError(dir.string() + " has more than " + std::to_string(kMaxRecordingFiles) +
                      " files; a recording holds one file per request, so this is not one (or split it)");
    }
    names.push_back(name);
  }
  ::closedir(listing);
  if (err) throw UserError("cannot read recording directory " + dir.string() + ": " + std::strerror(err));
  std::sort(names.begin(), names.end());
  return names;
}
}  // namespace

void check_recording_to_append(const fs::path& dir) {
  const std::string name = dir.string();
  const std::string not_one = name + " is not a recording: ";
  const std::string fix =
      "; --append adds to a directory made by mm-record (without --append, mm-record makes a new one)";
  FileDescriptor dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!dir_fd.valid()) {
    const int err = errno;
    struct stat st;
    if (::lstat(dir.c_str(), &st) != 0) {
      if (err == ENOENT) throw UserError(name + " does not exist: nothing to append to" + fix);
      throw UserError("cannot open " + name + ": " + std::strerror(err));
    }
    if (S_ISLNK(st.st_mode))
      throw UserError(name + " is a symbolic link: name the recording directory itself (" + name +
                      "/ or its real path)");
    if (!S_ISDIR(st.st_mode)) throw UserError(not_one + "it is " + file_kind(st.st_mode) + fix);
    throw UserError("cannot open recording directory " + name + ": " + std::strerror(err));
  }
  if (::faccessat(dir_fd.get(), ".", W_OK | X_OK, AT_EACCESS) != 0)
    throw UserError("cannot add to " + name + ": " + std::strerror(errno) + " (the recording must be writable by you)");
  // Subdirectories are no part of a recording: a directory that has any (a home directory, a
  // project) was named by mistake.
  DIR* listing = ::fdopendir(::fcntl(dir_fd.get(), F_DUPFD_CLOEXEC, 0));
  if (!listing) throw UserError("cannot read recording directory " + name + ": " + std::strerror(errno));
  std::string odd, first_name;  // the first entry that is not a regular file; the first file by name
  while (const dirent* d = ::readdir(listing)) {
    if (d->d_name[0] == '.') continue;
    struct stat st;
    if (::fstatat(dir_fd.get(), d->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode)) {
      odd = std::string(d->d_name) + " is " + file_kind(st.st_mode);
      break;
    }
    if (first_name.empty() || d->d_name < first_name) first_name = d->d_name;
  }
  ::closedir(listing);
  if (!odd.empty()) throw UserError(not_one + odd + ", and a recording holds only record files" + fix);
  if (first_name.empty()) return;
  const std::string first = (dir / first_name).string();
  std::string why;
  auto bytes = read_record_file(dir_fd.get(), first_name, first, &why);
  if (bytes && parse_owned_pair(std::move(*bytes), &why)) return;
  throw UserError(not_one + (bytes ? first + " is not a recorded request/response (" + why + ")" : why) + fix);
}

std::string read_recording_file(const fs::path& path) {
  std::string why;
  auto bytes = read_record_file(AT_FDCWD, path.string(), path.string(), &why);
  if (!bytes) throw UserError("cannot read recording file " + why);
  return std::move(*bytes);
}

void scan_recording(const fs::path& dir, const std::function<void(const fs::path&, RecordedPair&&)>& on_pair,
                    const std::function<void(std::string)>& on_warning) {
  // The directory is opened once, without following a symbolic link, and every file is opened
  // relative to it: renaming or replacing the path meanwhile changes nothing.
  FileDescriptor dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!dir_fd.valid()) {
    const int err = errno;
    struct stat st;
    const bool exists = ::lstat(dir.c_str(), &st) == 0;
    if (exists && S_ISLNK(st.st_mode)) {
      throw UserError(dir.string() + " is a symbolic link: name the recording directory itself (" + dir.string() +
                      "/ or its real path)");
    }
    if (exists && !S_ISDIR(st.st_mode))
      throw UserError(dir.string() + " is not a directory (a recording is a directory with one file per request)");
    throw UserError("cannot read recording directory " + dir.string() + ": " +
                    (err == ENOENT ? std::string("no such directory") : std::string(std::strerror(err))));
  }
  const std::vector<std::string> names = recording_file_names(dir_fd.get(), dir);

  for (const std::string& name : names) {
    const fs::path file = dir / name;
    std::string why;
    auto bytes = read_record_file(dir_fd.get(), name, file.string(), &why);
    if (!bytes) {
      on_warning("cannot read recording file " + why + "; skipped");
      continue;
    }
    auto pair = parse_owned_pair(std::move(*bytes), &why);  // the bytes are freed once parsed
    if (!pair) {
      on_warning(file.string() + ": not a recorded request/response (" + why + "); skipped");
      continue;
    }
    on_pair(file, std::move(*pair));
  }
}

LoadedRecording load_recording(const fs::path& dir) {
  LoadedRecording loaded;
  scan_recording(
      dir,
      [&](const fs::path& file, RecordedPair&& pair) {
        loaded.entries.push_back({file, std::move(pair)});
      },
      [&](std::string warning) { loaded.warnings.push_back(std::move(warning)); });
  return loaded;
}

// SPDX-License-Identifier: GPL-3.0-or-later
// Recording files, written (record_file.hh): a new recording's directory, and RecordWriter's
// background thread, which names each pair's file only once it is whole and on disk.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "recording/record_file.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/private_directory.hh"
#include "util/random.hh"

namespace fs = std::filesystem;

namespace {
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

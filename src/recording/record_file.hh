// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Recording files: one HTTP request/response pair per file, a MahimahiProtobufs.RequestResponse
// (http_record.proto) so that recordings move both ways between this tool and the original
// Mahimahi. Writing happens on a background thread, one atomically renamed file per pair, so
// that the recording proxy never waits for the disk and a crash never leaves half a record.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "http/http_message.hh"

// The most certificate names a pair keeps (large CDN certificates list hundreds).
constexpr size_t kMaxCertificateNames = 200;
// What a certificate's DNS name may be to be kept: 1 to 253 bytes of letters, digits, '-', '.',
// '_' and a leading "*." (a wildcard).
bool is_certificate_name(std::string_view name);

struct RecordedPair {
  std::string ip;  // the server's (original destination's) IPv4 address, dotted
  uint16_t port = 0;
  bool https = false;
  HttpMessage request, response;
  // Ours; zero/empty when unknown (e.g. recordings made by the original). Microseconds since the Unix epoch.
  uint64_t request_start_us = 0, request_end_us = 0, response_first_byte_us = 0, response_last_byte_us = 0;
  std::string server_name, protocol;  // TLS server name (SNI); "http/1.1", "http/1.0", ...
  // The server's timing, measured by the recording proxy on its own connection to the server
  // (absent when unknown): the connection's smallest round trip, its TCP handshake's duration,
  // and the server's think time for this response (first byte - request end - one round trip).
  std::optional<uint64_t> server_rtt_us, server_connect_us, server_think_us;
  // The DNS names of the server's certificate (HTTPS; at most kMaxCertificateNames), empty when
  // unknown: which host names a browser may coalesce onto one connection to it.
  std::vector<std::string> server_certificate_names;
  std::string server_tls_version;  // "TLSv1.2", "TLSv1.3" (HTTPS), empty when unknown

  bool operator==(const RecordedPair&) const;
};

// A record is a protobuf message, which cannot be 2 GiB or more (mm-record writes each pair in
// one file, so it cannot write more either). A recording is one file per pair.
constexpr uint64_t kMaxRecordFileBytes = 0x7fffffff;
constexpr size_t kMaxRecordingFiles = 1000000;

// The file's bytes: fields 1-5 as the original writes them, ours (>= 100) only when known.
std::string serialize_pair(const RecordedPair& pair);
// The pair `bytes` hold; nullopt, with the reason in *why (if given), when they are not a valid
// record: not a protobuf message (garbage, truncated), empty, or missing the request or the
// response. `bytes` are freed as soon as they are parsed (large bodies are then held once, not twice).
std::optional<RecordedPair> parse_owned_pair(std::string&& bytes, std::string* why);

// Creates the recording directory (mode 0700). An existing path => UserError "DIR already
// exists: choose a new directory ..."; a missing or unwritable parent => UserError naming it.
void create_record_directory(const std::filesystem::path& dir);

// Checks that an existing DIR can be added to (mm-record --append): a directory, not a symbolic
// link, writable, holding nothing but record files (hidden files aside: unfinished temporary
// files), the first of which, by name, reads as a recorded pair; an empty directory qualifies.
// UserError naming DIR and what is wrong otherwise. New files get names no existing file has
// (RecordWriter never replaces a file), so the recorded files stay untouched.
void check_recording_to_append(const std::filesystem::path& dir);

// Writes pairs into an existing directory from a background thread. Each file is written to an
// unnamed temporary file in the directory (O_TMPFILE, mode 0600), fsync'ed, then linked without
// replacing anything as "save.XXXXXX" (like the original's mkstemp names; unique), so that a
// writer killed at any point (SIGKILL, a crash) leaves no trace of an unfinished file. Where the
// file system has no O_TMPFILE, a hidden named one (".tmp-XXXXXXXX") is renamed instead;
// the directory is fsync'ed whenever the queue drains. Group commit: the pairs queued when the
// thread takes work (up to kMaxBatch) are all written before any is fsync'ed, so that the first
// fsync commits the whole batch in one journal transaction (ext4, XFS) rather than one each. On
// a write error (disk full, EIO, the directory gone) the temporary file is removed, the pair is
// counted as failed, and the error is reported through `report_error` once per distinct errno:
// a line naming the directory and the error text. Nothing half-written ever appears under a
// final name.
class RecordWriter {
 public:
  static constexpr size_t kDefaultMaxQueuedBytes = size_t{512} << 20;
  static constexpr size_t kMaxBatch = 64;  // files open at once

  // Background: the disk work waits for a pause in the program's traffic, so that it does not
  // compete with the program while it is busy (a page load on a machine with few cores): the
  // queued pairs are written when no pair has come for kQuietTime, at the latest kMaxDelay after
  // the oldest came, or at once when kMaxDeferredBytes (or half the queue's bound) are queued, a
  // write() waits for room, or finish() or the destructor asks. The thread runs at the lowest
  // priority (nice 19), so the work takes only the CPU time the program leaves idle (it inherits
  // the ferry's raised priority otherwise). Nothing is reported written before it is on disk
  // either way.
  enum class Priority { Normal, Background };
  static constexpr std::chrono::milliseconds kQuietTime{50}, kMaxDelay{1000};
  static constexpr size_t kMaxDeferredBytes = size_t{16} << 20;

  // The directory must exist (UserError otherwise). report_error is called from the writer's
  // thread.
  RecordWriter(std::filesystem::path dir, std::function<void(const std::string&)> report_error,
               size_t max_queued_bytes = kDefaultMaxQueuedBytes, Priority priority = Priority::Normal);
  ~RecordWriter();  // writes everything still queued, then joins
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  // Queues the pair; never waits for the disk unless max_queued_bytes are already queued, in
  // which case it waits for room (back-pressure rather than loss). A pair bigger than the
  // whole limit is accepted once the queue is empty.
  void write(RecordedPair pair);
  // Waits until every pair queued so far is on disk (or has failed). Idempotent.
  void finish();
  uint64_t written() const;  // pairs stored under their final name
  uint64_t failed() const;   // pairs lost to write errors

 private:
  struct Item {
    RecordedPair pair;
    size_t bytes;
  };
  struct PendingFile {
    std::string temp;  // its temporary name in the directory; empty for an unnamed (O_TMPFILE) one
    int fd = -1;
    int err = 0;  // the first error (then the file is removed and fd is -1)
  };
  void run();
  bool flush_now() const;  // with mutex_ held
  size_t deferred_bytes_limit() const;
  // On the writer thread, for each pair of a batch in turn: written, fsync'ed, named.
  PendingFile write_temporary(const RecordedPair& pair);
  bool name_durably(PendingFile& file);
  void report(int err, const std::string& what, const std::string& detail = "");
  void sync_directory();

  std::filesystem::path dir_;
  std::function<void(const std::string&)> report_error_;
  size_t max_queued_bytes_;
  Priority priority_;
  int dir_fd_ = -1;
  bool unnamed_files_ = true;  // O_TMPFILE until the file system refuses it

  mutable std::mutex mutex_;
  std::condition_variable work_ready_, room_or_done_;
  std::deque<Item> queue_;
  size_t queued_bytes_ = 0;
  uint64_t submitted_ = 0, completed_ = 0, synced_ = 0;
  uint64_t written_ = 0, failed_ = 0;
  bool dirty_ = false, stopping_ = false;
  // Background: when the last pair and the oldest queued one came; who waits for the disk.
  std::chrono::steady_clock::time_point last_queued_, oldest_queued_;
  int waiting_for_room_ = 0, waiting_for_disk_ = 0;
  std::set<int> reported_errors_;
  std::thread thread_;
};

struct RecordingEntry {
  std::filesystem::path file;
  RecordedPair pair;
};
struct LoadedRecording {
  std::vector<RecordingEntry> entries;
  std::vector<std::string> warnings;  // one per skipped file, naming it and why
};
// Reads every non-hidden file in DIR in name order, one file in memory at a time: on_pair gets
// each valid record (its path, dir/NAME, and the pair), on_warning a line for each file skipped,
// naming it and why: not a valid record, or not a regular file (a symbolic link, FIFO, socket or
// device is never followed nor read: the files are opened relative to the directory with
// O_NOFOLLOW | O_NONBLOCK and checked with fstat), or too large for a record (2 GiB).
// Subdirectories are ignored. UserError if DIR is missing, is not a directory, is a symbolic
// link, is unreadable or has more than kMaxRecordingFiles files.
void scan_recording(const std::filesystem::path& dir,
                    const std::function<void(const std::filesystem::path& file, RecordedPair&& pair)>& on_pair,
                    const std::function<void(std::string warning)>& on_warning);
// scan_recording, keeping every pair (mm-recording): a directory with nothing valid gives
// warnings only: the caller decides whether that is an error.
LoadedRecording load_recording(const std::filesystem::path& dir);
// Reads one recording file as scan_recording does (no symbolic link, FIFO, device; < 2 GiB).
// UserError "cannot read recording file PATH: reason".
std::string read_recording_file(const std::filesystem::path& path);

// SPDX-License-Identifier: GPL-3.0-or-later
// Recording files: protobuf (de)serialization and directory loading; the writing is in
// record_writer.cc.
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

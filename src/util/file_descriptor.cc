// SPDX-License-Identifier: GPL-3.0-or-later
// File descriptors and small file helpers, including bounded reads of files users name (see
// file_descriptor.hh).
#include "util/file_descriptor.hh"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>

#include "util/exception.hh"

FileDescriptor& FileDescriptor::operator=(FileDescriptor&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = other.release();
  }
  return *this;
}

void FileDescriptor::close() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

void write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw SystemError("write");
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
}

std::string read_small_file(const std::string& path) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) throw SystemError(path);
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw SystemError(path);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

std::string format_size(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    unit++;
  }
  char text[32];
  if (unit == 0)
    std::snprintf(text, sizeof text, "%llu bytes", static_cast<unsigned long long>(bytes));
  else if (std::abs(value - std::round(value)) < 1e-3 * value)
    std::snprintf(text, sizeof text, "%.0f %s", value, kUnits[unit]);
  else
    std::snprintf(text, sizeof text, "%.3g %s", value, kUnits[unit]);
  return text;
}

std::string user_file_name(const std::string& path) { return path == "-" ? std::string("standard input") : path; }

std::string read_user_file(const std::string& path, const std::string& what, uint64_t max_bytes, std::string_view fix) {
  const bool standard_input = path == "-";
  const std::string name = user_file_name(path);
  auto fail = [&](int error) { return UserError("cannot read " + what + " " + name + ": " + std::strerror(error)); };
  auto too_large = [&] {
    return UserError(what + " " + name + " is larger than " + format_size(max_bytes) + " (the limit)" +
                     (fix.empty() ? std::string() : "; " + std::string(fix)));
  };
  // O_NONBLOCK: opening a FIFO without a writer must not wait forever (it is cleared below).
  FileDescriptor fd(standard_input ? ::fcntl(0, F_DUPFD_CLOEXEC, 0)
                                   : ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd.valid()) throw fail(errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw fail(errno);
  if (standard_input && S_ISCHR(st.st_mode) && !::isatty(fd.get())) {  // < /dev/zero, < /dev/null
    throw UserError("cannot read " + what +
                    " from standard input: it is a character device, not a file or pipe; "
                    "redirect a regular file to it");
  }
  if (!standard_input) {
    const char* kind = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : nullptr;
    if (kind)
      throw UserError("cannot read " + what + " " + name + ": it is " + kind + ", not a file; name a regular file");
    const int flags = ::fcntl(fd.get(), F_GETFL);
    if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) < 0) throw fail(errno);
  }
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > max_bytes) throw too_large();
  std::string text;
  if (S_ISREG(st.st_mode)) text.reserve(static_cast<size_t>(st.st_size));
  char buffer[65536];
  for (;;) {
    // Never more than one byte past the limit, however much a pipe or a growing file offers (a
    // pipe's text grows by doubling: at most twice the limit in memory).
    const size_t want = static_cast<size_t>(std::min<uint64_t>(sizeof buffer, max_bytes - text.size() + 1));
    const ssize_t n = ::read(fd.get(), buffer, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {  // a non-blocking standard input: wait for data
        pollfd p{fd.get(), POLLIN, 0};
        (void)::poll(&p, 1, -1);
        continue;
      }
      throw fail(errno);
    }
    if (n == 0) return text;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > max_bytes) throw too_large();
  }
}

void write_existing_file(const std::string& path, std::string_view value) {
  FileDescriptor fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) throw SystemError(path);
  try {
    write_all(fd.get(), value);
  } catch (const SystemError& e) {
    throw SystemError("writing " + path, e.error());
  }
}

void send_descriptors(int socket, const std::vector<int>& fds) {
  if (fds.empty() || fds.size() > kMaxPassedDescriptors) throw std::logic_error("send_descriptors: bad count");
  char byte = 'D';
  iovec iov{&byte, 1};
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control.data();
  message.msg_controllen = control.size();
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
  std::memcpy(CMSG_DATA(header), fds.data(), sizeof(int) * fds.size());
  while (::sendmsg(socket, &message, MSG_NOSIGNAL) < 0) {
    if (errno != EINTR) throw SystemError("sending descriptors");
  }
}

std::vector<FileDescriptor> receive_descriptors(int socket) {
  char byte = 0;
  iovec iov{&byte, 1};
  std::vector<char> control(CMSG_SPACE(sizeof(int) * kMaxPassedDescriptors));
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control.data();
  message.msg_controllen = control.size();
  ssize_t n;
  while ((n = ::recvmsg(socket, &message, MSG_CMSG_CLOEXEC)) < 0) {
    if (errno != EINTR) throw SystemError("receiving descriptors");
  }
  std::vector<FileDescriptor> received;
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
    const size_t fds = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < fds; i++) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof fd);
      received.emplace_back(fd);
    }
  }
  if (n != 1 || (message.msg_flags & MSG_CTRUNC) || received.empty())
    throw std::runtime_error("no descriptors received, or some cut off");
  return received;
}

std::optional<std::string> read_setting(const std::string& path) {
  try {
    std::string text = read_small_file(path);
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    return text;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

FileDescriptor create_output_file(const std::string& path, bool force) {
  if (path == "-") return FileDescriptor(check_syscall("dup", ::dup(1)));
  FileDescriptor fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (force ? O_TRUNC : O_EXCL), 0644));
  if (!fd.valid()) {
    if (errno == EEXIST) throw UserError(path + " already exists: choose another name, or add --force to overwrite it");
    throw UserError("cannot write " + path + ": " + std::strerror(errno));
  }
  return fd;
}

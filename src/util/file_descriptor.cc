#include "file_descriptor.hh"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "exception.hh"

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

std::string read_user_file(const std::string& path, const std::string& what) {
  FileDescriptor fd(path == "-" ? ::fcntl(0, F_DUPFD_CLOEXEC, 0) : ::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  auto fail = [&] { return UserError("cannot read " + what + " " + path + ": " + std::strerror(errno)); };
  if (!fd.valid()) throw fail();
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw fail();
    }
    if (n == 0) return text;
    text.append(buffer, static_cast<size_t>(n));
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

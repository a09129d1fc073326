// SPDX-License-Identifier: GPL-3.0-or-later
// Private directory creation and checks (see private_directory.hh).
#include "util/private_directory.hh"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "util/file_descriptor.hh"

namespace fs = std::filesystem;

namespace {
std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// Creates the missing directories above `dir`, each with mode 0700.
void make_parents(const fs::path& dir, const std::string& fix) {
  fs::path so_far;
  for (const auto& part : dir.parent_path()) {
    if (part.empty()) continue;
    so_far /= part;
    if (::mkdir(so_far.c_str(), 0700) == 0) {
      if (::chmod(so_far.c_str(), 0700) != 0) {
        const int error = errno;
        throw PrivateDirectoryError("cannot chmod " + so_far.string() + ": " + std::strerror(error) + "; " + fix,
                                    error);
      }
      continue;
    }
    const int error = errno;
    struct stat st {};
    if (::stat(so_far.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) continue;
    throw PrivateDirectoryError("cannot create directory " + so_far.string() + ": " + std::strerror(error) + "; " + fix,
                                error);
  }
}
}  // namespace

void make_private_directory(const fs::path& path, const PrivateDirectoryOptions& options) {
  fs::path dir = fs::absolute(path).lexically_normal();
  if (!dir.has_filename() && dir.has_parent_path()) dir = dir.parent_path();  // "DIR/" is DIR
  const std::string name = dir.string(), fix = options.fix;
  if (options.create_parents) make_parents(dir, fix);

  const bool created = ::mkdir(dir.c_str(), 0700) == 0;
  if (!created && (errno != EEXIST || options.must_be_new)) {
    const int error = errno;
    throw PrivateDirectoryError("cannot create directory " + name + ": " + std::strerror(error) + "; " + fix, error);
  }
  // Before opening it: a umask such as 0777 leaves a new directory that even its owner cannot open.
  if (created && ::chmod(dir.c_str(), 0700) != 0) {
    const int error = errno;
    throw PrivateDirectoryError("cannot chmod " + name + ": " + std::strerror(error) + "; " + fix, error);
  }
  // Checked through a descriptor opened without following a link, so that what is checked is
  // what stays: renaming another directory into place afterwards changes nothing checked here.
  const FileDescriptor fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) {
    const int error = errno;
    struct stat st {};
    if (::lstat(dir.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
      throw PrivateDirectoryError(name + " is a symbolic link, not a directory; " + fix, 0);
    if (error == ENOTDIR) throw PrivateDirectoryError(name + " exists and is not a directory; " + fix, 0);
    throw PrivateDirectoryError("cannot open directory " + name + ": " + std::strerror(error) + "; " + fix, error);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    const int error = errno;
    throw PrivateDirectoryError("cannot examine " + name + ": " + std::strerror(error) + "; " + fix, error);
  }
  if (st.st_uid != ::geteuid()) {
    throw PrivateDirectoryError(name + " belongs to another user (uid " + std::to_string(st.st_uid) +
                                    "); a private directory must be yours; " + fix,
                                0);
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    throw PrivateDirectoryError(name + " is writable by other users (mode " + octal_mode(st.st_mode) +
                                    "); run chmod go-w " + name + ", or " + fix,
                                0);
  }
}

fs::path temporary_directory() {
  const char* tmpdir = std::getenv("TMPDIR");
  return tmpdir && tmpdir[0] == '/' ? fs::path(tmpdir) : fs::path("/tmp");
}

std::string unguessable_name() {
  uint8_t bytes[16];
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) throw SystemError("getrandom");
  static const char* kHex = "0123456789abcdef";
  std::string name;
  for (uint8_t b : bytes) name += kHex[b >> 4], name += kHex[b & 15];
  return name;
}

WorkDirectory::WorkDirectory(Prefix prefix) {
  std::string pattern = (temporary_directory() / (std::string(prefix.name) + ".XXXXXX")).string();
  if (!::mkdtemp(pattern.data())) throw SystemError("creating a directory in " + temporary_directory().string());
  path_ = pattern;
}

WorkDirectory::WorkDirectory(const std::filesystem::path& path) {
  if (::mkdir(path.c_str(), 0700) != 0) throw SystemError("creating the directory " + path.string());
  path_ = path;
}

WorkDirectory::~WorkDirectory() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Error types: each carries a message meant for the user, naming the input and the fix.
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

// A failed system call; the text is "what: strerror(errno)".
class SystemError : public std::runtime_error {
 public:
  explicit SystemError(const std::string& what, int err = errno)
      : std::runtime_error(what + ": " + std::strerror(err)), error_(err) {}
  int error() const { return error_; }

 private:
  int error_;
};

// Bad command line: printed with a usage hint, exit status 2.
class UsageError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A problem the user can fix (missing kernel feature, not setuid, unreadable file): exit status 1.
class UserError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A failure that calls for an exit status of its own, e.g. 127 for a command that cannot be
// found, as shells report it.
class StatusError : public std::runtime_error {
 public:
  StatusError(const std::string& what, int status) : std::runtime_error(what), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

template <typename T>
inline T check_syscall(const std::string& what, T ret) {
  if (ret < 0) throw SystemError(what);
  return ret;
}

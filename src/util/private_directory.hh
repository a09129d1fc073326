// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Creating a directory that only its owner may use (a recording, the local CA, an NSS database)
// and checking that an existing one is safe to keep private files in. One policy for all: the
// directory is made with mode 0700 whatever the umask, and the final directory must be a real
// directory (not a symbolic link), owned by the effective user, and not writable by group or
// others. Directories above it that already exist are taken as they are (/home, /tmp).
#include <filesystem>
#include <string>
#include <string_view>

#include "util/exception.hh"

struct PrivateDirectoryOptions {
  bool create_parents = true;  // else a missing parent fails (ENOENT)
  bool must_be_new = false;    // else an existing directory that passes the checks is accepted
  std::string fix;             // what the user can do, appended to every message after "; "
};

// A directory that could not be made, or is not private. The message names the path.
class PrivateDirectoryError : public UserError {
 public:
  PrivateDirectoryError(const std::string& message, int error) : UserError(message), error_(error) {}
  // The errno of the call that failed, or 0 if the directory exists but fails a check.
  int error() const { return error_; }

 private:
  int error_;
};

// Where temporary files go: $TMPDIR if it is an absolute path, else /tmp.
std::filesystem::path temporary_directory();

// Makes `dir` private as described above; throws PrivateDirectoryError.
void make_private_directory(const std::filesystem::path& dir, const PrivateDirectoryOptions& options);

// 128 random bits as hex: a name in /tmp no other user can take first.
std::string unguessable_name();

// A private directory (0700) for a program's working files, removed with everything in it when
// this goes.
class WorkDirectory {
 public:
  struct Prefix {
    std::string_view name;
  };
  // A new one in temporary_directory(), named NAME.XXXXXX.
  explicit WorkDirectory(Prefix prefix);
  // At a path chosen beforehand (with a part no one else can guess: unguessable_name()), made new.
  explicit WorkDirectory(const std::filesystem::path& path);
  ~WorkDirectory();
  WorkDirectory(const WorkDirectory&) = delete;
  WorkDirectory& operator=(const WorkDirectory&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

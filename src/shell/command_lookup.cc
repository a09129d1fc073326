// SPDX-License-Identifier: GPL-3.0-or-later
// Finding the command as bash does, with the caller's rights. See command_lookup.hh.
#include "shell/command_lookup.hh"

#include <sys/stat.h>
#include <unistd.h>

#include <optional>
#include <string_view>

#include "util/child_process.hh"
#include "util/exception.hh"
#include "util/text.hh"

namespace {

enum class Candidate { runnable, not_executable, directory, missing };

// What `path` is to the caller. access(2) checks the real IDs; stat(2) is asked only about a
// path the caller can reach (access succeeded), so it tells nothing the caller could not learn.
Candidate examine(const std::string& path) {
  if (::access(path.c_str(), F_OK) != 0) return Candidate::missing;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return Candidate::missing;
  if (S_ISDIR(st.st_mode)) return Candidate::directory;
  if (!S_ISREG(st.st_mode)) return Candidate::not_executable;
  return ::access(path.c_str(), X_OK) == 0 ? Candidate::runnable : Candidate::not_executable;
}

[[noreturn]] void refuse(const std::string& name, const char* reason, int status) {
  throw StatusError(printable(name, 200) + ": " + reason, status);
}

}  // namespace

std::string resolve_command(const std::string& name, const char* path_variable) {
  if (name.empty()) refuse(name, "command not found", 127);
  if (name.find('/') != std::string::npos) {
    switch (examine(name)) {
      case Candidate::runnable:
        return name;
      case Candidate::missing:
        refuse(name, "No such file or directory", 127);
      case Candidate::directory:
        refuse(name, "Is a directory", 126);
      case Candidate::not_executable:
        refuse(name, "Permission denied", 126);
    }
  }
  const std::string_view path = path_variable ? path_variable : kDefaultCommandPath;
  if (path.size() > kMaxCommandPath)
    throw StatusError("PATH is longer than " + std::to_string(kMaxCommandPath) + " bytes; shorten it", 127);
  std::string first_not_executable;
  size_t start = 0;
  for (;;) {
    const size_t end = std::min(path.find(':', start), path.size());
    const std::string_view directory = path.substr(start, end - start);
    const std::string candidate = directory.empty() ? "./" + name : std::string(directory) + "/" + name;
    const Candidate what = examine(candidate);
    if (what == Candidate::runnable) return candidate;
    if (what == Candidate::not_executable && first_not_executable.empty()) first_not_executable = candidate;
    if (end == path.size()) break;
    start = end + 1;
  }
  // bash runs a file it found but cannot execute, and exec reports the reason.
  if (!first_not_executable.empty()) refuse(first_not_executable, "Permission denied", 126);
  refuse(name, "command not found", 127);
}

namespace {
// mahimahi's programs and aliases, as src/Makefile.am installs them (the integration test of
// --version runs each one, nested, with a PATH that holds none of them).
constexpr std::string_view kOwnPrograms[] = {"mm-delay",
                                             "mm-loss",
                                             "mm-onoff",
                                             "mm-intermittent",
                                             "mm-link",
                                             "mm-meter",
                                             "mm-record",
                                             "mm-replay",
                                             "mm-ca",
                                             "mm-pageload",
                                             "mm-sweep",
                                             "mm-recording",
                                             "mm-trace",
                                             "mm-delay-graph",
                                             "mm-throughput-graph",
                                             "mm-preset",
                                             "mm-webrecord",
                                             "mm-webreplay",
                                             "mm-cumulus-local",
                                             "mm-cumulus-remote",
                                             "mm-monkey",
                                             "mm-paths",
                                             "mm-eth"};

bool own_program(std::string_view name) {
  for (std::string_view own : kOwnPrograms)
    if (name == own) return true;
  return false;
}
}  // namespace

std::string resolve_program(const std::string& name, const char* path_variable) {
  if (own_program(name)) {
    if (const std::optional<std::string> self = own_executable()) {
      const std::string sibling = self->substr(0, self->rfind('/') + 1) + name;
      if (examine(sibling) == Candidate::runnable) return sibling;
    }
  }
  return resolve_command(name, path_variable);
}

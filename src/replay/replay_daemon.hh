// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One replay daemon (an Apache httpd or dnsmasq): a child process running a program in its own
// process group, so that its own children (Apache's workers) can be stopped with it, with a fixed
// minimal environment, its output going to a log file, and the guardian told about the group.
// Also reading those logs back for error messages: the last meaningful lines, start-up chatter
// left out.
#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "util/file_descriptor.hh"

class ReplayGuardian;

class ReplayDaemon {
 public:
  // Starts `program` with `args`; standard output and error are appended to `log`. A program that
  // cannot be run is a UserError.
  ReplayDaemon(const std::filesystem::path& program, const std::vector<std::string>& args,
               const std::filesystem::path& log, ReplayGuardian& guardian);
  ~ReplayDaemon() { kill_and_reap(); }
  ReplayDaemon(const ReplayDaemon&) = delete;
  ReplayDaemon& operator=(const ReplayDaemon&) = delete;

  const std::filesystem::path& log() const { return log_; }
  pid_t pid() const { return pid_; }

  // Has the process ended? Leaves it unreaped, so that its process group id stays ours.
  bool ended();
  // "exited with status 1", "was killed by SIGKILL", ...
  std::string how_it_ended() const;
  void terminate() const;  // SIGTERM to the leader, unless it has ended
  // SIGKILL to the whole group (the leader may already be a zombie), then reaps the leader.
  void kill_and_reap();

 private:
  std::filesystem::path log_;
  ReplayGuardian& guardian_;
  pid_t pid_ = -1;
  bool ended_ = false;   // known to have ended (zombie or reaped)
  bool reaped_ = false;  // by us, or lost to another waiter: the pid may be reused now
  int status_ = -1;      // exit status, 128 + signal number, or -1 if unknown
};

// An fd at 3 or above (close-on-exec), so that placing it on 0, 1 or 2 in a child always clears
// close-on-exec.
FileDescriptor open_high(const std::filesystem::path& path, int flags, mode_t mode = 0);

// Writes a file the daemons read (configuration, hosts): mode 0600, replacing any old one.
void write_daemon_file(const std::filesystem::path& path, const std::string& text);

// Is this a log line every start and stop writes, which says nothing about a problem?
bool is_log_chatter(const std::string& line);

// "[Sun Nov 22 07:08:16.222877 2026] [core:emerg] [pid 9:tid 9] (98)Address..." -> "[core:emerg] (98)Address...".
std::string without_apache_prefix(const std::string& line);

// The last `count` meaningful lines of a daemon's log (at most its last 64 KiB are read).
std::vector<std::string> daemon_log_lines(const std::filesystem::path& log, size_t count);

// Text for an error: a daemon's last words, each line indented on a line of its own, or a line
// saying it wrote nothing.
std::string quoted_daemon_log(const std::filesystem::path& log);

// SPDX-License-Identifier: GPL-3.0-or-later
// One replay daemon: spawning it (util/child_process), watching it end, stopping its process
// group; reading its log back. See replay_daemon.hh.
#include "replay/replay_daemon.hh"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <sstream>

#include "replay/replay_guardian.hh"
#include "util/child_process.hh"
#include "util/exception.hh"

namespace fs = std::filesystem;

namespace {

// The end of a (log) file: at most max_bytes, starting at a line.
std::string file_tail(const fs::path& path, size_t max_bytes) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return {};
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) return {};
  const off_t size = info.st_size;
  const off_t start = size > static_cast<off_t>(max_bytes) ? size - static_cast<off_t>(max_bytes) : 0;
  std::string text(static_cast<size_t>(size - start), '\0');
  const ssize_t n = ::pread(fd.get(), text.data(), text.size(), start);
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  if (start > 0) {
    const size_t newline = text.find('\n');
    text.erase(0, newline == std::string::npos ? text.size() : newline + 1);
  }
  return text;
}

}  // namespace

ReplayDaemon::ReplayDaemon(const fs::path& program, const std::vector<std::string>& args, const fs::path& log,
                           ReplayGuardian& guardian)
    : log_(log), guardian_(guardian) {
  FileDescriptor null_fd = open_high("/dev/null", O_RDONLY);
  FileDescriptor log_fd = open_high(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
  SpawnOptions options;
  options.stdin_fd = null_fd.get();
  options.stdout_fd = log_fd.get();
  options.stderr_fd = log_fd.get();
  options.close_other_fds = true;  // whatever the caller left without close-on-exec
  // A fixed, minimal environment: nothing of the user's reaches the daemons (Apache passes PATH on
  // to the FastCGI application).
  options.environment = std::vector<std::string>{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"};
  options.new_process_group = true;
  options.default_signals = true;  // mm-replay blocks SIGTERM & co; the daemons need them
  try {
    pid_ = spawn_program(program, args, options);
  } catch (const SystemError& e) {
    throw UserError(e.what());  // "cannot run PROGRAM: reason"
  }
  guardian_.watch(pid_);
}

bool ReplayDaemon::ended() {
  if (ended_) return true;
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    if (errno == EINTR) return false;
    ended_ = reaped_ = true;  // ECHILD: someone else's wait reaped it
    guardian_.forget(pid_);
    return true;
  }
  if (info.si_pid != pid_) return false;
  ended_ = true;
  status_ = info.si_code == CLD_EXITED ? info.si_status : 128 + info.si_status;
  return true;
}

std::string ReplayDaemon::how_it_ended() const {
  if (status_ < 0) return "ended";
  return ::how_it_ended(status_);
}

void ReplayDaemon::terminate() const {
  if (!ended_) ::kill(pid_, SIGTERM);
}

void ReplayDaemon::kill_and_reap() {
  if (pid_ < 0 || reaped_) return;
  ::kill(-pid_, SIGKILL);  // the group still exists: its leader is at worst an unreaped zombie
  guardian_.forget(pid_);
  int status = 0;
  pid_t reaped = -1;
  while ((reaped = ::waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
  }
  if (status_ < 0 && reaped == pid_) status_ = shell_exit_code(status);
  ended_ = reaped_ = true;
}

FileDescriptor open_high(const fs::path& path, int flags, mode_t mode) {
  FileDescriptor fd(::open(path.c_str(), flags | O_CLOEXEC, mode));
  if (!fd.valid()) throw SystemError("opening " + path.string());
  if (fd.get() < 3) fd = FileDescriptor(check_syscall("fcntl", ::fcntl(fd.get(), F_DUPFD_CLOEXEC, 3)));
  return fd;
}

void write_daemon_file(const fs::path& path, const std::string& text) {
  FileDescriptor fd = open_high(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  write_all(fd.get(), text);
}

bool is_log_chatter(const std::string& line) {
  static const char* const kRoutine[] = {
      "AH00489:",  // Apache: "Apache/... configured -- resuming normal operations"
      "AH00094:",  // "Command line: ..."
      "AH00491:",  // "caught SIGTERM, shutting down"
      "AH00492:",  // "caught SIGWINCH, shutting down gracefully"
      "AH01882:",  // Debian's mod_ssl built against a newer OpenSSL 3.0.x than the one installed: harmless
      "]: started, version",
      "]: compile time options",
      "]: using only locally-known addresses",  // dnsmasq
      "]: read ",
      "]: exiting on receipt of SIGTERM",
      "]: warning: no upstream servers configured",  // indeed: --no-resolv, by design
  };
  if (line.find_first_not_of(" \t\r") == std::string::npos) return true;
  return std::any_of(std::begin(kRoutine), std::end(kRoutine),
                     [&](const char* pattern) { return line.find(pattern) != std::string::npos; });
}

std::string without_apache_prefix(const std::string& line) {
  std::string out = line;
  if (!out.empty() && out[0] == '[') {
    const size_t end = out.find("] ");
    if (end != std::string::npos && end > 20) out.erase(0, end + 2);  // the date
  }
  const size_t pid = out.find("[pid ");
  if (pid != std::string::npos) {
    const size_t end = out.find("] ", pid);
    if (end != std::string::npos) out.erase(pid, end + 2 - pid);
  }
  return out;
}

std::vector<std::string> daemon_log_lines(const fs::path& log, size_t count) {
  std::vector<std::string> lines;
  std::istringstream in(file_tail(log, 64 * 1024));
  std::string line;
  while (std::getline(in, line)) {
    if (!is_log_chatter(line)) lines.push_back(line);
  }
  if (lines.size() > count) lines.erase(lines.begin(), lines.end() - static_cast<std::ptrdiff_t>(count));
  return lines;
}

std::string quoted_daemon_log(const fs::path& log) {
  std::string text;
  for (const std::string& line : daemon_log_lines(log, 8)) text += "\n  " + without_apache_prefix(line);
  return text.empty() ? "\n  (it wrote nothing to " + log.string() + ")" : text;
}

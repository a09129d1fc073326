// SPDX-License-Identifier: GPL-3.0-or-later
// The browser process of one load (see chromium.hh).
#include "pageload/chromium.hh"

#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "tls/nss_database.hh"
#include "util/child_process.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/private_directory.hh"

namespace fs = std::filesystem;

namespace {
constexpr Nanos kGracefulCloseWait = 5 * kNanosPerSec;
constexpr Nanos kKillWait = 10 * kNanosPerSec;

// The process group and state of `pid` from /proc/PID/stat; false if it is gone.
bool process_group_and_state(pid_t pid, pid_t& group, char& state) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(file, stat)) return false;
  const size_t name_end = stat.rfind(')');  // the name may hold spaces and parentheses
  if (name_end == std::string::npos) return false;
  std::istringstream fields(stat.substr(name_end + 1));
  pid_t parent = 0;
  fields >> state >> parent >> group;
  return static_cast<bool>(fields);
}

// Living (not zombie) processes of the browser: members of its process group, and processes
// whose command line names the load's directory (the crash handler leaves the group: it starts
// a session of its own, but its database lives in the load's HOME).
std::vector<pid_t> browser_processes(pid_t group, const std::string& directory) {
  std::vector<pid_t> found;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (pid == ::getpid()) continue;
    pid_t its_group = 0;
    char state = '?';
    if (!process_group_and_state(pid, its_group, state) || state == 'Z') continue;
    if (its_group == group) {
      found.push_back(pid);
      continue;
    }
    std::ifstream cmdline(entry.path() / "cmdline");
    std::string text((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    if (text.find(directory) != std::string::npos) found.push_back(pid);
  }
  return found;
}

// Reaps every child that has ended (this process is a child subreaper: the browser's orphans
// come back to it rather than to init).
void reap_ended_children() {
  int status = 0;
  while (::waitpid(-1, &status, WNOHANG) > 0) {
  }
}

// Waits up to `wait` for `pid` (a child) to exit, reaping it; true if it did.
bool wait_child_exit(pid_t pid, Nanos wait) {
  const Nanos deadline = monotonic_now() + wait;
  for (;;) {
    int status = 0;
    const pid_t got = ::waitpid(pid, &status, WNOHANG);
    if (got == pid || (got < 0 && errno == ECHILD)) return true;
    if (monotonic_now() >= deadline) return false;
    // A condition polled with a deadline: the exit of a child has no descriptor to wait on
    // here without pidfd_open, which the browser's pid (reaped by us alone) does not need.
    ::usleep(10'000);
  }
}

std::vector<char*> null_terminated(std::vector<std::string>& words) {
  std::vector<char*> pointers;
  for (std::string& word : words) pointers.push_back(word.data());
  pointers.push_back(nullptr);
  return pointers;
}
}  // namespace

// ---- BrowserProfileTemplate

BrowserProfileTemplate::BrowserProfileTemplate(const std::vector<fs::path>& trusted_certificates) {
  std::string pattern = (temporary_directory() / "mm-pageload.XXXXXX").string();
  if (!::mkdtemp(pattern.data())) {
    throw UserError("cannot create a temporary directory in " + temporary_directory().string() + ": " +
                    std::strerror(errno) + "; set TMPDIR to a writable directory");
  }
  directory_ = pattern;
  try {
    if (!trusted_certificates.empty()) {
      const NssDatabase db{directory_ / "nssdb"};
      nss_create(db, run_certutil, "set TMPDIR to a writable directory");
      int n = 0;
      for (const fs::path& certificate : trusted_certificates) {
        nss_add_trusted(db, certificate, "mm-pageload trusted " + std::to_string(++n), run_certutil);
      }
    }
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(directory_, ignored);
    throw;
  }
}

BrowserProfileTemplate::~BrowserProfileTemplate() {
  std::error_code ignored;
  fs::remove_all(directory_, ignored);
}

fs::path BrowserProfileTemplate::new_load_directory() {
  const fs::path load = directory_ / ("load-" + std::to_string(++loads_));
  fs::create_directories(load / "home");
  fs::create_directories(load / "profile");
  fs::create_directories(load / "tmp");
  if (fs::exists(directory_ / "nssdb")) {
    fs::create_directories(load / "home" / ".pki");
    fs::copy(directory_ / "nssdb", load / "home" / ".pki" / "nssdb", fs::copy_options::recursive);
  }
  return load;
}

// ---- Browser

std::vector<std::string> chromium_arguments(const BrowserOptions& options, const fs::path& profile, bool as_root) {
  std::vector<std::string> arguments = {
      "--headless=new",
      "--remote-debugging-pipe",
      "--user-data-dir=" + profile.string(),
      "--no-first-run",
      "--no-default-browser-check",
      // No traffic of the browser's own (updates, safe browsing lists, sync) inside the shells
      // being measured.
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-default-apps",
      "--window-size=" + std::to_string(options.width) + "," + std::to_string(options.height),
  };
  if (options.http3_forced) {
    arguments.push_back("--origin-to-force-quic-on=*");
  } else if (!options.quic) {
    arguments.push_back("--disable-quic");
  } else if (!options.quic_exempt_hosts.empty()) {
    std::string hosts;
    for (const std::string& host : options.quic_exempt_hosts) hosts += (hosts.empty() ? "" : ",") + host + ":1";
    arguments.push_back("--origin-to-force-quic-on=" + hosts);
  }
  if (!options.http2) arguments.push_back("--disable-http2");
  // Chromium's sandbox needs user namespaces that root does not get; as an ordinary user it stays.
  if (as_root) arguments.push_back("--no-sandbox");
  arguments.insert(arguments.end(), options.extra_flags.begin(), options.extra_flags.end());
  arguments.push_back("about:blank");
  return arguments;
}

Browser::Browser(const BrowserOptions& options, fs::path load_directory, int interrupt_fd, Nanos ready_deadline)
    : directory_(std::move(load_directory)) {
  // Orphans of the browser (its crash handler double-forks) come back to this process, which
  // then reaps them, instead of to init.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);

  std::vector<std::string> argv_text{options.program};
  for (std::string& argument : chromium_arguments(options, directory_ / "profile", ::geteuid() == 0)) {
    argv_text.push_back(std::move(argument));
  }
  // Its environment: ours, with HOME (where Chromium finds ~/.pki/nssdb) and the XDG
  // directories inside the load's directory.
  const fs::path home = directory_ / "home";
  std::vector<std::string> environment_text;
  for (char** variable = environ; *variable; variable++) {
    const std::string_view text(*variable);
    if (text.starts_with("HOME=") || text.starts_with("XDG_CONFIG_HOME=") || text.starts_with("XDG_CACHE_HOME=") ||
        text.starts_with("XDG_DATA_HOME=") || text.starts_with("TMPDIR="))
      continue;
    environment_text.emplace_back(text);
  }
  environment_text.push_back("HOME=" + home.string());
  environment_text.push_back("XDG_CONFIG_HOME=" + (home / ".config").string());
  environment_text.push_back("XDG_CACHE_HOME=" + (home / ".cache").string());
  environment_text.push_back("XDG_DATA_HOME=" + (home / ".local/share").string());
  // Its temporary files (org.chromium.Chromium.*) too: a browser killed mid-load cannot
  // remove them, and removing the load's directory then does.
  environment_text.push_back("TMPDIR=" + (directory_ / "tmp").string());
  std::vector<char*> argv = null_terminated(argv_text);
  std::vector<char*> envp = null_terminated(environment_text);

  int commands[2], replies[2], exec_report[2];
  check_syscall("pipe2", ::pipe2(commands, O_CLOEXEC));
  FileDescriptor commands_read(commands[0]), commands_write(commands[1]);
  check_syscall("pipe2", ::pipe2(replies, O_CLOEXEC));
  FileDescriptor replies_read(replies[0]), replies_write(replies[1]);
  check_syscall("pipe2", ::pipe2(exec_report, O_CLOEXEC));
  FileDescriptor report_read(exec_report[0]), report_write(exec_report[1]);
  // The browser's ends, moved above 4 so that placing them on 3 and 4 cannot overwrite each other.
  FileDescriptor browser_in(check_syscall("fcntl", ::fcntl(commands_read.get(), F_DUPFD_CLOEXEC, 10)));
  FileDescriptor browser_out(check_syscall("fcntl", ::fcntl(replies_write.get(), F_DUPFD_CLOEXEC, 10)));
  commands_read.close();
  replies_write.close();
  FileDescriptor null_fd(check_syscall("open /dev/null", ::open("/dev/null", O_RDWR | O_CLOEXEC)));
  const fs::path log = directory_ / "chromium.log";
  FileDescriptor log_fd(::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!log_fd.valid()) throw SystemError("cannot create " + log.string());

  // fork rather than posix_spawn: the child must set PR_SET_PDEATHSIG, which posix_spawn
  // cannot. This process has no other threads, and the child calls only async-signal-safe
  // functions before exec.
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw SystemError("fork");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before the line above
    ::setpgid(0, 0);
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);  // mm-pageload blocks SIGINT, SIGTERM, SIGHUP
    for (int signal = 1; signal < NSIG; signal++) ::signal(signal, SIG_DFL);
    ::dup2(null_fd.get(), 0);
    ::dup2(log_fd.get(), 1);
    ::dup2(log_fd.get(), 2);
    ::dup2(browser_in.get(), 3);
    ::dup2(browser_out.get(), 4);
    ::syscall(SYS_close_range, 5U, ~0U, CLOSE_RANGE_CLOEXEC);
    ::execve(argv[0], argv.data(), envp.data());
    const int error = errno;
    (void)!::write(report_write.get(), &error, sizeof error);
    ::_exit(127);
  }
  pid_ = pid;
  ::setpgid(pid, pid);  // also here, so that the group exists before either side goes on
  browser_in.close();
  browser_out.close();
  report_write.close();
  int exec_error = 0;
  ssize_t got;
  while ((got = ::read(report_read.get(), &exec_error, sizeof exec_error)) < 0 && errno == EINTR) {
  }
  if (got == sizeof exec_error) {
    wait_child_exit(pid_, kKillWait);
    pid_ = -1;
    std::error_code ignored;
    fs::remove_all(directory_, ignored);
    throw UserError("cannot run the browser " + options.program + ": " + std::strerror(exec_error) +
                    "; give the Chromium binary with --browser PATH");
  }
  pipe_ = std::make_unique<DevToolsPipe>(std::move(commands_write), std::move(replies_read), interrupt_fd);
  try {
    // The first answer says it is ready: no fixed wait for its start.
    pipe_->call("Browser.getVersion", nlohmann::json::object(), "", ready_deadline);
  } catch (const DevToolsClosed& e) {
    const std::string tail = log_tail();
    close(false);
    throw DevToolsClosed(std::string(e.what()) + " at its start: " + tail);
  } catch (...) {
    close(false);
    throw;
  }
}

Browser::~Browser() { close(); }

std::string Browser::log_tail() const {
  std::ifstream log(directory_ / "chromium.log");
  std::vector<std::string> lines;
  for (std::string line; std::getline(log, line);) {
    // Chromium complains at every start about a missing D-Bus; that says nothing of this load.
    if (line.empty() || line.find("dbus") != std::string::npos) continue;
    lines.push_back(line);
    if (lines.size() > 3) lines.erase(lines.begin());
  }
  std::string tail;
  for (const std::string& line : lines) tail += (tail.empty() ? "" : " | ") + line.substr(0, 300);
  return tail.empty() ? "it wrote nothing on its standard error" : tail;
}

void Browser::close(bool graceful) {
  if (pid_ < 0) return;
  try {
    if (graceful && pipe_) {
      try {
        pipe_->notify("Browser.close", nlohmann::json::object(), "");
      } catch (const std::exception&) {
        // Already gone or not reading: the kill below does it.
      }
      wait_child_exit(pid_, kGracefulCloseWait);
    }
    pipe_.reset();
    const std::string directory = directory_.string();
    const Nanos deadline = monotonic_now() + kKillWait;
    for (;;) {
      ::kill(-pid_, SIGKILL);
      const std::vector<pid_t> left = browser_processes(pid_, directory);
      for (pid_t process : left) ::kill(process, SIGKILL);
      for (pid_t child : list_children()) ::kill(child, SIGKILL);
      reap_ended_children();
      if ((left.empty() && list_children().empty()) || monotonic_now() >= deadline) break;
      ::usleep(10'000);  // polled with a deadline: the killed processes need a moment to end
    }
  } catch (const std::exception&) {
    // Never throw from here (destructors call it); what could not be listed was killed by group.
  }
  pid_ = -1;
  std::error_code ignored;
  if (!keep_directory_) fs::remove_all(directory_, ignored);
}

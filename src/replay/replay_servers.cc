// Replay's daemons: Apache httpd per recorded IP:port and dnsmasq, started in parallel, supervised
// as child processes, stopped together. See replay_servers.hh.
#include "replay/replay_servers.hh"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iterator>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>
#include <thread>

#include "tls/certificate_authority.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/host_name.hh"
#include "util/text.hh"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kStartTimeout = std::chrono::seconds(10);
constexpr auto kStopGrace = std::chrono::seconds(2);
constexpr auto kPollInterval = std::chrono::milliseconds(5);

}  // namespace

// Where the programs are: Debian's by default, anything else through the environment.
struct ReplayServers::Programs {
  fs::path apache, modules, dnsmasq;
};

ReplayServers::Programs ReplayServers::find_programs() {
  auto from_env = [](const char* variable, const char* fallback) {
    const char* value = std::getenv(variable);
    return fs::path(value && *value ? value : fallback);
  };
  return {from_env("MAHIMAHI_APACHE2", "/usr/sbin/apache2"),
          from_env("MAHIMAHI_APACHE_MODULES", "/usr/lib/apache2/modules"),
          from_env("MAHIMAHI_DNSMASQ", "/usr/sbin/dnsmasq")};
}

namespace {

void require_executable(const fs::path& program, const std::string& what, const std::string& install) {
  if (::access(program.c_str(), X_OK) != 0) {
    throw UserError("replay needs " + what + ", but " + program.string() + " cannot be run (" + std::strerror(errno) +
                    "); " + install);
  }
}

// A path Apache's configuration can hold: its syntax has no escape for these characters, and '|'
// would end the socket path in ProxyPass.
void require_plain_path(const fs::path& path) {
  for (unsigned char c : path.string()) {
    if (c == '"' || c == '\\' || c == '|' || c < 0x20 || c == 0x7f) {
      throw UserError(
          "cannot use " + path.string() +
          " for replay's servers: Apache cannot quote its name; set TMPDIR to a plain directory such as /tmp");
    }
  }
}

// A quoted argument for Apache's configuration (the paths in it were checked as above).
std::string config_quoted(const fs::path& path) {
  const std::string text = path.string();
  for (unsigned char c : text) {
    if (c == '"' || c == '\\' || c < 0x20 || c == 0x7f) {
      throw UserError("cannot put " + text + " in Apache's configuration: it cannot quote that name");
    }
  }
  return '"' + text + '"';
}

std::optional<in_addr> parse_ipv4(const std::string& text) {
  in_addr address{};
  if (::inet_pton(AF_INET, text.c_str(), &address) != 1) return std::nullopt;
  return address;
}

// An fd at 3 or above, so that placing it on 0, 1 or 2 in the child always clears close-on-exec.
FileDescriptor open_high(const fs::path& path, int flags, mode_t mode = 0) {
  FileDescriptor fd(::open(path.c_str(), flags | O_CLOEXEC, mode));
  if (!fd.valid()) throw SystemError("opening " + path.string());
  if (fd.get() < 3) fd = FileDescriptor(check_syscall("fcntl", ::fcntl(fd.get(), F_DUPFD_CLOEXEC, 3)));
  return fd;
}

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

// Lines every start and stop writes, which say nothing about a problem.
bool chatter(const std::string& line) {
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

// "[Sun Nov 22 07:08:16.222877 2026] [core:emerg] [pid 9:tid 9] (98)Address..." -> "[core:emerg] (98)Address...".
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

// The last `count` meaningful lines of a daemon's log.
std::vector<std::string> log_lines(const fs::path& log, size_t count) {
  std::vector<std::string> lines;
  std::istringstream in(file_tail(log, 64 * 1024));
  std::string line;
  while (std::getline(in, line)) {
    if (!chatter(line)) lines.push_back(line);
  }
  if (lines.size() > count) lines.erase(lines.begin(), lines.end() - static_cast<std::ptrdiff_t>(count));
  return lines;
}

// Text for an error: a daemon's last words, indented.
std::string quoted_log(const fs::path& log) {
  std::string text;
  for (const std::string& line : log_lines(log, 8)) text += "\n  " + without_apache_prefix(line);
  return text.empty() ? "\n  (it wrote nothing to " + log.string() + ")" : text;
}

std::string current_user_name() {
  const struct passwd* entry = ::getpwuid(::geteuid());
  return entry && entry->pw_name ? entry->pw_name : std::string();
}

std::string current_group_name() {
  const struct group* entry = ::getgrgid(::getegid());
  return entry && entry->gr_name ? entry->gr_name : std::string();
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

}  // namespace

// ---- Guardian ----

// A forked process that SIGKILLs the daemons' process groups if this process dies without
// stopping them (a crash, SIGKILL): Apache's workers outlive their parent, so without it they
// would keep running in the namespace. It learns each group over a pipe and acts when the pipe
// reaches end-of-file, which only this process's death (or its disarming) causes.
class ReplayServers::Guardian {
 public:
  explicit Guardian(size_t capacity);
  ~Guardian();  // disarms it and reaps it
  Guardian(const Guardian&) = delete;
  Guardian& operator=(const Guardian&) = delete;

  void watch(pid_t group) { send(group); }
  void forget(pid_t group) { send(-group); }  // before reaping the leader: its id may be reused after

 private:
  void send(int32_t message);
  [[noreturn]] static void run(int fd, pid_t* groups, size_t capacity);

  std::mutex mutex_;
  FileDescriptor pipe_;
  pid_t pid_ = -1;
};

ReplayServers::Guardian::Guardian(size_t capacity) {
  int fds[2];
  check_syscall("pipe2", ::pipe2(fds, O_CLOEXEC));
  FileDescriptor read_end(fds[0]);
  pipe_ = FileDescriptor(fds[1]);
  std::vector<pid_t> groups(capacity);  // allocated before fork: the child must not allocate
  pid_ = ::fork();
  if (pid_ < 0) throw SystemError("fork");
  if (pid_ == 0) run(read_end.get(), groups.data(), groups.size());
}

void ReplayServers::Guardian::run(int fd, pid_t* groups, size_t capacity) {
  // A copy of a possibly multi-threaded process: system calls only.
  sigset_t all;
  ::sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);  // only SIGKILL ends it early
  ::setpgid(0, 0);                            // not in the caller's group (terminal signals, kill -PGID)
  // Hold nothing but the pipe's read end: no copy of its write end (which would prevent the
  // end-of-file), nor of anyone else's pipes or sockets.
  if (fd > 0) ::close_range(0, static_cast<unsigned>(fd) - 1, 0);
  ::close_range(static_cast<unsigned>(fd) + 1, ~0U, 0);
  size_t count = 0;
  for (;;) {
    int32_t message = 0;
    const ssize_t n = ::read(fd, &message, sizeof message);  // whole messages: writes of 4 bytes are atomic
    if (n < 0 && errno == EINTR) continue;
    if (n != sizeof message) break;  // end-of-file: the parent died
    if (message == 0) ::_exit(0);    // disarmed
    if (message > 0 && count < capacity) groups[count++] = message;
    for (size_t i = 0; message < 0 && i < count; i++) {
      if (groups[i] == -message) groups[i] = groups[--count];
    }
  }
  for (size_t i = 0; i < count; i++) ::kill(-groups[i], SIGKILL);
  ::_exit(0);
}

void ReplayServers::Guardian::send(int32_t message) {
  const std::lock_guard<std::mutex> guard(mutex_);  // spawning threads share it
  if (!pipe_.valid()) return;
  try {
    write_all(pipe_.get(), std::string_view(reinterpret_cast<const char*>(&message), sizeof message));
  } catch (const SystemError&) {
    pipe_.close();  // the guardian died (someone killed it): nothing more to tell it
  }
}

ReplayServers::Guardian::~Guardian() {
  send(0);
  pipe_.close();
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

// ---- Daemon ----

// A child process running a program, in its own process group so that its own children (Apache's
// workers) can be stopped with it, with the guardian told about the group.
class ReplayServers::Daemon {
 public:
  Daemon(std::string label, const fs::path& program, const std::vector<std::string>& args, const fs::path& log,
         Guardian& guardian);
  ~Daemon() { kill_and_reap(); }
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  const std::string& label() const { return label_; }
  const fs::path& log() const { return log_; }
  pid_t pid() const { return pid_; }

  // Has the process ended? Leaves it unreaped, so that its process group id stays ours.
  bool ended();
  // "exited with status 1", "was killed by SIGKILL", ...
  std::string how_it_ended() const;
  void terminate() const {
    if (!ended_) ::kill(pid_, SIGTERM);
  }
  // SIGKILL to the whole group (the leader may already be a zombie), then reaps the leader.
  void kill_and_reap();

 private:
  std::string label_;
  fs::path log_;
  Guardian& guardian_;
  pid_t pid_ = -1;
  bool ended_ = false;   // known to have ended (zombie or reaped)
  bool reaped_ = false;  // by us, or lost to another waiter: the pid may be reused now
  int status_ = -1;      // exit status, 128 + signal number, or -1 if unknown
};

ReplayServers::Daemon::Daemon(std::string label, const fs::path& program, const std::vector<std::string>& args,
                              const fs::path& log, Guardian& guardian)
    : label_(std::move(label)), log_(log), guardian_(guardian) {
  std::vector<std::string> argv_text{program.string()};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  // A fixed, minimal environment: nothing of the user's reaches the daemons (Apache passes PATH on
  // to the FastCGI application).
  std::string path_variable = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  char* envp[] = {path_variable.data(), nullptr};

  FileDescriptor null_fd = open_high("/dev/null", O_RDONLY);
  FileDescriptor log_fd = open_high(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawnattr_init(&attributes);
  ::posix_spawn_file_actions_adddup2(&actions, null_fd.get(), 0);
  ::posix_spawn_file_actions_adddup2(&actions, log_fd.get(), 1);
  ::posix_spawn_file_actions_adddup2(&actions, log_fd.get(), 2);
  ::posix_spawn_file_actions_addclosefrom_np(&actions, 3);  // whatever the caller left without close-on-exec
  sigset_t none, all;
  ::sigemptyset(&none);
  ::sigfillset(&all);
  ::posix_spawnattr_setsigmask(&attributes, &none);    // mm-replay blocks SIGTERM & co; the daemons need them
  ::posix_spawnattr_setsigdefault(&attributes, &all);  // and undo any SIG_IGN (execve keeps those)
  ::posix_spawnattr_setpgroup(&attributes, 0);
  ::posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const int error = ::posix_spawn(&pid, argv_text[0].c_str(), &actions, &attributes, argv.data(), envp);
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attributes);
  if (error != 0) throw UserError("cannot run " + program.string() + ": " + std::strerror(error));
  pid_ = pid;
  guardian_.watch(pid_);
}

bool ReplayServers::Daemon::ended() {
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

std::string ReplayServers::Daemon::how_it_ended() const {
  if (status_ < 0) return "ended";
  if (status_ > 128) {
    const char* name = ::sigabbrev_np(status_ - 128);
    return "was killed by " + (name ? "SIG" + std::string(name) : "signal " + std::to_string(status_ - 128));
  }
  return "exited with status " + std::to_string(status_);
}

void ReplayServers::Daemon::kill_and_reap() {
  if (pid_ < 0 || reaped_) return;
  ::kill(-pid_, SIGKILL);  // the group still exists: its leader is at worst an unreaped zombie
  guardian_.forget(pid_);
  int status = 0;
  pid_t reaped = -1;
  while ((reaped = ::waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
  }
  if (status_ < 0 && reaped == pid_) status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  ended_ = reaped_ = true;
}

// ---- Apache ----

// One Apache httpd serving one recorded IP:port, forwarding every request to the matcher.
class ReplayServers::Apache {
 public:
  Apache(const ReplayServerSpec& spec, const Programs& programs, CertificateAuthority& ca, const fs::path& socket,
         const fs::path& work, Guardian& guardian);
  Daemon& daemon() { return *daemon_; }
  const Daemon& daemon() const { return *daemon_; }
  const std::string& endpoint() const { return endpoint_; }
  // Has it bound its port (the pid file is written after that) and does the port accept a connection?
  bool ready();
  UserError failure(const std::string& what) const;

 private:
  std::string endpoint_;  // "ip:port"
  sockaddr_in address_{};
  fs::path pid_file_;
  std::unique_ptr<Daemon> daemon_;
};

namespace {

// The whole configuration of one instance. Nothing is read from /etc/apache2: every path is
// absolute (a relative one would resolve under Debian's compiled-in /etc/apache2).
std::string apache_configuration(const ReplayServerSpec& spec, const std::string& server_name, const fs::path& modules,
                                 const fs::path& work, const std::string& stem, const fs::path& socket) {
  auto module = [&](const char* name, const char* file) {
    return std::string("LoadModule ") + name + " " + config_quoted(modules / file) + "\n";
  };
  const std::string endpoint = spec.ip + ":" + std::to_string(spec.port);
  std::ostringstream c;
  c << "# Apache httpd for " << endpoint << (spec.https ? " (HTTPS" : " (HTTP") << (spec.h2 ? ", HTTP/2)" : ")")
    << ", written by mm-replay: every request goes to the\n"
       "# replay matcher over FastCGI.\n"
    << "ServerRoot " << config_quoted(work) << "\n"
    << "DefaultRuntimeDir " << config_quoted(work) << "\n"
    << "PidFile " << config_quoted(work / (stem + ".pid"))
    << "\n"
    // In shared memory: lock files would cost a file creation per mutex per instance.
    << "Mutex pthread default\n"
    << "ErrorLog " << config_quoted(work / (stem + ".log")) << "\n"
    << "LogLevel warn\n"
    // For HTTPS the certificate's first name, or mod_ssl warns (AH01909) that they differ. Apache
    // uses it only in answers it makes itself: the matcher sees the client's Host.
    << "ServerName " << server_name << "\n"
    << "Listen " << endpoint << "\n"
    << "DocumentRoot " << config_quoted(work) << "\n"
    << module("mpm_event_module", "mod_mpm_event.so")
    << module("authz_core_module", "mod_authz_core.so")  // without it every request fails: AH00025
    << module("proxy_module", "mod_proxy.so")
    << module("proxy_fcgi_module", "mod_proxy_fcgi.so")
    // Add as little as possible to what the matcher answers: "Server: Apache" only where the
    // recorded response has no Server header (and Date likewise), no error-page signature.
    << "ServerTokens Prod\n"
       "ServerSignature Off\n"
       "Timeout 60\n"
       "KeepAlive On\n"
       "MaxKeepAliveRequests 0\n"
       "KeepAliveTimeout 30\n"
       // Recorded URLs and cookies can be long; Apache's 8 KB limits would answer 414/400 instead.
       "LimitRequestLine 65536\n"
       "LimitRequestFieldSize 65536\n"
       // %2F in a path: forward it (the default answers 404 without asking the matcher).
       "AllowEncodedSlashes NoDecode\n"
       // One process of 32 threads at first: more than a browser's parallel connections to one
       // origin (the event MPM holds idle keep-alive connections without a thread, and HTTP/2
       // streams run on mod_http2's own workers). Under load (--single-server, or a slow link
       // keeping threads busy writing) Apache adds processes, up to 8. Each thread costs start-up
       // time: 64 instead of 32 makes 100 instances start 15% slower.
       "StartServers 1\n"
       "ServerLimit 8\n"
       "ThreadLimit 32\n"
       "ThreadsPerChild 32\n"
       "MaxRequestWorkers 256\n"
       "MinSpareThreads 8\n"
       "MaxSpareThreads 256\n"
    // No enablereuse: a fresh unix-socket connection per request costs microseconds, and the
    // matcher then never has a thread held by an idle kept-open connection.
    << "ProxyPass \"/\" " << config_quoted("unix:" + socket.string() + "|fcgi://localhost/")
    << "\n"
    // Keep the matcher's Content-Length instead of re-framing the body as chunked (and closing
    // HTTP/1.0 keep-alive connections), which Apache 2.4.59 and later do with CGI-like back ends
    // unless told to trust them.
    << module("env_module", "mod_env.so") << "SetEnv ap_trust_cgilike_cl 1\n";
  if (spec.https) {
    c << module("socache_shmcb_module", "mod_socache_shmcb.so")
      << module("ssl_module", "mod_ssl.so")
      // Session resumption, as the recorded servers most likely allowed.
      << "SSLSessionCache " << config_quoted("shmcb:" + (work / (stem + ".ssl-cache")).string() + "(512000)") << "\n"
      << "SSLEngine on\n"
         "SSLProtocol -all +TLSv1.2 +TLSv1.3\n"
      << "SSLCertificateFile " << config_quoted(work / (stem + ".pem")) << "\n"
      << "SSLCertificateKeyFile " << config_quoted(work / (stem + ".key")) << "\n";
    if (spec.h2) {
      c << module("http2_module", "mod_http2.so")
        << "Protocols h2 http/1.1\n"
           // No server push from recorded "Link: rel=preload" headers: the recorded server did not push.
           "H2Push off\n"
           // HTTP/2 workers are started when streams need them, not all at start-up (8% faster
           // start of 100 instances).
           "H2MinWorkers 1\n";
    }
  }
  return c.str();
}

void write_text_file(const fs::path& path, const std::string& text) {
  FileDescriptor fd = open_high(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  write_all(fd.get(), text);
}

}  // namespace

ReplayServers::Apache::Apache(const ReplayServerSpec& spec, const Programs& programs, CertificateAuthority& ca,
                              const fs::path& socket, const fs::path& work, Guardian& guardian)
    : endpoint_(spec.ip + ":" + std::to_string(spec.port)) {
  address_.sin_family = AF_INET;
  address_.sin_port = htons(spec.port);
  address_.sin_addr = *parse_ipv4(spec.ip);
  const std::string stem = "apache-" + spec.ip + "-" + std::to_string(spec.port);
  const fs::path config = work / (stem + ".conf");
  pid_file_ = work / (stem + ".pid");
  std::error_code ignored;
  fs::remove(pid_file_, ignored);  // readiness is judged by it: no stale one

  std::string server_name = spec.ip;
  if (spec.https) {
    // The certificate names every host recorded here, and the address (for clients that use it).
    std::vector<std::string> names;
    for (const std::string& name : spec.names) {
      const std::string n =
          ascii_lowercase(name.size() > 1 && name.back() == '.' ? name.substr(0, name.size() - 1) : name);
      if (is_host_name(n) && !parse_ipv4(n) && std::find(names.begin(), names.end(), n) == names.end()) {
        names.push_back(n);
      }
    }
    names.push_back(spec.ip);
    server_name = names.front();
    ca.write_leaf(names, work / (stem + ".pem"), work / (stem + ".key"));
  }
  write_text_file(config, apache_configuration(spec, server_name, programs.modules, work, stem, socket));
  daemon_ = std::make_unique<Daemon>("apache " + endpoint_, programs.apache,
                                     std::vector<std::string>{"-f", config.string(), "-DFOREGROUND"},
                                     work / (stem + ".log"), guardian);
}

bool ReplayServers::Apache::ready() {
  std::string pid_text;
  try {
    pid_text = read_small_file(pid_file_.string());
  } catch (const SystemError&) {
    return false;  // not yet written
  }
  if (std::atol(pid_text.c_str()) != daemon_->pid()) return false;
  FileDescriptor s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!s.valid()) throw SystemError("socket");
  if (::connect(s.get(), reinterpret_cast<const sockaddr*>(&address_), sizeof address_) == 0) return true;
  if (errno != EINPROGRESS) return false;
  pollfd p{s.get(), POLLOUT, 0};
  if (::poll(&p, 1, 100) != 1) return false;
  int error = 0;
  socklen_t length = sizeof error;
  return ::getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0;
}

UserError ReplayServers::Apache::failure(const std::string& what) const {
  const std::string words = quoted_log(daemon_->log());
  std::string fix;
  if (words.find("Address already in use") != std::string::npos) {
    fix = "something else in the replay namespace already listens on " + endpoint_ + "; stop it";
  } else if (words.find("Permission denied") != std::string::npos && words.find("make_sock") != std::string::npos) {
    fix = "unprivileged processes may not bind port " + std::to_string(ntohs(address_.sin_port)) +
          ": net.ipv4.ip_unprivileged_port_start must be 0 in the replay namespace (Linux 4.11 or later)";
  } else if (words.find("Cannot assign requested address") != std::string::npos) {
    fix = "the address " + endpoint_.substr(0, endpoint_.rfind(':')) + " is not configured in the replay namespace";
  } else if (words.find("Cannot load") != std::string::npos) {
    fix =
        "install Apache's modules (Debian/Ubuntu: apt-get install apache2-bin), or set MAHIMAHI_APACHE_MODULES to your "
        "httpd's module directory";
  } else if (words.find("Syntax error") != std::string::npos) {
    fix =
        "this Apache does not accept mm-replay's configuration: mm-replay needs a recent Apache httpd 2.4 with "
        "mod_proxy_fcgi, mod_ssl and mod_http2";
  } else if (words.find("Resource temporarily unavailable") != std::string::npos ||
             words.find("Cannot allocate memory") != std::string::npos) {
    fix =
        "the system ran out of processes, threads or memory: raise `ulimit -u` or replay a recording with fewer "
        "servers";
  } else {
    fix = "see Apache's words above";
  }
  return UserError("the replay server for " + endpoint_ + " " + what + ":" + words + "\n  fix: " + fix);
}

// ---- dnsmasq ----

// A DNS server that knows exactly the recorded names: each answers its recorded addresses, any
// other name NXDOMAIN at once (--local=/#/: without it, unknown names get REFUSED), no upstream.
class ReplayServers::Dnsmasq {
 public:
  Dnsmasq(const ReplayDns& dns, const Programs& programs, const fs::path& work, Guardian& guardian);
  Daemon& daemon() { return *daemon_; }
  const Daemon& daemon() const { return *daemon_; }
  // Does every listening address answer a query?
  bool ready();
  UserError failure(const std::string& what) const;

 private:
  struct Probe {
    sockaddr_in address;
    FileDescriptor socket;
    bool answered = false;
  };
  std::string probe_query_;
  uint16_t probe_id_ = 0;
  std::vector<Probe> probes_;
  std::string listen_text_;
  std::unique_ptr<Daemon> daemon_;
};

namespace {

// A DNS query (RFC 1035 §4.1) for the A record of `name`, with recursion desired.
std::string dns_query(uint16_t id, const std::string& name) {
  std::string q;
  q += static_cast<char>(id >> 8);
  q += static_cast<char>(id & 0xff);
  q += std::string("\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00", 10);
  std::istringstream labels(name);
  std::string label;
  while (std::getline(labels, label, '.')) {
    q += static_cast<char>(label.size());
    q += label;
  }
  q += std::string("\x00\x00\x01\x00\x01", 5);
  return q;
}

}  // namespace

ReplayServers::Dnsmasq::Dnsmasq(const ReplayDns& dns, const Programs& programs, const fs::path& work,
                                Guardian& guardian) {
  // The hosts file: one line per (address, name).
  std::string hosts, probe_name;
  for (const auto& [raw_name, ips] : dns.names) {
    const std::string name = ascii_lowercase(
        raw_name.size() > 1 && raw_name.back() == '.' ? raw_name.substr(0, raw_name.size() - 1) : raw_name);
    if (!is_host_name(name) || parse_ipv4(name)) continue;  // IP literals need no DNS
    for (const std::string& ip : ips) {
      if (!parse_ipv4(ip)) continue;
      hosts += ip + " " + name + "\n";
      if (probe_name.empty()) probe_name = name;
    }
  }
  const fs::path hosts_file = work / "dnsmasq.hosts";
  write_text_file(hosts_file, hosts);

  std::vector<std::string> args{"--keep-in-foreground",
                                "--conf-file=/dev/null",
                                "--no-resolv",
                                "--no-hosts",
                                "--addn-hosts=" + hosts_file.string(),
                                "--local=/#/",
                                "--bind-interfaces",
                                "--pid-file=" + (work / "dnsmasq.pid").string(),
                                "--log-facility=" + (work / "dnsmasq.log").string()};
  // As root, dnsmasq would switch to user "dnsmasq", who cannot read the work directory; as anyone
  // else it cannot switch. Either way: stay who we are.
  if (const std::string user = current_user_name(); !user.empty()) args.push_back("--user=" + user);
  if (const std::string group = current_group_name(); !group.empty()) args.push_back("--group=" + group);
  for (const std::string& address : dns.listen) {
    args.push_back("--listen-address=" + address);
    listen_text_ += (listen_text_.empty() ? "" : ", ") + address;
  }

  // Readiness: every address answers (anything) to a query for a recorded name.
  probe_id_ = static_cast<uint16_t>(::getpid() ^ 0x6d6d);
  probe_query_ = dns_query(probe_id_, probe_name.empty() ? "mahimahi.invalid" : probe_name);
  for (const std::string& address : dns.listen) {
    Probe probe{};
    probe.address.sin_family = AF_INET;
    probe.address.sin_port = htons(53);
    probe.address.sin_addr = *parse_ipv4(address);
    probe.socket = FileDescriptor(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!probe.socket.valid()) throw SystemError("socket");
    check_syscall("connect", ::connect(probe.socket.get(), reinterpret_cast<const sockaddr*>(&probe.address),
                                       sizeof probe.address));
    probes_.push_back(std::move(probe));
  }
  daemon_ = std::make_unique<Daemon>("dnsmasq", programs.dnsmasq, args, work / "dnsmasq.log", guardian);
}

bool ReplayServers::Dnsmasq::ready() {
  bool all = true;
  for (Probe& probe : probes_) {
    if (probe.answered) continue;
    char reply[512];
    for (;;) {  // earlier queries' answers, if any, are waiting
      const ssize_t n = ::recv(probe.socket.get(), reply, sizeof reply, 0);
      if (n < 0) break;  // EAGAIN, or ECONNREFUSED while nothing listens yet
      if (n >= 12 && static_cast<unsigned char>(reply[0]) == (probe_id_ >> 8) &&
          static_cast<unsigned char>(reply[1]) == (probe_id_ & 0xff) && (reply[2] & 0x80)) {
        probe.answered = true;
        break;
      }
    }
    if (!probe.answered) {
      (void)::send(probe.socket.get(), probe_query_.data(), probe_query_.size(), 0);
      all = false;
    }
  }
  return all;
}

UserError ReplayServers::Dnsmasq::failure(const std::string& what) const {
  const std::string words = quoted_log(daemon_->log());
  std::string fix;
  if (words.find("Address already in use") != std::string::npos) {
    fix = "something else in the replay namespace already answers DNS on " + listen_text_ + " port 53; stop it";
  } else if (words.find("Permission denied") != std::string::npos) {
    fix =
        "unprivileged processes may not bind port 53: net.ipv4.ip_unprivileged_port_start must be 0 in the replay "
        "namespace";
  } else if (words.find("Cannot assign requested address") != std::string::npos) {
    fix = "an address dnsmasq should answer on (" + listen_text_ + ") is not configured in the replay namespace";
  } else {
    fix = "see dnsmasq's words above";
  }
  return UserError("the replay DNS server (dnsmasq, on " + listen_text_ + ") " + what + ":" + words +
                   "\n  fix: " + fix);
}

// ---- ReplayServers ----

ReplayServers::ReplayServers(const std::vector<ReplayServerSpec>& servers, const ReplayDns& dns,
                             CertificateAuthority& ca, const fs::path& fastcgi_socket, const fs::path& work_dir) {
  const auto start = Clock::now();
  const fs::path work = fs::absolute(work_dir);
  const fs::path socket = fs::absolute(fastcgi_socket);
  if (socket.string().size() >= sizeof(sockaddr_un{}.sun_path)) {
    throw UserError("the matcher's socket path " + socket.string() +
                    " is too long for a unix socket; set TMPDIR to a shorter directory such as /tmp");
  }
  require_plain_path(work);
  require_plain_path(socket);
  std::set<std::pair<std::string, uint16_t>> endpoints;
  for (const ReplayServerSpec& spec : servers) {
    if (!parse_ipv4(spec.ip)) throw UserError("replay server address " + spec.ip + " is not an IPv4 address");
    if (spec.port == 0) throw UserError("replay server " + spec.ip + " has port 0");
    if (!endpoints.insert({spec.ip, spec.port}).second) {
      throw UserError("replay server " + spec.ip + ":" + std::to_string(spec.port) + " is listed twice");
    }
  }
  for (const std::string& address : dns.listen) {
    if (!parse_ipv4(address)) throw UserError("DNS listening address " + address + " is not an IPv4 address");
  }

  const Programs programs = find_programs();
  if (!servers.empty()) {
    require_executable(
        programs.apache, "Apache httpd",
        "install it (Debian/Ubuntu: apt-get install apache2-bin), or set MAHIMAHI_APACHE2 to your httpd");
    std::vector<const char*> modules{"mod_mpm_event.so", "mod_authz_core.so", "mod_proxy.so", "mod_proxy_fcgi.so",
                                     "mod_env.so"};
    if (std::any_of(servers.begin(), servers.end(), [](const ReplayServerSpec& s) { return s.https; })) {
      modules.insert(modules.end(), {"mod_ssl.so", "mod_socache_shmcb.so"});
    }
    if (std::any_of(servers.begin(), servers.end(), [](const ReplayServerSpec& s) { return s.https && s.h2; })) {
      modules.push_back("mod_http2.so");
    }
    for (const char* module : modules) {
      if (::access((programs.modules / module).c_str(), R_OK) != 0) {
        throw UserError(
            "replay needs Apache's " + std::string(module) + ", but " + (programs.modules / module).string() +
            " cannot be read (" + std::strerror(errno) +
            "); install Apache (Debian/Ubuntu: apt-get install apache2-bin), or set MAHIMAHI_APACHE_MODULES");
      }
    }
  }
  if (!dns.listen.empty()) {
    require_executable(programs.dnsmasq, "dnsmasq",
                       "install it (Debian/Ubuntu: apt-get install dnsmasq-base), or set MAHIMAHI_DNSMASQ");
  }

  guardian_ = std::make_unique<Guardian>(servers.size() + 1);
  try {
    if (!dns.listen.empty()) dnsmasq_ = std::make_unique<Dnsmasq>(dns, programs, work, *guardian_);
    start_apaches(servers, programs, ca, socket, work);
    wait_until_ready();
  } catch (...) {
    apaches_.clear();  // SIGKILL: nothing they hold is worth a graceful stop
    dnsmasq_.reset();
    guardian_.reset();
    throw;
  }
  startup_seconds_ = seconds_since(start);
}

// All at once: an Apache's start-up is mostly CPU (loading modules, reading its configuration
// twice), so the instances overlap on every core. Several threads prepare and spawn them, because
// writing a certificate waits for the disk (CertificateAuthority::write_leaf syncs each file):
// about 1.3 ms per server, which one thread would add up before the last server even starts.
void ReplayServers::start_apaches(const std::vector<ReplayServerSpec>& servers, const Programs& programs,
                                  CertificateAuthority& ca, const fs::path& socket, const fs::path& work) {
  apaches_.resize(servers.size());
  std::atomic<size_t> next{0};
  std::mutex failure_mutex;
  std::exception_ptr failure;
  auto work_through = [&] {
    for (size_t i = next++; i < servers.size(); i = next++) {
      try {
        apaches_[i] = std::make_unique<Apache>(servers[i], programs, ca, socket, work, *guardian_);
      } catch (...) {
        const std::lock_guard<std::mutex> guard(failure_mutex);
        if (!failure) failure = std::current_exception();
        next = servers.size();  // the others stop too
      }
    }
  };
  std::vector<std::thread> helpers;
  for (size_t k = 1; k < std::min<size_t>(servers.size(), 8); k++) {
    try {
      helpers.emplace_back(work_through);
    } catch (const std::system_error&) {
      break;  // fewer helpers, then
    }
  }
  work_through();
  for (std::thread& t : helpers) t.join();
  if (failure) std::rethrow_exception(failure);
}

void ReplayServers::wait_until_ready() {
  const auto deadline = Clock::now() + kStartTimeout;
  std::deque<Apache*> pending;
  for (auto& a : apaches_) pending.push_back(a.get());
  bool dns_pending = dnsmasq_ != nullptr;
  for (;;) {
    for (auto it = pending.begin(); it != pending.end();) {
      if ((*it)->daemon().ended())
        throw(*it)->failure("stopped while starting (" + (*it)->daemon().how_it_ended() + ")");
      it = (*it)->ready() ? pending.erase(it) : it + 1;
    }
    if (dns_pending) {
      if (dnsmasq_->daemon().ended())
        throw dnsmasq_->failure("stopped while starting (" + dnsmasq_->daemon().how_it_ended() + ")");
      dns_pending = !dnsmasq_->ready();
    }
    if (pending.empty() && !dns_pending) return;
    if (Clock::now() > deadline) {
      const std::string seconds =
          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(kStartTimeout).count());
      if (!pending.empty()) {
        throw pending.front()->failure("was not accepting connections after " + seconds + " s (" +
                                       std::to_string(pending.size()) + " of " + std::to_string(apaches_.size()) +
                                       " servers were not); is the machine overloaded?");
      }
      throw dnsmasq_->failure("was not answering after " + seconds + " s");
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

ReplayServers::~ReplayServers() { stop(); }

void ReplayServers::stop() {
  std::vector<Daemon*> running;
  for (auto& a : apaches_) {
    if (a) running.push_back(&a->daemon());
  }
  if (dnsmasq_) running.push_back(&dnsmasq_->daemon());
  // Apache stops its workers itself on SIGTERM; whatever is left after the grace period, or
  // lingers once the leader has exited, goes with its process group.
  for (Daemon* d : running) d->terminate();
  const auto deadline = Clock::now() + kStopGrace;
  while (!running.empty()) {
    for (auto it = running.begin(); it != running.end();) {
      if ((*it)->ended()) {
        (*it)->kill_and_reap();
        it = running.erase(it);
      } else {
        ++it;
      }
    }
    if (running.empty() || Clock::now() > deadline) break;
    std::this_thread::sleep_for(kPollInterval);
  }
  for (Daemon* d : running) d->kill_and_reap();
}

std::string ReplayServers::log_tail(size_t lines) const {
  std::vector<std::string> all;
  auto add = [&](const Daemon& d) {
    for (const std::string& line : log_lines(d.log(), lines)) all.push_back("[" + d.label() + "] " + line);
  };
  for (const auto& a : apaches_) {
    if (a) add(a->daemon());
  }
  if (dnsmasq_) add(dnsmasq_->daemon());
  if (all.size() > lines) all.erase(all.begin(), all.end() - static_cast<std::ptrdiff_t>(lines));
  std::string text;
  for (const std::string& line : all) text += line + "\n";
  return text;
}

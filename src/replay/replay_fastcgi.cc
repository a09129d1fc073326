// SPDX-License-Identifier: GPL-3.0-or-later
// The FastCGI responder of the replay (libfcgi, one listening unix socket, a pool of threads).
//
// Threads block in FCGX_Accept_r on the shared listening socket (accept() is thread-safe on
// Linux). stop() wakes them without touching descriptors libfcgi may close concurrently: it
// shuts the listening socket down (accept() then fails), signals an eventfd that threads poll
// while a connection the web server asked to keep (FCGI_KEEP_CONN) is idle, and shuts down
// the connections threads are answering on, which a thread only closes after taking them out
// of the shared set under its mutex.
#include "replay/replay_fastcgi.hh"

#include <fcgiapp.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstring>

#include "replay/replay_close.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/text.hh"

namespace fs = std::filesystem;

namespace {
std::once_flag fcgx_initialized;

// A unix stream socket at `path`, mode 0600 before anyone can connect (chmod between bind and
// listen: until listen(), connecting is refused).
FileDescriptor listen_unix(const fs::path& path, dev_t* dev, ino_t* ino) {
  const std::string name = path.string();
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (name.empty() || name.size() >= sizeof address.sun_path) {
    throw UserError("the FastCGI socket path " + name + " is too long for a unix socket (at most " +
                    std::to_string(sizeof address.sun_path - 1) + " bytes)");
  }
  std::memcpy(address.sun_path, name.data(), name.size());

  struct stat st;
  if (::lstat(name.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) throw UserError(name + " exists and is not a socket; not replacing it");
    if (::unlink(name.c_str()) != 0 && errno != ENOENT)
      throw UserError("cannot remove the old socket " + name + ": " + std::strerror(errno));
  }
  FileDescriptor fd(check_syscall("socket(AF_UNIX)", ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)));
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
    throw UserError("cannot create the FastCGI socket " + name + ": " + std::strerror(errno));
  if (::chmod(name.c_str(), 0600) != 0 || ::lstat(name.c_str(), &st) != 0) {
    const int err = errno;
    ::unlink(name.c_str());
    throw UserError("cannot set the mode of the FastCGI socket " + name + ": " + std::strerror(err));
  }
  *dev = st.st_dev;
  *ino = st.st_ino;
  if (::listen(fd.get(), SOMAXCONN) != 0) {
    const int err = errno;
    ::unlink(name.c_str());
    throw SystemError("listen on " + name, err);
  }
  return fd;
}

// Writes all of data to a FastCGI stream; false once the web server has gone.
bool put(FCGX_Stream* stream, std::string_view data) {
  while (!data.empty()) {
    const int n = static_cast<int>(std::min<size_t>(data.size(), 1 << 20));
    if (FCGX_PutStr(data.data(), n, stream) != n) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}
}  // namespace

ReplayFastCgi::ReplayFastCgi(Matcher match, const fs::path& socket_path, int threads,
                             std::function<void(const std::string&)> log)
    : match_(std::move(match)), socket_path_(socket_path), threads_wanted_(threads), log_(std::move(log)) {
  if (threads < 1) throw std::invalid_argument("ReplayFastCgi needs at least one thread");
  int init_error = 0;
  std::call_once(fcgx_initialized, [&] { init_error = FCGX_Init(); });
  if (init_error != 0) throw std::runtime_error("libfcgi failed to initialise (" + std::to_string(init_error) + ")");
  FileDescriptor stop(check_syscall("eventfd", ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)));
  FileDescriptor listener = listen_unix(socket_path_, &socket_dev_, &socket_ino_);
  stop_fd_ = stop.release();
  listen_fd_ = listener.release();
}

ReplayFastCgi::~ReplayFastCgi() {
  stop();
  ::close(listen_fd_);
  ::close(stop_fd_);
  struct stat st;
  if (::lstat(socket_path_.c_str(), &st) == 0 && st.st_dev == socket_dev_ && st.st_ino == socket_ino_)
    ::unlink(socket_path_.c_str());
}

void ReplayFastCgi::start() {
  std::lock_guard lock(lifecycle_mutex_);
  if (started_ || stopped_) return;
  started_ = true;
  // Asynchronous signals (SIGINT, SIGCHLD, SIGPIPE...) stay with the caller's threads: a
  // worker writing to a web server that has gone gets EPIPE, never a process-killing SIGPIPE.
  sigset_t blocked, previous;
  sigfillset(&blocked);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS}) sigdelset(&blocked, sig);
  pthread_sigmask(SIG_BLOCK, &blocked, &previous);
  try {
    for (int i = 0; i < threads_wanted_; i++) threads_.emplace_back([this] { run(); });
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    stopping_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    for (std::thread& t : threads_) t.join();
    threads_.clear();
    throw;
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

void ReplayFastCgi::stop() {
  std::lock_guard lock(lifecycle_mutex_);
  if (stopped_) return;
  stopped_ = true;
  stopping_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);  // blocked accept() calls fail with EINVAL
  const uint64_t one = 1;
  if (::write(stop_fd_, &one, sizeof one) < 0) {
    // Only EAGAIN is possible (counter full), and then it is readable already.
  }
  {
    std::lock_guard active(active_mutex_);
    for (int fd : active_fds_) ::shutdown(fd, SHUT_RDWR);
  }
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

uint64_t ReplayFastCgi::served() const { return served_.load(); }
uint64_t ReplayFastCgi::missed() const { return missed_.load(); }

std::string replay_summary(uint64_t served, uint64_t missed) {
  return count_of(served, "request") + " answered from the recording, " + std::to_string(missed) + " not found";
}

void ReplayFastCgi::report(const std::string& line) {
  std::lock_guard lock(log_mutex_);
  if (!log_) return;
  try {
    log_(line);
  } catch (...) {
    // A failing logger must not take a worker down.
  }
}

void ReplayFastCgi::run() {
  FCGX_Request request;
  FCGX_InitRequest(&request, listen_fd_, 0);
  while (!stopping_) {
    // A connection kept open at the web server's request (FCGI_KEEP_CONN; ipcFd is libfcgi's
    // field for it, valid on this thread between calls): wait for its next request, or stop.
    if (request.ipcFd >= 0) {
      pollfd fds[2] = {{request.ipcFd, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if (fds[1].revents) break;
    }
    const int rc = FCGX_Accept_r(&request);
    if (rc < 0) {
      if (stopping_) break;
      // accept() failed: out of descriptors or memory, usually; wait a little and go on.
      bool first;
      {
        std::lock_guard lock(log_mutex_);
        first = reported_accept_errors_.insert(rc).second;
      }
      if (first) {
        report("FastCGI: cannot accept a connection on " + socket_path_.string() + ": " +
               (rc > -10000 && rc < 0 && -rc < 4096 ? std::string(std::strerror(-rc))
                                                    : "libfcgi error " + std::to_string(rc)) +
               " (retrying; later failures of the same kind are not reported)");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    const int connection = request.ipcFd;
    {
      std::lock_guard lock(active_mutex_);
      active_fds_.insert(connection);
    }
    try {
      handle(request);
    } catch (const std::exception& e) {
      report(std::string("FastCGI: a request failed: ") + e.what());
    } catch (...) {
      report("FastCGI: a request failed");
    }
    {
      std::lock_guard lock(active_mutex_);
      active_fds_.erase(connection);
    }
    FCGX_Finish_r(&request);  // may close the connection: only now that stop() cannot see it
  }
  // A kept connection, if any: closed at once (detached: no lingering until the web server closes).
  if (request.ipcFd >= 0) FCGX_Detach(&request);
  FCGX_Free(&request, 1);
}

void ReplayFastCgi::handle(FCGX_Request& request) {
  auto param = [&](const char* name) -> const char* { return FCGX_GetParam(name, request.envp); };
  ReplayRequest r;
  if (const char* v = param("REQUEST_METHOD")) r.method = v;
  if (const char* v = param("REQUEST_URI")) {
    r.target = v;
  } else {  // not from mod_proxy_fcgi: rebuild it from the CGI variables
    if (const char* s = param("SCRIPT_NAME")) r.target += s;
    if (const char* s = param("PATH_INFO")) r.target += s;
    if (const char* q = param("QUERY_STRING"); q && *q) r.target += std::string("?") + q;
  }
  if (const char* v = param("HTTP_HOST")) {
    r.host = v;
    r.has_host = true;
  }
  if (const char* v = param("HTTP_USER_AGENT")) {
    r.user_agent = v;
    r.has_user_agent = true;
  }
  if (const char* v = param("HTTP_RANGE")) r.range = v;
  if (const char* v = param("HTTP_IF_RANGE")) r.if_range = v;
  if (const char* v = param("HTTPS")) r.https = equals_ignoring_case(v, "on") || equals_ignoring_case(v, "1");

  // The request body (for matching by body), read whole; beyond kMaxMatchedBody it is read
  // and dropped, and plays no part.
  char buffer[16384];
  std::string body;
  bool too_large = false;
  for (int n; (n = FCGX_GetStr(buffer, sizeof buffer, request.in)) > 0;) {
    if (!too_large && body.size() + static_cast<size_t>(n) <= kMaxMatchedBody) {
      body.append(buffer, static_cast<size_t>(n));
    } else {
      too_large = true;
      std::string().swap(body);
    }
  }
  if (!too_large && !body.empty()) r.body = std::move(body);
  const auto request_end = std::chrono::steady_clock::now();

  ReplayMatch match;
  try {
    match = match_(r);
  } catch (const std::exception& e) {
    const std::string why = std::string("mm-replay: cannot answer ") + r.method + " " + r.target + ": " + e.what();
    report(why);
    put(request.out,
        "Status: 500 Internal Server Error\r\nContent-Type: text/plain; charset=utf-8\r\n"
        "Content-Length: " +
            std::to_string(why.size() + 1) + "\r\n\r\n" + (r.method == "HEAD" ? "" : why + "\n"));
    return;
  }

  const ReplayResponse& response = match.response;
  std::string head = "Status: " + std::to_string(response.status);
  if (!response.reason.empty()) head += " " + response.reason;
  head += "\r\n";
  for (const HttpHeader& h : response.headers) {
    // A recorded "Status" field would be taken for the CGI status.
    if (equals_ignoring_case(h.key, "Status")) continue;
    head += h.key;
    head += ": ";
    head += h.value;
    head += "\r\n";
  }
  head += "\r\n";
  if (match.found) {
    served_++;
  } else {
    missed_++;
    report(match.log_line);
  }
  // The recorded server's think time (mm-replay --timing=recorded), from the request's end;
  // stop() cuts it short (its eventfd stays readable once written).
  if (response.think_us > 0) {
    const auto due = request_end + std::chrono::microseconds(response.think_us);
    for (;;) {
      const int64_t left =
          std::chrono::duration_cast<std::chrono::nanoseconds>(due - std::chrono::steady_clock::now()).count();
      if (left <= 0) break;
      const timespec wait{static_cast<time_t>(left / 1'000'000'000), static_cast<long>(left % 1'000'000'000)};
      pollfd stop{stop_fd_, POLLIN, 0};
      const int n = ::ppoll(&stop, 1, &wait, nullptr);
      if (n > 0) return;  // stopping
      if (n < 0 && errno != EINTR) break;
    }
  }
  if (match.close) close_connection(request);
  if (!put(request.out, head)) return;  // the web server has gone: nothing more to do
  if (r.method != "HEAD") put(request.out, response.body);
}

// mm-replay --unmatched=close: the client's connection to Apache is shut down (see
// replay_close.hh) and Apache's write of the 404 that follows fails unseen. Over HTTP/2 that
// ends the connection's other streams too: Apache resets no stream on a backend's word (one
// that breaks off a response leaves the stream hanging), so the connection is what can be
// closed. If it cannot be, the 404 reaches the client and the log says why.
void ReplayFastCgi::close_connection(FCGX_Request& request) {
  auto param = [&](const char* name) -> const char* { return FCGX_GetParam(name, request.envp); };
  const auto connection = client_connection_of(param("REMOTE_ADDR"), param("REMOTE_PORT"), param("SERVER_ADDR"));
  const pid_t worker = unix_peer_pid(request.ipcFd);
  std::string why = !connection ? "the web server named no client address" : worker < 0 ? "no web server worker" : "";
  if (why.empty()) why = shut_down_client_connection(worker, *connection);
  if (!why.empty()) report("cannot close the connection of the request above (" + why + "): answered with the 404");
}

// SPDX-License-Identifier: GPL-3.0-or-later
#include "cumulus/remote_proxy.hh"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <set>

#include "cumulus/bulk.hh"
#include "pageload/load_report.hh"
#include "util/child_process.hh"
#include "util/exception.hh"
#include "util/text.hh"

namespace fs = std::filesystem;

namespace {
constexpr uint64_t kListenerKey = 0, kStopKey = 1, kInotifyKey = 2, kCurrentExitKey = 3, kCurrentErrorsKey = 4,
                   kSpareExitKey = 5, kSpareErrorsKey = 6, kClientBase = 1000;
constexpr size_t kHighWater = 256 * 1024;
constexpr size_t kMaxTail = 16 * 1024;
constexpr size_t kMaxRequestHead = kMaxBulkRequest;
// mm-pageload's --json of one load: a few hundred bytes, with its origins' protocols a few KiB.
constexpr size_t kMaxResultBytes = 1 << 20;

// A header value on the loader's input line: no tabs or line ends.
std::string field(std::string_view text) {
  std::string out;
  for (const char c : text) out += (c == '\t' || c == '\r' || c == '\n') ? ' ' : c;
  return out;
}
}  // namespace

struct RemoteProxy::Loader {
  uint64_t number = 0;
  pid_t pid = -1;
  FileDescriptor pidfd, input, errors;
  fs::path dir;
  fs::path result;   // where mm-pageload writes the load's --json ("{json}")
  std::string tail;  // the end of what it wrote on standard error
  bool exited = false;
  int status = 0;
  rusage usage{};
  Nanos load_started = 0;
  bool watched = false;         // its directory is watched (it exists)
  std::set<std::string> seen;   // files of its directory already queued
  std::deque<fs::path> queued;  // to send, in the order they appeared
  uint64_t pairs = 0, bytes = 0;
  uint64_t written = 0;   // the bytes of every pair file seen (what the load put in the work directory)
  bool over_cap = false;  // stopped: its pairs passed max_load_bytes
  uint64_t left_out = 0;  // pairs beyond max_pair_bytes
};

struct RemoteProxy::Client {
  uint64_t id = 0;
  FileDescriptor fd;
  in_addr peer{};
  Nanos accepted = 0;  // its request must come within head_timeout of it
  Nanos progress = 0;  // when it last took bytes, or was given some to take
  std::string head;    // the request as it arrives
  bool requested = false;
  bool authorised = false;  // its request carried the token
  BulkRequest request;
  bool started = false;  // its load began
  std::string out;
  size_t out_offset = 0;
  FileDescriptor file;     // the pair being sent: read into out as the connection takes it
  uint64_t file_left = 0;  // its bytes still to read
  bool ending = false;     // close once out is sent
  bool gone = false;
  size_t pending() const { return out.size() - out_offset; }
};

namespace {
std::string peer_text(in_addr a) {
  char text[INET_ADDRSTRLEN] = "?";
  ::inet_ntop(AF_INET, &a, text, sizeof text);
  return text;
}
}  // namespace

RemoteProxy::RemoteProxy(RemoteProxyOptions options)
    : options_(std::move(options)),
      inotify_(check_syscall("inotify_init1", ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC))) {
  buffer_.resize(64 * 1024);
  epoll_.add(options_.listener.get(), EPOLLIN, kListenerKey);
  epoll_.add(inotify_.get(), EPOLLIN, kInotifyKey);
  // A load may begin before its loader's mm-record has made its directory (a request right
  // after the previous load): the directory's creation is seen here, and then watched.
  check_syscall("inotify_add_watch",
                ::inotify_add_watch(inotify_.get(), options_.work_directory.c_str(), IN_CREATE | IN_ONLYDIR));
}

RemoteProxy::~RemoteProxy() {
  // Every loader is asked to end (its shells clean up behind them), then made to.
  for (Loader* l : {spare_.get(), current_.get()}) {
    if (l && !l->exited && l->pid > 0) ::kill(l->pid, SIGTERM);
  }
  for (Loader* l : {spare_.get(), current_.get()}) {
    if (!l || l->exited || l->pid <= 0) continue;
    const Nanos deadline = monotonic_now() + 10 * kNanosPerSec;
    for (;;) {
      const pid_t done = ::waitpid(l->pid, nullptr, WNOHANG);
      if (done == l->pid || (done < 0 && errno != EINTR)) break;
      if (monotonic_now() >= deadline) {
        ::kill(l->pid, SIGKILL);
        (void)::waitpid(l->pid, nullptr, 0);
        break;
      }
      pollfd p{l->pidfd.get(), POLLIN, 0};
      (void)::poll(&p, 1, 50);
    }
    std::error_code ignored;
    fs::remove_all(l->dir, ignored);
    fs::remove(l->result, ignored);
  }
}

void RemoteProxy::start_spare() {
  auto l = std::make_unique<Loader>();
  l->number = next_load_++;
  l->dir = options_.work_directory / ("load-" + std::to_string(l->number));
  l->result = options_.work_directory / ("load-" + std::to_string(l->number) + ".json");
  int input[2], errors[2];
  check_syscall("pipe2", ::pipe2(input, O_CLOEXEC));
  FileDescriptor input_read(input[0]);
  l->input = FileDescriptor(input[1]);
  check_syscall("pipe2", ::pipe2(errors, O_CLOEXEC));
  l->errors = FileDescriptor(errors[0]);
  FileDescriptor errors_write(errors[1]);
  (void)::fcntl(l->errors.get(), F_SETFL, O_NONBLOCK);
  std::vector<std::string> words;
  for (std::string word : options_.loader) {
    for (size_t at = word.find("{dir}"); at != std::string::npos; at = word.find("{dir}"))
      word.replace(at, 5, l->dir.string());
    for (size_t at = word.find("{json}"); at != std::string::npos; at = word.find("{json}"))
      word.replace(at, 6, l->result.string());
    words.push_back(word);
  }
  SpawnOptions spawn;
  spawn.stdin_fd = input_read.get();
  spawn.stdout_fd = errors_write.get();
  spawn.stderr_fd = errors_write.get();
  spawn.new_process_group = true;
  spawn.default_signals = true;
  const std::vector<std::string> arguments(words.begin() + 1, words.end());
  l->pid = spawn_program(words.front(), arguments, spawn);
  l->pidfd = FileDescriptor(open_pidfd(l->pid));
  if (!l->pidfd.valid()) throw SystemError("pidfd_open");
  epoll_.add(l->pidfd.get(), EPOLLIN, kSpareExitKey);
  epoll_.add(l->errors.get(), EPOLLIN, kSpareErrorsKey);
  if (options_.verbose)
    options_.say("loader " + std::to_string(l->number) + " starting (pid " + std::to_string(l->pid) + ")");
  spare_ = std::move(l);
}

void RemoteProxy::drain_stderr(Loader& l) {
  if (!l.errors.valid()) return;
  for (;;) {
    const ssize_t n = ::read(l.errors.get(), buffer_.data(), buffer_.size());
    if (n <= 0) {
      if (n == 0 || errno != EAGAIN) {
        epoll_.remove(l.errors.get());
        l.errors = FileDescriptor();
      }
      return;
    }
    l.tail.append(buffer_.data(), static_cast<size_t>(n));
    if (l.tail.size() > kMaxTail) l.tail.erase(0, l.tail.size() - kMaxTail);
  }
}

// The loader has ended (its pidfd said so): its last words, its status and its tree's usage.
bool RemoteProxy::reap(Loader& l) {
  drain_stderr(l);
  int status = 0;
  if (::wait4(l.pid, &status, 0, &l.usage) != l.pid) return false;
  l.exited = true;
  l.status = shell_exit_code(status);
  epoll_.remove(l.pidfd.get());
  return true;
}

void RemoteProxy::run(const std::vector<int>& stop_fds) {
  for (const int fd : stop_fds) epoll_.add(fd, EPOLLIN, kStopKey);
  start_spare();
  epoll_event events[64];
  Nanos deadline = kNever;
  for (;;) {
    const Nanos now = monotonic_now();
    const int n = epoll_.wait(events, 64, deadline == kNever ? kNever : std::max<Nanos>(deadline - now, 0));
    for (int i = 0; i < n; i++) {
      const uint64_t key = events[i].data.u64;
      if (key == kStopKey) return;
      if (key == kListenerKey) {
        accept_all();
      } else if (key == kInotifyKey) {
        while (::read(inotify_.get(), buffer_.data(), buffer_.size()) > 0) {
        }
        if (current_ && !current_->watched) watch_directory();
        send_new_pairs();
      } else if (key == kCurrentErrorsKey && current_) {
        drain_stderr(*current_);
      } else if (key == kSpareErrorsKey && spare_) {
        drain_stderr(*spare_);
      } else if (key == kCurrentExitKey && current_ && !current_->exited) {
        if (reap(*current_)) send_new_pairs();  // the last pairs, then the end (finish_load) once all are sent
      } else if (key == kSpareExitKey && spare_ && !spare_->exited) {
        // The ready loader ended before it was used: its next user is told why.
        if (reap(*spare_) && options_.verbose) options_.say("the ready loader " + how_it_ended(spare_->status));
      } else if (key >= kClientBase) {
        for (auto& c : clients_) {
          if (c->id == key - kClientBase) {
            handle_client(*c);
            break;
          }
        }
      }
    }
    // Clients that are gone and whose load (if any) is over.
    for (auto it = clients_.begin(); it != clients_.end();) {
      Client& c = **it;
      if (c.gone && !(c.started && current_)) {
        if (c.fd.valid()) epoll_.remove(c.fd.get());
        it = clients_.erase(it);
      } else {
        ++it;
      }
    }
    deadline = expire_clients(monotonic_now());
    if (!current_) start_next_load();
  }
}

// Connections past their deadlines: a request that did not come, a client that takes nothing.
Nanos RemoteProxy::expire_clients(Nanos now) {
  Nanos next = kNever;
  for (auto& c : clients_) {
    if (c->gone) continue;
    if (!c->requested) {
      if (now - c->accepted >= options_.head_timeout) {
        c->requested = true;
        c->ending = true;
        c->out = bulk_error_response(
            408, "Request Timeout",
            "mm-cumulus-remote: no request within " + std::to_string(options_.head_timeout / kNanosPerSec) + " s");
        c->progress = now;
        flush_client(*c);
        if (c->gone) continue;
      } else {
        next = std::min(next, c->accepted + options_.head_timeout);
        continue;
      }
    }
    if (c->pending() > 0 || c->file.valid()) {
      if (now - c->progress >= options_.send_timeout) {
        options_.say("the client at " + peer_text(c->peer) + " took nothing for " +
                     std::to_string(options_.send_timeout / kNanosPerSec) + " s: dropped" +
                     (c->started && current_ ? " (its load is stopped)" : ""));
        end_client(*c);
      } else {
        next = std::min(next, c->progress + options_.send_timeout);
      }
    }
  }
  return next;
}

void RemoteProxy::accept_all() {
  for (;;) {
    sockaddr_in peer{};
    socklen_t length = sizeof peer;
    FileDescriptor fd(
        ::accept4(options_.listener.get(), reinterpret_cast<sockaddr*>(&peer), &length, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;
    }
    size_t live = 0, from_peer = 0;
    for (const auto& c : clients_) {
      if (c->gone) continue;
      live++;
      if (c->peer.s_addr == peer.sin_addr.s_addr) from_peer++;
    }
    std::string busy;
    if (from_peer >= kMaxConnectionsPerPeer) {
      busy = std::to_string(kMaxConnectionsPerPeer) + " connections from " + peer_text(peer.sin_addr) +
             " are open already";
    } else if (live >= kMaxConnections && !evict_unauthorised()) {
      busy = std::to_string(kMaxConnections) + " connections are open already";
    }
    if (!busy.empty()) {
      const std::string answer = bulk_error_response(503, "Service Unavailable", "mm-cumulus-remote: " + busy);
      (void)!::send(fd.get(), answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      continue;
    }
    auto c = std::make_unique<Client>();
    c->id = next_client_++;
    c->fd = std::move(fd);
    c->peer = peer.sin_addr;
    c->accepted = c->progress = monotonic_now();
    epoll_.add(c->fd.get(), EPOLLIN | EPOLLRDHUP, kClientBase + c->id);
    clients_.push_back(std::move(c));
  }
}

// Room for a new connection: the oldest that has not made an authorised request is closed (so
// that connections that say nothing, or the wrong thing, cannot keep the token's holders out).
bool RemoteProxy::evict_unauthorised() {
  for (auto& c : clients_) {
    if (!c->gone && !c->authorised) {
      end_client(*c);
      return true;
    }
  }
  return false;
}

void RemoteProxy::handle_client(Client& c) {
  if (c.gone) return;
  // Bytes from the client: its request, then nothing but its close.
  for (;;) {
    const ssize_t n = ::recv(c.fd.get(), buffer_.data(), buffer_.size(), MSG_DONTWAIT);
    if (n < 0 && errno == EAGAIN) break;
    if (n <= 0) {
      end_client(c);
      return;
    }
    if (c.requested) continue;  // nothing is expected after the request: ignored
    c.head.append(buffer_.data(), static_cast<size_t>(n));
    if (c.head.find("\r\n\r\n") == std::string::npos) {
      if (c.head.size() > kMaxRequestHead) {
        c.out =
            bulk_error_response(431, "Request Header Fields Too Large", "mm-cumulus-remote: the request is too long");
        c.ending = true;
        c.requested = true;
      }
      continue;
    }
    std::string why;
    const std::optional<BulkRequest> request = parse_bulk_request(c.head.substr(0, c.head.find("\r\n\r\n") + 4), &why);
    c.requested = true;
    c.head.clear();
    if (!request) {
      c.out = bulk_error_response(400, "Bad Request", "mm-cumulus-remote: " + why);
      c.ending = true;
    } else {
      c.request = *request;
      authorise(c);
    }
  }
  flush_client(c);
  if (!c.gone && c.started && current_) send_new_pairs();  // room again: more files
}

// A request is served only with the token; and at most kMaxWaitingLoads wait.
void RemoteProxy::authorise(Client& c) {
  if (!same_bulk_token(c.request.token, options_.token)) {
    // A line for the first few, then one in a hundred: a stranger's requests cannot flood the log.
    if (++refused_ <= 5 || refused_ % 100 == 0)
      options_.say("refused a request from " + peer_text(c.peer) + ": " +
                   (c.request.token.empty() ? "no token" : "not the token") + " (" + std::to_string(refused_) +
                   " refused in all)");
    c.out = bulk_error_response(401, "Unauthorized",
                                "mm-cumulus-remote: this Remote Proxy loads pages only for requests with its token "
                                "(MAHIMAHI_CUMULUS_REMOTE=TOKEN@ADDRESS:PORT, or mm-cumulus-local --token-file)");
    c.ending = true;
    return;
  }
  size_t waiting = 0;
  for (const auto& other : clients_)
    if (other.get() != &c && !other->gone && other->authorised && !other->started && !other->ending) waiting++;
  if (waiting >= kMaxWaitingLoads) {
    c.out =
        bulk_error_response(503, "Service Unavailable",
                            "mm-cumulus-remote: " + std::to_string(kMaxWaitingLoads) + " loads are waiting already");
    c.ending = true;
    return;
  }
  c.authorised = true;
}

void RemoteProxy::flush_client(Client& c) {
  if (c.gone) return;
  while (c.out_offset < c.out.size()) {
    const ssize_t n =
        ::send(c.fd.get(), c.out.data() + c.out_offset, c.out.size() - c.out_offset, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN) break;
      end_client(c);
      return;
    }
    c.out_offset += static_cast<size_t>(n);
    c.progress = monotonic_now();
  }
  if (c.out_offset == c.out.size() && !c.file.valid()) c.progress = monotonic_now();  // nothing owed
  if (c.out_offset == c.out.size()) {
    c.out.clear();
    c.out_offset = 0;
    if (c.ending) {
      end_client(c);  // (its load, if it had one, has ended: the end frame was the last)
      return;
    }
  }
  // Writable again: more of the buffer, or of the pair being read into it.
  const bool owed = !c.out.empty() || c.file.valid();
  epoll_.modify(c.fd.get(), EPOLLIN | EPOLLRDHUP | (owed ? static_cast<uint32_t>(EPOLLOUT) : 0u), kClientBase + c.id);
}

void RemoteProxy::end_client(Client& c) {
  c.gone = true;
  c.file = FileDescriptor();
  c.file_left = 0;
  // The connection's descriptor goes now (a client that stopped reading holds nothing more).
  epoll_.remove(c.fd.get());
  c.fd = FileDescriptor();
  if (c.started && current_ && !current_->exited) {
    // Nobody waits for this load any more: its loader is stopped (its shells clean up).
    if (options_.verbose) options_.say("the client went away: stopping load " + std::to_string(current_->number));
    ::kill(current_->pid, SIGTERM);
  }
}

void RemoteProxy::start_next_load() {
  Client* next = nullptr;
  for (auto& c : clients_) {
    if (!c->gone && !c->ending && c->requested && !c->started) {
      next = c.get();
      break;
    }
  }
  if (!next) return;
  if (!spare_) start_spare();
  current_ = std::move(spare_);
  epoll_.remove(current_->errors.get());
  if (current_->errors.valid()) epoll_.add(current_->errors.get(), EPOLLIN, kCurrentErrorsKey);
  next->started = true;
  next->out = bulk_response_head();
  current_->load_started = monotonic_now();
  if (options_.verbose)
    options_.say("load " + std::to_string(current_->number) + ": " + printable(next->request.url, 300));
  if (current_->exited) {
    send_new_pairs();
    return;
  }
  epoll_.remove(current_->pidfd.get());
  epoll_.add(current_->pidfd.get(), EPOLLIN, kCurrentExitKey);
  const std::string line = field(next->request.url) + "\t" + field(next->request.user_agent) + "\t" +
                           field(next->request.accept_language) + "\n";
  if (::write(current_->input.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()) && options_.verbose)
    options_.say("the loader did not take the URL");
  current_->input = FileDescriptor();
  watch_directory();
  send_new_pairs();
  flush_client(*next);
}

void RemoteProxy::watch_directory() {
  // mm-record makes the directory when its shell starts (if it has not yet, the work directory's
  // watch calls this again); this watch sees each pair's file linked in.
  if (::inotify_add_watch(inotify_.get(), current_->dir.c_str(), IN_CREATE | IN_MOVED_TO | IN_ONLYDIR) >= 0)
    current_->watched = true;
}

// Queues the directory's new files, then sends as many as the client's connection takes.
void RemoteProxy::send_new_pairs() {
  if (!current_) return;
  Client* client = nullptr;
  for (auto& c : clients_)
    if (c->started) client = c.get();
  std::error_code error;
  std::vector<std::pair<fs::file_time_type, std::string>> fresh;
  for (fs::directory_iterator it(current_->dir, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with("save.") || current_->seen.contains(name)) continue;
    current_->seen.insert(name);
    std::error_code ignored;
    fresh.emplace_back(fs::last_write_time(it->path(), ignored), name);
    const uintmax_t size = fs::file_size(it->path(), ignored);
    if (!ignored) current_->written += size;
  }
  std::sort(fresh.begin(), fresh.end());
  for (auto& [time, name] : fresh) current_->queued.push_back(current_->dir / name);
  if (current_->written > options_.max_load_bytes && !current_->over_cap && !current_->exited) {
    // What the load writes is bounded (it lives in memory, /dev/shm): stopped, it ends with an error.
    current_->over_cap = true;
    options_.say("load " + std::to_string(current_->number) + ": its pairs passed " +
                 std::to_string(options_.max_load_bytes >> 20) + " MiB (--max-load): stopped");
    ::kill(current_->pid, SIGTERM);
  }
  if (!client || client->gone) {
    current_->queued.clear();
    if (current_->exited) finish_load();
    return;
  }
  fill(*client);
  if (client->gone) return;
  if (current_->exited && current_->queued.empty() && !client->file.valid()) {
    finish_load();
    return;
  }
  if (!client->out.empty()) flush_client(*client);
}

// Moves the pair being sent, then the next queued ones, into the client's buffer while it holds
// less than kHighWater: a pair is never held whole in memory.
void RemoteProxy::fill(Client& c) {
  if (c.pending() == 0) {
    c.out.clear();
    c.out_offset = 0;
  }
  const uint64_t cap = std::min<uint64_t>(options_.max_pair_bytes, kMaxBulkFrame);
  while (c.pending() < kHighWater) {
    if (c.file.valid()) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(c.file_left, buffer_.size()));
      const ssize_t n = ::read(c.file.get(), buffer_.data(), want);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        // The file shrank under us: the frame cannot be completed, so the stream is cut (the
        // Local Proxy then fetches what it still needs).
        options_.say("a pair file could not be read whole: the bulk response is cut");
        end_client(c);
        return;
      }
      if (c.out_offset > 0 && c.out_offset >= kHighWater) {
        c.out.erase(0, c.out_offset);
        c.out_offset = 0;
      }
      c.out.append(buffer_.data(), static_cast<size_t>(n));
      c.file_left -= static_cast<uint64_t>(n);
      if (c.file_left == 0) c.file = FileDescriptor();
      continue;
    }
    if (!current_ || current_->queued.empty()) break;
    const fs::path path = current_->queued.front();
    current_->queued.pop_front();
    FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    struct stat st {};
    const bool opened = fd.valid() && ::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode);
    const int open_error = errno;
    ::unlink(path.c_str());  // its space goes when the descriptor closes
    if (!opened) {
      current_->left_out++;
      options_.say(path.filename().string() + " could not be read (" +
                   (fd.valid() ? std::string("not a regular file") : std::string(std::strerror(open_error))) +
                   "): left out; the Local Proxy fetches it itself");
      continue;
    }
    const auto size = static_cast<uint64_t>(st.st_size);
    if (size > cap) {
      current_->left_out++;
      options_.say(path.filename().string() + " holds " + std::to_string(size) + " bytes, more than --max-pair (" +
                   std::to_string(cap) + "): left out; the Local Proxy fetches it itself");
      continue;
    }
    if (c.pending() == 0) c.progress = monotonic_now();
    c.out += encode_bulk_frame_header(BulkFrameKind::Pair, static_cast<uint32_t>(size));
    current_->pairs++;
    current_->bytes += size;
    if (size > 0) {
      c.file = std::move(fd);
      c.file_left = size;
    }
  }
}

// The load's result as mm-pageload wrote it (--json={json}), if it did (a loader that failed
// before the load wrote none).
std::optional<LoadResult> RemoteProxy::read_result(const Loader& l) const {
  std::ifstream in(l.result);
  if (!in) return std::nullopt;
  try {
    std::vector<LoadResult> loads = read_load_json(in, l.result.filename().string(), kMaxResultBytes);
    if (loads.size() == 1) return loads.front();
    options_.say("load " + std::to_string(l.number) + ": the loader reported " + std::to_string(loads.size()) +
                 " loads, not one");
  } catch (const UserError& e) {
    options_.say("load " + std::to_string(l.number) + ": " + e.what());
  }
  return std::nullopt;
}

void RemoteProxy::finish_load() {
  // Called when the loader has exited and whenever the client's connection took more: the end
  // frame goes only after every pair (mm-record wrote its last ones before it exited).
  Loader& l = *current_;
  if (!l.exited) return;
  Client* client = nullptr;
  for (auto& c : clients_)
    if (c->started) client = c.get();
  if (client && !client->gone && (!l.queued.empty() || client->file.valid())) return;
  std::map<std::string, std::string> fields;
  // mm-record --refuse-upstream's lines: the user learns what was kept out, and how to allow it.
  std::string last, refused;
  size_t pos = 0, refusals = 0;
  while (pos < l.tail.size()) {
    size_t end = l.tail.find('\n', pos);
    if (end == std::string::npos) end = l.tail.size();
    const std::string line = l.tail.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty()) continue;
    last = line;
    if (line.starts_with("mm-record: refused a connection to ") && refusals++ == 0) refused = line.substr(11);
  }
  if (!refused.empty())
    options_.say("load " + std::to_string(l.number) + ": " + printable(refused, 200) +
                 (refusals > 1 ? " and " + std::to_string(refusals - 1) + " more" : "") +
                 " (--allow-private lets the loads reach such addresses)");
  const Nanos took = monotonic_now() - l.load_started;
  std::string status = l.status == 0 && !l.over_cap ? "ok" : "error";
  std::string reason;
  if (const std::optional<LoadResult> load = read_result(l)) {
    // mm-pageload's own account of the load (--json): its status, why not ok, and its PLT.
    if (load->status == LoadResult::Status::Timeout) status = "timeout";
    if (l.status != 0)
      reason = printable(status_name(load->status) + (load->reason.empty() ? "" : " (" + load->reason + ")"), 300);
    if (load->plt_ms) {
      char ms[32];
      std::snprintf(ms, sizeof ms, "%.0f", *load->plt_ms);
      fields["load_ms"] = ms;
    }
  } else if (l.status != 0) {
    reason = "the loader " + how_it_ended(l.status) + (last.empty() ? "" : ": " + printable(last, 300));
  }
  if (l.over_cap) reason = "its pairs passed " + std::to_string(options_.max_load_bytes >> 20) + " MiB (--max-load)";
  if (l.left_out > 0) fields["left_out"] = std::to_string(l.left_out);
  const double cpu_ms = (static_cast<double>(l.usage.ru_utime.tv_sec + l.usage.ru_stime.tv_sec) * 1e3 +
                         static_cast<double>(l.usage.ru_utime.tv_usec + l.usage.ru_stime.tv_usec) / 1e3);
  fields["status"] = status;
  if (!reason.empty()) fields["reason"] = reason;
  fields["pairs"] = std::to_string(l.pairs);
  fields["bytes"] = std::to_string(l.bytes);
  fields["cpu_ms"] = std::to_string(static_cast<uint64_t>(cpu_ms));
  fields["wall_ms"] = std::to_string(took / 1'000'000);
  options_.say("load " + std::to_string(l.number) + " " + status + ": " + count_of(l.pairs, "pair") + ", " +
               std::to_string(l.bytes >> 10) + " KiB, " + std::to_string(took / 1'000'000) + " ms, CPU " +
               fields["cpu_ms"] + " ms" + (reason.empty() ? "" : " (" + reason + ")"));
  epoll_.remove(l.pidfd.get());
  if (l.errors.valid()) epoll_.remove(l.errors.get());
  std::error_code ignored;
  fs::remove_all(l.dir, ignored);
  fs::remove(l.result, ignored);
  current_.reset();
  if (client) {
    client->started = false;
    if (!client->gone) {
      client->out += encode_bulk_frame(BulkFrameKind::End, encode_bulk_end(fields));
      client->ending = true;
      flush_client(*client);
    }
  }
  if (!spare_) start_spare();
}

// SPDX-License-Identifier: GPL-3.0-or-later
#include "cumulus/remote_proxy.hh"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <set>

#include "cumulus/bulk.hh"
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

int pidfd_open(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

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
  std::string tail;  // the end of what it wrote on standard error
  bool exited = false;
  int status = 0;
  rusage usage{};
  Nanos load_started = 0;
  bool watched = false;         // its directory is watched (it exists)
  std::set<std::string> seen;   // files of its directory already queued
  std::deque<fs::path> queued;  // to send, in the order they appeared
  uint64_t pairs = 0, bytes = 0;
};

struct RemoteProxy::Client {
  uint64_t id = 0;
  FileDescriptor fd;
  std::string head;  // the request as it arrives
  bool requested = false;
  BulkRequest request;
  bool started = false;  // its load began
  std::string out;
  size_t out_offset = 0;
  bool ending = false;  // close once out is sent
  bool gone = false;
};

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
  }
}

void RemoteProxy::start_spare() {
  auto l = std::make_unique<Loader>();
  l->number = next_load_++;
  l->dir = options_.work_directory / ("load-" + std::to_string(l->number));
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
  l->pidfd = FileDescriptor(pidfd_open(l->pid));
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
  for (;;) {
    const int n = epoll_.wait(events, 64, kNever);
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
        epoll_.remove(c.fd.get());
        it = clients_.erase(it);
      } else {
        ++it;
      }
    }
    if (!current_) start_next_load();
  }
}

void RemoteProxy::accept_all() {
  for (;;) {
    FileDescriptor fd(::accept4(options_.listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) return;
    if (clients_.size() >= kMaxWaitingLoads) {
      const std::string busy =
          bulk_error_response(503, "Service Unavailable",
                              "mm-cumulus-remote: " + std::to_string(kMaxWaitingLoads) + " loads are waiting already");
      (void)!::send(fd.get(), busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      continue;
    }
    auto c = std::make_unique<Client>();
    c->id = next_client_++;
    c->fd = std::move(fd);
    epoll_.add(c->fd.get(), EPOLLIN | EPOLLRDHUP, kClientBase + c->id);
    clients_.push_back(std::move(c));
  }
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
    }
  }
  flush_client(c);
  if (!c.gone && c.started && current_) send_new_pairs();  // room again: more files
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
  }
  if (c.out_offset == c.out.size()) {
    c.out.clear();
    c.out_offset = 0;
    if (c.ending) {
      c.gone = true;
      return;
    }
  }
  epoll_.modify(c.fd.get(), EPOLLIN | EPOLLRDHUP | (c.out.empty() ? 0u : static_cast<uint32_t>(EPOLLOUT)),
                kClientBase + c.id);
}

void RemoteProxy::end_client(Client& c) {
  c.gone = true;
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
  }
  std::sort(fresh.begin(), fresh.end());
  for (auto& [time, name] : fresh) current_->queued.push_back(current_->dir / name);
  if (!client || client->gone) {
    current_->queued.clear();
    if (current_->exited) finish_load();
    return;
  }
  while (!current_->queued.empty() && client->out.size() - client->out_offset < kHighWater) {
    const fs::path file = current_->queued.front();
    current_->queued.pop_front();
    std::ifstream in(file, std::ios::binary);
    std::error_code size_error;
    const uintmax_t size = fs::file_size(file, size_error);
    if (!in || size_error) continue;
    if (size > kMaxBulkFrame) {
      options_.say(file.filename().string() + " holds " + std::to_string(size) + " bytes, more than a frame carries (" +
                   std::to_string(kMaxBulkFrame) + "): left out; the Local Proxy fetches it itself");
      fs::remove(file, size_error);
      continue;
    }
    std::string bytes(static_cast<size_t>(size), '\0');
    in.read(bytes.data(), static_cast<std::streamsize>(size));
    if (static_cast<uintmax_t>(in.gcount()) != size) continue;
    fs::remove(file, size_error);
    if (client->out_offset > 0 && client->out_offset == client->out.size()) {
      client->out.clear();
      client->out_offset = 0;
    }
    client->out += encode_bulk_frame(BulkFrameKind::Pair, bytes);
    current_->pairs++;
    current_->bytes += bytes.size();
  }
  if (current_->exited && current_->queued.empty()) {
    finish_load();
    return;
  }
  if (!client->out.empty()) flush_client(*client);
}

void RemoteProxy::finish_load() {
  // Called when the loader has exited and whenever the client's connection took more: the end
  // frame goes only after every pair (mm-record wrote its last ones before it exited).
  Loader& l = *current_;
  if (!l.exited) return;
  Client* client = nullptr;
  for (auto& c : clients_)
    if (c->started) client = c.get();
  if (client && !client->gone && !l.queued.empty()) return;
  std::map<std::string, std::string> fields;
  // mm-pageload's line for the load: "mm-pageload: [1/1] URL run 1: ok  PLT 52 ms ..." or why not.
  std::string row, last;
  size_t pos = 0;
  while (pos < l.tail.size()) {
    size_t end = l.tail.find('\n', pos);
    if (end == std::string::npos) end = l.tail.size();
    const std::string line = l.tail.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty()) continue;
    last = line;
    if (line.starts_with("mm-pageload: [") && line.find(" run ") != std::string::npos) row = line;
  }
  const Nanos took = monotonic_now() - l.load_started;
  std::string status = l.status == 0 ? "ok" : "error";
  std::string reason;
  if (!row.empty()) {
    const size_t colon = row.find(": ", row.find(" run "));
    const std::string verdict = colon == std::string::npos ? "" : row.substr(colon + 2);
    if (verdict.starts_with("timeout")) status = "timeout";
    if (l.status != 0) reason = printable(verdict, 300);
    if (const size_t plt = row.find("PLT "); plt != std::string::npos) {
      const size_t digits_end = row.find(' ', plt + 4);
      fields["load_ms"] = row.substr(plt + 4, digits_end - plt - 4);
    }
  } else if (l.status != 0) {
    reason = "the loader " + how_it_ended(l.status) + (last.empty() ? "" : ": " + printable(last, 300));
  }
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

// SPDX-License-Identifier: GPL-3.0-or-later
// The Remote Proxy's loop and its clients' connections; the loaders are in remote_loads.cc.
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

#include "cumulus/bulk.hh"
#include "cumulus/remote_proxy_parts.hh"
#include "util/child_process.hh"
#include "util/exception.hh"
#include "util/text.hh"

namespace fs = std::filesystem;
using namespace remote_proxy;

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

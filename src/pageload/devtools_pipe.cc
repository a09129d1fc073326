// SPDX-License-Identifier: GPL-3.0-or-later
// The DevTools protocol over Chromium's pipe (see devtools_pipe.hh).
#include "pageload/devtools_pipe.hh"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cmath>
#include <cstring>

#include "util/exception.hh"

using nlohmann::json;

std::vector<std::string> MessageFramer::feed(std::string_view bytes) {
  std::vector<std::string> messages;
  while (!bytes.empty()) {
    const size_t end = bytes.find('\0');
    const std::string_view piece = bytes.substr(0, end);
    if (partial_.size() + piece.size() > max_) {
      throw std::runtime_error("the browser sent a DevTools message larger than " + std::to_string(max_) + " bytes");
    }
    partial_.append(piece);
    if (end == std::string_view::npos) break;
    messages.push_back(std::move(partial_));
    partial_.clear();
    bytes.remove_prefix(end + 1);
  }
  return messages;
}

Interrupted::Interrupted(int signal)
    : std::runtime_error(std::string("interrupted by ") + ::sigabbrev_np(signal)), signal_(signal) {}

DevToolsPipe::DevToolsPipe(FileDescriptor to_browser, FileDescriptor from_browser, int interrupt_fd,
                           size_t max_message_bytes)
    : to_browser_(std::move(to_browser)),
      from_browser_(std::move(from_browser)),
      interrupt_fd_(interrupt_fd),
      framer_(max_message_bytes) {
  const int flags = check_syscall("fcntl", ::fcntl(from_browser_.get(), F_GETFL));
  check_syscall("fcntl", ::fcntl(from_browser_.get(), F_SETFL, flags | O_NONBLOCK));
}

int DevToolsPipe::send(std::string_view method, const json& params, std::string_view session_id) {
  const int id = next_id_++;
  json message = {{"id", id}, {"method", method}, {"params", params}};
  if (!session_id.empty()) message["sessionId"] = session_id;
  std::string text = message.dump();
  text.push_back('\0');
  // A browser that has exited leaves a pipe without a reader: the write fails with EPIPE, and
  // the SIGPIPE it raises (blocked here, then taken back) must not end this process.
  sigset_t pipe_signal, previous;
  ::sigemptyset(&pipe_signal);
  ::sigaddset(&pipe_signal, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_signal, &previous);
  int error = 0;
  try {
    // Commands are small and the pipe holds 64 KiB: a write blocks only if the browser has
    // stopped reading, and then the next wait's deadline reports it.
    write_all(to_browser_.get(), text);
  } catch (const SystemError& e) {
    error = e.error();
  }
  if (error == EPIPE && !::sigismember(&previous, SIGPIPE)) {
    const timespec no_wait{0, 0};
    ::sigtimedwait(&pipe_signal, nullptr, &no_wait);
  }
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (error == EPIPE) throw DevToolsClosed("the browser closed its DevTools pipe");
  if (error != 0) throw SystemError("writing to the browser's DevTools pipe", error);
  return id;
}

void DevToolsPipe::notify(std::string_view method, const json& params, std::string_view session_id) {
  unwanted_replies_.insert(send(method, params, session_id));
}

json DevToolsPipe::call(std::string_view method, const json& params, std::string_view session_id, Nanos deadline) {
  return wait_reply(send(method, params, session_id), method, deadline);
}

json DevToolsPipe::wait_reply(int id, std::string_view method, Nanos deadline) {
  const Nanos waited_from = monotonic_now();
  for (;;) {
    if (const auto found = replies_.find(id); found != replies_.end()) {
      json reply = std::move(found->second);
      replies_.erase(found);
      if (reply.contains("error")) {
        const json& error = reply["error"];
        std::string message = error.value("message", std::string("unknown error"));
        if (error.contains("data") && error["data"].is_string())
          message += " (" + error["data"].get<std::string>() + ")";
        throw DevToolsCommandError(std::string(method) + ": " + message);
      }
      return reply.value("result", json::object());
    }
    if (!read_some(deadline)) {
      const long seconds = std::lround(static_cast<double>(deadline - waited_from) / 1e9);
      throw DevToolsTimeout("no answer to " + std::string(method) + " within " + std::to_string(seconds) + " s");
    }
  }
}

std::optional<json> DevToolsPipe::next_event(Nanos deadline, int watched_reply) {
  while (events_.empty()) {
    if (watched_reply != 0 && replies_.count(watched_reply)) return std::nullopt;
    if (!read_some(deadline)) return std::nullopt;
  }
  json event = std::move(events_.front());
  events_.pop_front();
  return event;
}

std::optional<json> DevToolsPipe::take_reply(int id) {
  const auto found = replies_.find(id);
  if (found == replies_.end()) return std::nullopt;
  json reply = std::move(found->second);
  replies_.erase(found);
  return reply;
}

bool DevToolsPipe::read_some(Nanos deadline) {
  for (;;) {
    pollfd fds[2] = {{from_browser_.get(), POLLIN, 0}, {interrupt_fd_, POLLIN, 0}};
    // Past the deadline the poll does not wait, but what has already arrived is still read.
    const Nanos left = deadline == kNever ? -1 : std::max<Nanos>(0, deadline - monotonic_now());
    timespec ts = to_timespec(left < 0 ? 0 : left);
    const int n = ::ppoll(fds, interrupt_fd_ >= 0 ? 2 : 1, left < 0 ? nullptr : &ts, nullptr);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw SystemError("poll");
    }
    if (n == 0) return false;
    if (interrupt_fd_ >= 0 && (fds[1].revents & POLLIN)) {
      signalfd_siginfo info{};
      if (::read(interrupt_fd_, &info, sizeof info) == sizeof info) throw Interrupted(static_cast<int>(info.ssi_signo));
    }
    if (fds[0].revents == 0) continue;
    char buffer[256 * 1024];
    const ssize_t got = ::read(from_browser_.get(), buffer, sizeof buffer);
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw SystemError("reading the browser's DevTools pipe");
    }
    if (got == 0) throw DevToolsClosed("the browser closed its DevTools pipe");
    std::vector<std::string> messages;
    try {
      messages = framer_.feed(std::string_view(buffer, static_cast<size_t>(got)));
    } catch (const std::runtime_error& e) {
      throw DevToolsClosed(e.what());  // the stream cannot be resynchronised: treat it as lost
    }
    for (const std::string& text : messages) dispatch(text);
    return true;
  }
}

void DevToolsPipe::dispatch(const std::string& text) {
  json message = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!message.is_object()) return;  // not JSON: nothing to act on (the browser never sends it)
  if (const auto id = message.find("id"); id != message.end() && id->is_number_integer()) {
    const int id_value = id->get<int>();
    if (unwanted_replies_.erase(id_value) == 0) replies_[id_value] = std::move(message);
  } else if (message.contains("method")) {
    events_.push_back(std::move(message));
  }
}

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Chromium's DevTools protocol over --remote-debugging-pipe: the browser reads commands on its
// fd 3 and writes replies and events on its fd 4, each message one JSON text followed by a NUL
// byte. Commands carry an id (and a sessionId for a page attached with flatten:true); a reply
// carries the same id; an event has a "method" and no id. Every wait here has a deadline, so a
// browser that stops answering is noticed, and every message has a size bound, so a runaway one
// cannot exhaust memory.
#include <cstddef>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "util/clock.hh"
#include "util/file_descriptor.hh"

// The largest message accepted from the browser: a screencast frame of a 4K viewport as PNG in
// base64 stays well below it.
inline constexpr size_t kMaxDevToolsMessageBytes = 64 * 1024 * 1024;

// Splits the byte stream from the browser into messages at NUL bytes.
class MessageFramer {
 public:
  explicit MessageFramer(size_t max_message_bytes = kMaxDevToolsMessageBytes) : max_(max_message_bytes) {}
  // Appends bytes and returns the messages they complete (without their NUL). Throws
  // std::runtime_error when a message grows beyond the bound.
  std::vector<std::string> feed(std::string_view bytes);
  size_t pending_bytes() const { return partial_.size(); }

 private:
  size_t max_;
  std::string partial_;
};

// The browser did not answer before a deadline.
class DevToolsTimeout : public std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The browser closed its end of the pipe (it exited or crashed).
class DevToolsClosed : public std::runtime_error {
  using std::runtime_error::runtime_error;
};
// A command's reply was an error: the protocol's message.
class DevToolsCommandError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};
// A signal the caller asked to be told about (SIGINT, SIGTERM, SIGHUP) arrived while waiting.
class Interrupted : public std::runtime_error {
 public:
  explicit Interrupted(int signal);
  int signal() const { return signal_; }

 private:
  int signal_;
};

class DevToolsPipe {
 public:
  // to_browser: the write end whose read end is the browser's fd 3; from_browser: the read end
  // of the browser's fd 4. interrupt_fd, if valid, is a signalfd watched during every wait:
  // a signal on it throws Interrupted.
  DevToolsPipe(FileDescriptor to_browser, FileDescriptor from_browser, int interrupt_fd = -1,
               size_t max_message_bytes = kMaxDevToolsMessageBytes);

  // Sends a command and returns its id; does not wait.
  int send(std::string_view method, const nlohmann::json& params = nlohmann::json::object(),
           std::string_view session_id = {});
  // Sends a command whose reply nobody waits for (Page.screencastFrameAck): its reply is dropped.
  void notify(std::string_view method, const nlohmann::json& params, std::string_view session_id);
  // Sends a command and waits until its reply or `deadline` (CLOCK_MONOTONIC ns); events that
  // arrive meanwhile are kept for next_event. Returns the reply's "result". Throws
  // DevToolsTimeout (naming the method), DevToolsClosed, DevToolsCommandError, Interrupted.
  nlohmann::json call(std::string_view method, const nlohmann::json& params, std::string_view session_id,
                      Nanos deadline);
  // Waits for the reply to a command sent earlier; the same as call's wait.
  nlohmann::json wait_reply(int id, std::string_view method, Nanos deadline);
  // The next event, waiting until `deadline` at most; nullopt at the deadline, or as soon as the
  // reply to `watched_reply` (an id from send, 0: none) is there for take_reply.
  std::optional<nlohmann::json> next_event(Nanos deadline, int watched_reply = 0);
  // The whole reply message to `id` (with "result" or "error") if it has arrived; it is consumed.
  std::optional<nlohmann::json> take_reply(int id);

 private:
  // Reads what the browser has sent, waiting until `deadline` for something; false at the
  // deadline. Throws DevToolsClosed at end of file.
  bool read_some(Nanos deadline);
  void dispatch(const std::string& text);

  FileDescriptor to_browser_, from_browser_;
  int interrupt_fd_;
  MessageFramer framer_;
  int next_id_ = 1;
  std::deque<nlohmann::json> events_;
  std::map<int, nlohmann::json> replies_;
  std::set<int> unwanted_replies_;
};

// SPDX-License-Identifier: GPL-3.0-or-later
// The DevTools pipe: NUL framing (split and joined reads, the size bound), replies matched to
// their commands while events queue up, error replies, deadlines, a closed pipe, dropped
// replies of notifications, and a signal interrupting a wait; over real pipes, the test playing
// the browser's side.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <string>

#include "pageload/devtools_pipe.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/signals.hh"

using nlohmann::json;

namespace {
std::string nul(std::string_view text) { return std::string(text) + '\0'; }

// The browser's side of the two pipes.
struct FakeBrowserEnds {
  FileDescriptor commands;  // what the pipe sent (the browser's fd 3)
  FileDescriptor replies;   // what the browser writes (its fd 4)
  std::unique_ptr<DevToolsPipe> pipe;

  explicit FakeBrowserEnds(int interrupt_fd = -1, size_t max = kMaxDevToolsMessageBytes) {
    int to[2], from[2];
    check_syscall("pipe2", ::pipe2(to, O_CLOEXEC));
    check_syscall("pipe2", ::pipe2(from, O_CLOEXEC));
    commands = FileDescriptor(to[0]);
    replies = FileDescriptor(from[1]);
    pipe = std::make_unique<DevToolsPipe>(FileDescriptor(to[1]), FileDescriptor(from[0]), interrupt_fd, max);
  }
  // The commands sent so far, parsed.
  std::vector<json> sent() {
    std::string text(65536, '\0');
    const ssize_t n = ::read(commands.get(), text.data(), text.size());
    text.resize(n > 0 ? static_cast<size_t>(n) : 0);
    MessageFramer framer;
    std::vector<json> out;
    for (const std::string& message : framer.feed(text)) out.push_back(json::parse(message));
    return out;
  }
  void reply(std::string_view text) { write_all(replies.get(), nul(text)); }
};
}  // namespace

TEST(MessageFramer, SplitsAtNulAcrossReads) {
  MessageFramer framer;
  EXPECT_TRUE(framer.feed("{\"a\":").empty());
  EXPECT_EQ(framer.pending_bytes(), 5u);
  const auto messages = framer.feed(std::string("1}\0{\"b\":2}\0{\"c\"", 15));
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[0], "{\"a\":1}");
  EXPECT_EQ(messages[1], "{\"b\":2}");
  EXPECT_EQ(framer.pending_bytes(), 4u);
  EXPECT_TRUE(framer.feed(std::string_view()).empty());
}

TEST(MessageFramer, EmptyMessagesAreMessages) {
  MessageFramer framer;
  EXPECT_EQ(framer.feed(std::string("\0\0", 2)).size(), 2u);
}

TEST(MessageFramer, RefusesAMessageLargerThanItsBound) {
  MessageFramer framer(10);
  EXPECT_EQ(framer.feed(std::string("0123456789\0", 11)).size(), 1u);  // exactly the bound
  EXPECT_TRUE(framer.feed("01234").empty());
  EXPECT_THROW(framer.feed("567890"), std::runtime_error);
}

TEST(DevToolsPipe, SendsNulTerminatedCommandsWithIdsAndSessions) {
  FakeBrowserEnds ends;
  const int first = ends.pipe->send("Browser.getVersion");
  const int second = ends.pipe->send("Page.navigate", {{"url", "http://a.test/"}}, "S1");
  EXPECT_NE(first, second);
  const auto sent = ends.sent();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0]["id"], first);
  EXPECT_EQ(sent[0]["method"], "Browser.getVersion");
  EXPECT_FALSE(sent[0].contains("sessionId"));
  EXPECT_EQ(sent[1]["params"]["url"], "http://a.test/");
  EXPECT_EQ(sent[1]["sessionId"], "S1");
}

TEST(DevToolsPipe, CallReturnsItsResultAndKeepsEventsThatCameFirst) {
  FakeBrowserEnds ends;
  const int id = ends.pipe->send("Runtime.evaluate");
  ends.reply(R"({"method":"Page.loadEventFired","params":{"timestamp":1}})");
  ends.reply(R"({"id":999,"result":{"other":true}})");
  ends.reply(R"({"id":)" + std::to_string(id) + R"(,"result":{"value":42}})");
  const json result = ends.pipe->wait_reply(id, "Runtime.evaluate", monotonic_now() + kNanosPerSec);
  EXPECT_EQ(result["value"], 42);
  const auto event = ends.pipe->next_event(monotonic_now());
  ASSERT_TRUE(event);
  EXPECT_EQ((*event)["method"], "Page.loadEventFired");
  EXPECT_FALSE(ends.pipe->next_event(monotonic_now()));
  EXPECT_TRUE(ends.pipe->take_reply(999));  // another command's reply waited for its reader
}

TEST(DevToolsPipe, AnErrorReplyThrowsWithTheProtocolsMessage) {
  FakeBrowserEnds ends;
  ends.reply(R"({"id":1,"error":{"code":-32000,"message":"No target with given id","data":"T9"}})");
  try {
    ends.pipe->call("Target.attachToTarget", json::object(), "", monotonic_now() + kNanosPerSec);
    FAIL() << "no exception";
  } catch (const DevToolsCommandError& e) {
    EXPECT_STREQ(e.what(), "Target.attachToTarget: No target with given id (T9)");
  }
}

TEST(DevToolsPipe, ASilentBrowserMeetsTheDeadline) {
  FakeBrowserEnds ends;
  const Nanos start = monotonic_now();
  EXPECT_THROW(ends.pipe->call("Browser.getVersion", json::object(), "", start + 50 * kNanosPerMs), DevToolsTimeout);
  const Nanos waited = monotonic_now() - start;
  EXPECT_GE(waited, 50 * kNanosPerMs);
  EXPECT_LT(waited, 2 * kNanosPerSec);
  EXPECT_FALSE(ends.pipe->next_event(monotonic_now() + 10 * kNanosPerMs));
}

TEST(DevToolsPipe, AClosedPipeIsReportedNotWaitedOn) {
  FakeBrowserEnds ends;
  ends.reply(R"({"method":"Inspector.detached","params":{}})");
  ends.replies.close();
  EXPECT_TRUE(ends.pipe->next_event(monotonic_now() + kNanosPerSec));  // what came before the end
  EXPECT_THROW(ends.pipe->next_event(monotonic_now() + 10 * kNanosPerSec), DevToolsClosed);
  ends.commands.close();
  EXPECT_THROW(ends.pipe->send("Browser.close"), DevToolsClosed);
}

TEST(DevToolsPipe, AnOversizedMessageLosesThePipe) {
  FakeBrowserEnds ends(-1, 16);
  ends.reply(R"({"method":"Page.screencastFrame","params":{"data":"AAAAAAAAAAAAAAAA"}})");
  EXPECT_THROW(ends.pipe->next_event(monotonic_now() + kNanosPerSec), DevToolsClosed);
}

TEST(DevToolsPipe, RepliesToNotificationsAreDropped) {
  FakeBrowserEnds ends;
  ends.pipe->notify("Page.screencastFrameAck", {{"sessionId", 3}}, "S");
  ends.reply(R"({"id":1,"result":{},"sessionId":"S"})");
  EXPECT_FALSE(ends.pipe->next_event(monotonic_now() + 20 * kNanosPerMs));
  EXPECT_FALSE(ends.pipe->take_reply(1));
}

TEST(DevToolsPipe, NextEventStopsWhenAWatchedReplyArrives) {
  FakeBrowserEnds ends;
  const int id = ends.pipe->send("Page.navigate");
  ends.reply(R"({"id":)" + std::to_string(id) + R"(,"result":{"frameId":"F"}})");
  const Nanos start = monotonic_now();
  EXPECT_FALSE(ends.pipe->next_event(start + 5 * kNanosPerSec, id));
  EXPECT_LT(monotonic_now() - start, kNanosPerSec);
  const auto reply = ends.pipe->take_reply(id);
  ASSERT_TRUE(reply);
  EXPECT_EQ((*reply)["result"]["frameId"], "F");
}

TEST(DevToolsPipe, ASignalInterruptsAWait) {
  const SignalSet usr1{SIGUSR1};
  const sigset_t previous = usr1.block();
  {
    const SignalFd signals(usr1);
    FakeBrowserEnds ends(signals.fd());
    ::kill(::getpid(), SIGUSR1);
    try {
      ends.pipe->next_event(monotonic_now() + 10 * kNanosPerSec);
      FAIL() << "no exception";
    } catch (const Interrupted& e) {
      EXPECT_EQ(e.signal(), SIGUSR1);
    }
  }
  ::sigprocmask(SIG_SETMASK, &previous, nullptr);
}

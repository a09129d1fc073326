// SPDX-License-Identifier: GPL-3.0-or-later
// The link log (mm-link, mm-delay, mm-loss): the event ring between a packet thread and the writer, and the lines
// written.
#include <sys/eventfd.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "expect.hh"
#include "packet/link_log.hh"
#include "packet/trace.hh"
#include "util/file_descriptor.hh"

namespace {
const Nanos ms = kNanosPerMs;

// Writes a log of the given events through a pipe and returns its text.
std::string written_log(const Trace* trace, Nanos origin, const std::vector<LinkEvent>& events, Nanos end) {
  int p[2];
  if (::pipe(p) != 0) throw std::runtime_error("pipe failed");
  FileDescriptor read_end(p[0]);
  {
    FileDescriptor wake(::eventfd(0, EFD_NONBLOCK));
    LinkEventRing ring(wake.get());
    LinkLogWriter writer(FileDescriptor(p[1]), trace, origin, origin, true, "# header\n");
    for (const LinkEvent& e : events) ring.push(e);
    writer.drain(ring);
    writer.finish(end);
  }  // the writer closes the write end
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = ::read(read_end.get(), buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<size_t>(n));
  return text;
}
}  // namespace

TEST(LinkLog, ring_hands_events_over_in_order) {
  FileDescriptor wake(::eventfd(0, EFD_NONBLOCK));
  LinkEventRing ring(wake.get());
  for (uint32_t i = 0; i < 100; i++) ring.push({static_cast<Nanos>(i), 0, i, 1, '+'});
  std::vector<uint32_t> seen;
  ring.drain([&](const LinkEvent& e) { seen.push_back(e.bytes); });
  ASSERT_EQ(seen.size(), 100u);
  for (uint32_t i = 0; i < 100; i++) ASSERT_EQ(seen[i], i);
  seen.clear();
  ring.drain([&](const LinkEvent& e) { seen.push_back(e.bytes); });
  ASSERT_TRUE(seen.empty());
}

TEST(LinkLog, writer_lines_in_the_original_format) {
  const Nanos origin = 1000 * ms;
  const Trace trace = Trace::parse("2\n4\n", "t");  // opportunities at 2 and 4 ms, once
  const std::string text = written_log(&trace, origin,
                                       {{origin + 1 * ms, 0, 1200, 1, '+'},
                                        {origin + 2 * ms + 400'000, origin + 1 * ms, 1200, 1, '-'},
                                        {origin + 3 * ms, 0, 3000, 2, 'd'}},
                                       origin + 10 * ms);
  ASSERT_EQ(text, "# header\n1 + 1200\n2 # 1500\n2 - 1200 1\n3 d 2 3000\n4 # 1500\n");
}

TEST(LinkLog, a_shell_without_a_link_writes_no_opportunities) {
  // mm-delay's and mm-loss's logs: arrivals, departures with their delay, drops; nothing else.
  const Nanos origin = 1000 * ms;
  const std::string text = written_log(nullptr, origin,
                                       {{origin + 1 * ms, 0, 1200, 1, '+'},
                                        {origin + 1 * ms + 500'000, 0, 80, 1, '+'},
                                        {origin + 1 * ms + 500'000, 0, 80, 1, 'd'},
                                        {origin + 51 * ms, origin + 1 * ms, 1200, 1, '-'}},
                                       origin + 100 * ms);
  ASSERT_EQ(text, "# header\n1 + 1200\n1 + 80\n1 d 1 80\n51 - 1200 50\n");
}

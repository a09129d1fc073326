// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The per-direction log of mm-link, mm-delay and mm-loss (--uplink-log / --downlink-log), in
// the original mm-link's format:
//   # header lines
//   T # 1500          an opportunity to send 1500 bytes (every one, used or not; mm-link only)
//   T + SIZE          a packet of SIZE bytes arrived
//   T - SIZE DELAY    a packet left after DELAY ms in the queue and on the link (the delay line)
//   T d COUNT BYTES   COUNT packets of BYTES bytes in all were dropped
//   T m COUNT BYTES   COUNT packets of BYTES bytes in all were marked CE by the queue (ECN)
//                     instead of dropped; each also has its '-' line when it leaves (ours only:
//                     the original's plot scripts stop at a kind they do not know)
// T is whole milliseconds since the shell started ("init timestamp"); whole milliseconds keep
// the original's parsers and plot scripts working (they read integers).
//
// The ferry thread only pushes small binary events into a lock-free ring (no formatting, no
// system call); the log writer, in another thread, formats them, generating the opportunity
// lines itself from the trace, and writes in large blocks.
#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "packet/event_ring.hh"
#include "packet/trace.hh"
#include "util/clock.hh"
#include "util/file_descriptor.hh"

struct LinkEvent {
  Nanos time;
  Nanos arrival;  // departures: when the packet arrived
  uint32_t bytes;
  uint32_t packets;
  char kind;  // '+', '-', 'd', 'm'
};

// One producer (a ferry thread), one consumer (the log writer).
class LinkEventRing : public EventRing<LinkEvent, 1 << 15> {
 public:
  using EventRing::EventRing;
  void push(const LinkEvent& event) {
    claim() = event;
    publish();
  }
};

class LinkLogWriter {
 public:
  // `header` is the text of the header lines, already prefixed with "# "; `name` names the log in
  // messages ("the downlink log down.log"); `trace` is the link's (nullptr: a shell without a
  // link, whose log has no opportunity lines). A write that fails (a full disk, EIO) is a UserError
  // saying the log is incomplete: the caller ends the shell rather than keep a log with a gap.
  LinkLogWriter(FileDescriptor file, const Trace* trace, Nanos origin, Nanos trace_start, bool once,
                const std::string& header, std::string name = "the log");
  void drain(LinkEventRing& ring);
  // The same, one event at a time (when another consumer shares the ring's events), then
  // drained() once they are all in.
  void add(const LinkEvent& event);
  void drained();
  // Writes the opportunities up to `end` and everything buffered.
  void finish(Nanos end);

 private:
  void opportunities_until(Nanos t);
  void line(Nanos t, char kind, uint64_t a, uint64_t b, int fields);
  void flush();

  FileDescriptor file_;
  std::optional<OpportunityCursor> cursor_;
  Nanos origin_;
  std::string buffer_;
  std::string name_;
};

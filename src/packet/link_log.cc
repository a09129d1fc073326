// SPDX-License-Identifier: GPL-3.0-or-later
// The link log writer: events handed over by the packet threads through a ring, written as
// the original Mahimahi's log lines (see link_log.hh).
#include "packet/link_log.hh"

#include <unistd.h>

#include <charconv>
#include <cstring>
#include <ctime>

#include "util/exception.hh"

LinkLogWriter::LinkLogWriter(FileDescriptor file, const Trace* trace, Nanos origin, Nanos trace_start, bool once,
                             const std::string& header, std::string name)
    : file_(std::move(file)), origin_(origin), buffer_(header), name_(std::move(name)) {
  if (trace) cursor_.emplace(*trace, trace_start, once);
  buffer_.reserve(1 << 17);
}

void LinkLogWriter::drain(LinkEventRing& ring) {
  ring.drain([this](const LinkEvent& e) { add(e); });
  drained();
}

void LinkLogWriter::add(const LinkEvent& e) {
  opportunities_until(e.time);
  switch (e.kind) {
    case '+':
      line(e.time, '+', e.bytes, 0, 1);
      break;
    case '-':
      line(e.time, '-', e.bytes, (e.time - origin_) / kNanosPerMs - (e.arrival - origin_) / kNanosPerMs, 2);
      break;
    case 'd':
    case 'm':
      line(e.time, e.kind, e.packets, e.bytes, 2);
      break;
  }
}

void LinkLogWriter::drained() {
  if (buffer_.size() >= (1 << 16)) flush();
}

void LinkLogWriter::finish(Nanos end) {
  opportunities_until(end);
  flush();
}

void LinkLogWriter::opportunities_until(Nanos t) {
  if (!cursor_) return;
  while (cursor_->next() <= t) {
    line(cursor_->next(), '#', Trace::kOpportunityBytes, 0, 1);
    cursor_->advance();
    if (buffer_.size() >= (1 << 16)) flush();
  }
}

void LinkLogWriter::line(Nanos t, char kind, uint64_t a, uint64_t b, int fields) {
  char text[64];
  char* p = std::to_chars(text, text + 24, (t - origin_) / kNanosPerMs).ptr;
  *p++ = ' ';
  *p++ = kind;
  *p++ = ' ';
  p = std::to_chars(p, text + 44, a).ptr;
  if (fields == 2) {
    *p++ = ' ';
    p = std::to_chars(p, text + 63, b).ptr;
  }
  *p++ = '\n';
  buffer_.append(text, static_cast<size_t>(p - text));
}

void LinkLogWriter::flush() {
  if (buffer_.empty()) return;
  try {
    write_all(file_.get(), buffer_);
  } catch (const SystemError& e) {
    throw UserError("cannot write " + name_ + ": " + std::strerror(e.error()) +
                    "; the log would have a gap, so the shell ends (free some space, or write the log to another "
                    "file system)");
  }
  buffer_.clear();
}

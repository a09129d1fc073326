// SPDX-License-Identifier: GPL-3.0-or-later
// The capture of a shell's traffic at its command's side (packet_capture.hh).
#include "packet/packet_capture.hh"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>

#include "util/exception.hh"

namespace {
constexpr uint32_t kPcapNanosecondMagic = 0xa1b23c4d;
constexpr uint32_t kLinkTypeRaw = 101;  // LINKTYPE_RAW: the packet starts at its IP header
// Records this much younger than the drain wait for the next one: the other direction's thread
// may still be pushing a packet it took the time of just before.
constexpr Nanos kHoldBack = 50 * kNanosPerMs;
constexpr size_t kWriteBlock = 1 << 18;

void append(std::string& out, uint32_t value) { out.append(reinterpret_cast<const char*>(&value), sizeof value); }
void append(std::string& out, uint16_t value) { out.append(reinterpret_cast<const char*>(&value), sizeof value); }
}  // namespace

void CaptureRing::push(Nanos now, std::span<const uint8_t> packet) {
  CaptureRecord& r = claim();
  r.time = now;
  r.wire_length = static_cast<uint32_t>(packet.size());
  r.captured = static_cast<uint32_t>(std::min<size_t>(packet.size(), kCaptureSnap));
  std::memcpy(r.bytes, packet.data(), r.captured);
  publish();
}

CaptureWriter::CaptureWriter(FileDescriptor file, std::string name)
    : file_(std::move(file)),
      wake_(check_syscall("eventfd", ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK))),
      name_(std::move(name)) {
  for (auto& ring : rings_) ring = std::make_unique<CaptureRing>(wake_.get());
  timespec wall{};
  ::clock_gettime(CLOCK_REALTIME, &wall);
  wall_offset_ = wall.tv_sec * kNanosPerSec + wall.tv_nsec - monotonic_now();
  buffer_.reserve(kWriteBlock + 2 * sizeof(CaptureRecord));
  append(buffer_, kPcapNanosecondMagic);
  append(buffer_, uint16_t{2});
  append(buffer_, uint16_t{4});
  append(buffer_, uint32_t{0});  // this zone: UTC
  append(buffer_, uint32_t{0});  // significant figures
  append(buffer_, kCaptureSnap);
  append(buffer_, kLinkTypeRaw);
  flush();  // an empty capture is still a capture
}

void CaptureWriter::drain() {
  uint64_t count;
  (void)!::read(wake_.get(), &count, sizeof count);
  for (int d = 0; d < 2; d++) rings_[d]->drain([&](const CaptureRecord& r) { pending_[d].push_back(r); });
  write_until(monotonic_now() - kHoldBack);
}

void CaptureWriter::finish() {
  for (int d = 0; d < 2; d++) rings_[d]->drain([&](const CaptureRecord& r) { pending_[d].push_back(r); });
  write_until(kNever);
  flush();
}

void CaptureWriter::write_until(Nanos until) {
  for (;;) {
    // The earlier of the two directions' first records (ties: the command's own packet first).
    int d = -1;
    for (int i = 0; i < 2; i++)
      if (!pending_[i].empty() && pending_[i].front().time < until &&
          (d < 0 || pending_[i].front().time < pending_[d].front().time))
        d = i;
    if (d < 0) return;
    const CaptureRecord& r = pending_[d].front();
    const Nanos wall = r.time + wall_offset_;
    append(buffer_, static_cast<uint32_t>(wall / kNanosPerSec));
    append(buffer_, static_cast<uint32_t>(wall % kNanosPerSec));
    append(buffer_, r.captured);
    append(buffer_, r.wire_length);
    buffer_.append(reinterpret_cast<const char*>(r.bytes), r.captured);
    pending_[d].pop_front();
    packets_++;
    if (buffer_.size() >= kWriteBlock) flush();
  }
}

void CaptureWriter::flush() {
  try {
    write_all(file_.get(), buffer_);
  } catch (const std::exception& e) {
    throw UserError("the capture " + name_ + " is incomplete: " + e.what() + " (free space for it, or capture less)");
  }
  buffer_.clear();
}

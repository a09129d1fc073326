// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A packet capture (pcap or pcapng, as tcpdump and Wireshark write them), read one packet at a
// time through libpcap: memory stays one packet's whatever the capture's size. Each packet comes
// as its time and its network-layer bytes (IPv4 or IPv6), under the link types of captures made
// next to a server: Ethernet (with 802.1Q and 802.1ad tags), Linux cooked (v1 and v2, tcpdump
// -i any), raw IP, BSD loopback. Other frames (ARP, LLDP, ...) are counted and skipped.
#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>

#include "util/clock.hh"

struct CapturedPacket {
  Nanos time = 0;               // capture time, nanoseconds since the epoch
  std::span<const uint8_t> ip;  // from the IP header on, as captured (the snap length may cut it)
  uint32_t wire_length = 0;     // the IP packet's bytes as sent (the frame's less its link header)
};

class CaptureReader {
 public:
  // Throws UserError naming the file and why (unreadable, not a capture, a link type not read).
  explicit CaptureReader(const std::string& path);
  // The same from an open stream (libpcap owns it from then on, and closes it); `name` in messages.
  CaptureReader(FILE* file, const std::string& name);
  ~CaptureReader();
  CaptureReader(const CaptureReader&) = delete;
  CaptureReader& operator=(const CaptureReader&) = delete;

  // The next IP packet, or nothing at the capture's end. A capture that ends inside a record (a
  // tcpdump killed, a copy cut short) ends there: ended_early() then says why. A record the
  // library refuses (a corrupt length) throws UserError naming the file and the frame.
  std::optional<CapturedPacket> next();

  uint64_t frames() const { return frames_; }    // read so far
  uint64_t skipped() const { return skipped_; }  // frames that were not IPv4 or IPv6
  const std::string& ended_early() const { return ended_early_; }
  const std::string& link_name() const { return link_name_; }
  // The resolution of the capture's timestamps, in nanoseconds (1000 for classic pcap files).
  Nanos resolution() const { return resolution_; }

 private:
  void check_link_type();
  std::string path_;
  struct pcap* pcap_ = nullptr;
  int link_type_ = 0;
  std::string link_name_;
  Nanos resolution_ = 1000;
  uint64_t frames_ = 0, skipped_ = 0;
  std::string ended_early_;
};

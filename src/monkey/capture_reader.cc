// SPDX-License-Identifier: GPL-3.0-or-later
#include "monkey/capture_reader.hh"

#include <pcap/pcap.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>

#include "util/byte_order.hh"
#include "util/exception.hh"
#include "util/text.hh"

namespace {
// LINKTYPE_ values as captures store them (libpcap maps them to its DLT_ values).
constexpr int kNull = 0, kEthernet = 1, kRaw = 12, kRawOpenBsd = 14, kLoop = 108, kLinuxSll = 113, kLinuxSll2 = 276;
constexpr int kIpv4 = 228, kIpv6 = 229, kRawLinktype = 101;

bool ip_ethertype(uint16_t type) { return type == 0x0800 || type == 0x86dd; }

// The timestamps' resolution from the file's magic number: classic pcap says microseconds or
// nanoseconds; pcapng's default is microseconds (an interface may say otherwise).
Nanos resolution_of(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return 1000;
  uint8_t magic[4] = {};
  const size_t n = std::fread(magic, 1, 4, f);
  std::fclose(f);
  if (n == 4 && ((magic[0] == 0xa1 && magic[1] == 0xb2 && magic[2] == 0x3c && magic[3] == 0x4d) ||
                 (magic[0] == 0x4d && magic[1] == 0x3c && magic[2] == 0xb2 && magic[3] == 0xa1)))
    return 1;
  return 1000;
}
// A timestamp's nanoseconds since the epoch (libpcap gives nanoseconds in tv_usec: asked so).
// pcapng's are 64-bit: one past the year 2262 is held there rather than overflowing, and a
// negative one is 0.
Nanos capture_time(int64_t seconds, int64_t nanoseconds) {
  constexpr int64_t kMaxSeconds = std::numeric_limits<Nanos>::max() / kNanosPerSec - 1;
  return std::clamp<int64_t>(seconds, 0, kMaxSeconds) * kNanosPerSec + std::clamp<int64_t>(nanoseconds, 0, 999'999'999);
}

UserError unreadable(const std::string& name, const char* why) {
  return UserError("cannot read capture " + printable(name, 200) + ": " + printable(why, 300) +
                   " (give a pcap or pcapng file, as tcpdump -w or Wireshark saves it)");
}
}  // namespace

CaptureReader::CaptureReader(const std::string& path) : path_(path), resolution_(resolution_of(path)) {
  char error[PCAP_ERRBUF_SIZE] = {};
  pcap_ = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, error);
  if (!pcap_) {
    throw unreadable(path, error);
  }
  check_link_type();
}

CaptureReader::CaptureReader(FILE* file, const std::string& name) : path_(name) {
  char error[PCAP_ERRBUF_SIZE] = {};
  pcap_ = pcap_fopen_offline_with_tstamp_precision(file, PCAP_TSTAMP_PRECISION_NANO, error);
  if (!pcap_) {
    std::fclose(file);
    throw unreadable(name, error);
  }
  check_link_type();
}

void CaptureReader::check_link_type() {
  link_type_ = pcap_datalink(pcap_);
  const char* name = pcap_datalink_val_to_name(link_type_);
  link_name_ = name ? name : "link type " + std::to_string(link_type_);
  switch (link_type_) {
    case kNull:
    case kEthernet:
    case kRaw:
    case kRawOpenBsd:
    case kLoop:
    case kLinuxSll:
    case kLinuxSll2:
    case kIpv4:
    case kIpv6:
    case kRawLinktype:
      break;
    default:
      pcap_close(pcap_);
      pcap_ = nullptr;
      throw UserError("capture " + printable(path_, 200) + " has link type " + link_name_ + " (" +
                      std::to_string(link_type_) +
                      "), which Monkey does not read: capture on an Ethernet interface, or on any (tcpdump -i any)");
  }
}

CaptureReader::~CaptureReader() {
  if (pcap_) pcap_close(pcap_);
}

std::optional<CapturedPacket> CaptureReader::next() {
  for (;;) {
    pcap_pkthdr* header = nullptr;
    const u_char* data = nullptr;
    const int r = pcap_next_ex(pcap_, &header, &data);
    if (r == PCAP_ERROR_BREAK) return std::nullopt;
    if (r != 1) {
      const std::string why = printable(pcap_geterr(pcap_), 300);
      // libpcap reports a capture cut inside a record as "truncated dump file": its end.
      if (why.find("truncated") != std::string::npos) {
        ended_early_ = why;
        return std::nullopt;
      }
      throw UserError("capture " + printable(path_, 200) + ", after frame " + std::to_string(frames_) + ": " + why +
                      " (a corrupt capture: the packets before it can be read with editcap -r)");
    }
    frames_++;
    const std::span<const uint8_t> frame(data, header->caplen);
    size_t offset = 0;
    bool ip = false;
    switch (link_type_) {
      case kEthernet: {
        offset = 12;
        uint16_t type = 0;
        // The type after any VLAN tags (802.1Q, 802.1ad, the older QinQ).
        while (offset + 2 <= frame.size()) {
          type = load_be16(frame.data() + offset);
          if (type != 0x8100 && type != 0x88a8 && type != 0x9100) break;
          offset += 4;
        }
        offset += 2;
        ip = offset <= frame.size() && ip_ethertype(type);
        break;
      }
      case kLinuxSll:
        offset = 16;
        ip = frame.size() >= 16 && ip_ethertype(load_be16(frame.data() + 14));
        break;
      case kLinuxSll2:
        offset = 20;
        ip = frame.size() >= 20 && ip_ethertype(load_be16(frame.data()));
        break;
      case kNull:
      case kLoop:
        offset = 4;
        ip = frame.size() > 4;
        break;
      default:  // raw IP
        ip = !frame.empty();
        break;
    }
    if (ip && offset < frame.size()) {
      const uint8_t version = frame[offset] >> 4;
      ip = version == 4 || version == 6;
    } else {
      ip = false;
    }
    if (!ip) {
      skipped_++;
      continue;
    }
    CapturedPacket packet;
    packet.time = capture_time(header->ts.tv_sec, header->ts.tv_usec);
    packet.ip = frame.subspan(offset);
    packet.wire_length = header->len > offset ? static_cast<uint32_t>(header->len - offset) : 0;
    return packet;
  }
}

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The IPv4 routes of the current network namespace over rtnetlink: a dump of them all, and the
// initial windows (route metrics) a shell's peer route takes from the route it shadows. Only the
// privileged set-up calls the writers.
#include <linux/rtnetlink.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>

#include "util/address.hh"
#include "util/file_descriptor.hh"

// A netlink socket for rtnetlink requests.
FileDescriptor rtnetlink_socket();

// Sends one rtnetlink request (NLM_F_ACK set) on `sock` and waits for the kernel's answer:
// SystemError naming `what` if it refused.
void rtnetlink_request(const FileDescriptor& sock, const nlmsghdr& request, const std::string& what);

// Dumps a list (RTM_GETROUTE, RTM_GETADDR, RTM_GETLINK) of `family` (AF_UNSPEC: all), calling fn
// for every message of the answer (its type says what it is).
void rtnetlink_dump(uint16_t type, uint8_t family, const std::function<void(const nlmsghdr& message)>& fn);

// Calls fn for every IPv4 route of every table (policy routing included): the route's header and
// its attributes (RTA_OK/RTA_NEXT over `length` bytes from `first`).
void for_each_ipv4_route(const std::function<void(const rtmsg& route, const rtattr* first, int length)>& fn);

// Whether the current namespace has an IPv4 default route (a route to 0.0.0.0/0 of unicast type,
// in any table): what pasta needs to call an interface "external".
bool has_default_route();

// The IPv4 address an attribute (RTA_DST, RTA_GATEWAY...) holds; its payload is at least 4 bytes.
Ipv4 ipv4_attribute(const rtattr* attribute);

// A route's initial congestion and receive windows in segments (RTAX_INITCWND, RTAX_INITRWND;
// 0: unset, the kernel's default).
struct InitialWindows {
  uint32_t congestion = 0;
  uint32_t receive = 0;
  bool any() const { return congestion != 0 || receive != 0; }
};

// An rtnetlink request under construction: the header, the message (rtmsg, ifinfomsg,
// ifaddrmsg...), then attributes.
class NetlinkRequest {
 public:
  template <typename Message>
  NetlinkRequest(uint16_t type, uint16_t flags, const Message& message) {
    auto* header = reinterpret_cast<nlmsghdr*>(buffer_.data());
    header->nlmsg_len = NLMSG_LENGTH(sizeof(Message));
    header->nlmsg_type = type;
    header->nlmsg_flags = flags;
    header->nlmsg_seq = 1;
    std::memcpy(NLMSG_DATA(header), &message, sizeof message);
  }
  rtattr* add(uint16_t type, const void* data, size_t length);  // logic_error past 512 bytes
  void add_u32(uint16_t type, uint32_t value) { add(type, &value, sizeof value); }
  // RTA_METRICS, holding the windows as attributes of its own.
  void add_windows(InitialWindows windows);
  // Sends it on `sock` and waits for the kernel's answer; an error names `what`.
  void execute(const FileDescriptor& sock, const std::string& what);
  void execute(const std::string& what) { execute(rtnetlink_socket(), what); }

 private:
  alignas(nlmsghdr) std::array<char, 512> buffer_{};
};

// The windows of the most specific route of the main table that covers `address` (of any type:
// an unreachable default counts), or none.
InitialWindows covering_route_windows(Ipv4 address);

// Replaces the kernel's route to a point-to-point device's peer with the same route carrying
// these windows (the TCP connections of this namespace towards the peer start with them).
void set_peer_route_windows(const std::string& device, Ipv4 local, Ipv4 peer, InitialWindows windows);

// Adds "unreachable default" carrying these windows: in a namespace with no way out (mm-replay),
// a route for what nothing answers anyway, which the shells started inside copy onto their
// peer routes (covering_route_windows).
void add_unreachable_default(InitialWindows windows);
// Gives the default route via `gateway` on `device` these initial windows.
void set_default_route_windows(const std::string& device, Ipv4 gateway, InitialWindows windows);

// SPDX-License-Identifier: GPL-3.0-or-later
// IPv4 routes over rtnetlink (see route_table.hh).
#include "shell/route_table.hh"

#include <linux/netlink.h>
#include <net/if.h>
#include <sys/socket.h>

#include <array>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "util/exception.hh"
#include "util/file_descriptor.hh"

FileDescriptor rtnetlink_socket() {
  return FileDescriptor(check_syscall("netlink socket", ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE)));
}

void rtnetlink_request(const FileDescriptor& sock, const nlmsghdr& request, const std::string& what) {
  check_syscall("netlink send", ::send(sock.get(), &request, request.nlmsg_len, 0));
  alignas(nlmsghdr) char reply[1024];
  const ssize_t n = check_syscall("netlink receive", ::recv(sock.get(), reply, sizeof reply, 0));
  const auto* answer = reinterpret_cast<const nlmsghdr*>(reply);
  if (n < static_cast<ssize_t>(NLMSG_LENGTH(sizeof(nlmsgerr))) || answer->nlmsg_type != NLMSG_ERROR)
    throw std::runtime_error("netlink: unexpected answer " + what);
  const int error = reinterpret_cast<const nlmsgerr*>(NLMSG_DATA(answer))->error;
  if (error != 0) throw SystemError(what, -error);
}

rtattr* NetlinkRequest::add(uint16_t type, const void* data, size_t length) {
  auto* header = reinterpret_cast<nlmsghdr*>(buffer_.data());
  const size_t at = NLMSG_ALIGN(header->nlmsg_len);
  if (at + RTA_SPACE(length) > buffer_.size()) throw std::logic_error("netlink request too long");
  auto* attribute = reinterpret_cast<rtattr*>(buffer_.data() + at);
  attribute->rta_type = type;
  attribute->rta_len = static_cast<unsigned short>(RTA_LENGTH(length));
  if (length) std::memcpy(RTA_DATA(attribute), data, length);
  header->nlmsg_len = static_cast<uint32_t>(at + RTA_ALIGN(attribute->rta_len));
  return attribute;
}

void NetlinkRequest::add_windows(InitialWindows windows) {
  auto* header = reinterpret_cast<nlmsghdr*>(buffer_.data());
  rtattr* metrics = add(RTA_METRICS, nullptr, 0);
  const size_t start = reinterpret_cast<char*>(metrics) - buffer_.data();
  if (windows.congestion) add_u32(RTAX_INITCWND, windows.congestion);
  if (windows.receive) add_u32(RTAX_INITRWND, windows.receive);
  metrics = reinterpret_cast<rtattr*>(buffer_.data() + start);
  metrics->rta_len = static_cast<unsigned short>(header->nlmsg_len - start);
}

void NetlinkRequest::execute(const FileDescriptor& sock, const std::string& what) {
  rtnetlink_request(sock, *reinterpret_cast<const nlmsghdr*>(buffer_.data()), what);
}

namespace {

InitialWindows windows_of(const rtattr* metrics) {
  InitialWindows windows;
  int length = static_cast<int>(RTA_PAYLOAD(metrics));
  for (const rtattr* a = static_cast<const rtattr*>(RTA_DATA(metrics)); RTA_OK(a, length); a = RTA_NEXT(a, length)) {
    if (RTA_PAYLOAD(a) < sizeof(uint32_t)) continue;
    uint32_t value;
    std::memcpy(&value, RTA_DATA(a), sizeof value);
    if (a->rta_type == RTAX_INITCWND) windows.congestion = value;
    if (a->rta_type == RTAX_INITRWND) windows.receive = value;
  }
  return windows;
}
}  // namespace

Ipv4 ipv4_attribute(const rtattr* attribute) {
  in_addr a{};
  std::memcpy(&a, RTA_DATA(attribute), sizeof a);
  return Ipv4::from_in_addr(a);
}

void rtnetlink_dump(uint16_t type, uint8_t family, const std::function<void(const nlmsghdr& message)>& fn) {
  FileDescriptor sock = rtnetlink_socket();
  struct {
    nlmsghdr header;
    rtmsg message;  // its first byte is the family, as in every rtnetlink message a dump takes
  } request{};
  request.header.nlmsg_len = NLMSG_LENGTH(sizeof(rtmsg));
  request.header.nlmsg_type = type;
  request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  request.header.nlmsg_seq = 1;
  request.message.rtm_family = family;
  check_syscall("asking rtnetlink for a list", ::send(sock.get(), &request, request.header.nlmsg_len, 0));
  std::vector<nlmsghdr> storage(32768 / sizeof(nlmsghdr));  // aligned for the headers
  char* buffer = reinterpret_cast<char*>(storage.data());
  for (;;) {
    const ssize_t n = ::recv(sock.get(), buffer, storage.size() * sizeof(nlmsghdr), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw SystemError("reading an rtnetlink list");
    int length = static_cast<int>(n);
    // NLMSG_OK compares the header's unsigned length with the int one (clang warns).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
    for (auto* message = reinterpret_cast<nlmsghdr*>(buffer); NLMSG_OK(message, length);
         message = NLMSG_NEXT(message, length)) {
#pragma GCC diagnostic pop
      if (message->nlmsg_type == NLMSG_DONE) return;
      if (message->nlmsg_type == NLMSG_ERROR) throw std::runtime_error("the kernel refused an rtnetlink list");
      fn(*message);
    }
  }
}

void for_each_ipv4_route(const std::function<void(const rtmsg&, const rtattr*, int)>& fn) {
  rtnetlink_dump(RTM_GETROUTE, AF_INET, [&](const nlmsghdr& message) {
    if (message.nlmsg_type != RTM_NEWROUTE) return;
    const auto* route = static_cast<const rtmsg*>(NLMSG_DATA(&message));
    if (route->rtm_family != AF_INET) return;
    fn(*route, RTM_RTA(route), static_cast<int>(RTM_PAYLOAD(&message)));
  });
}

InitialWindows covering_route_windows(Ipv4 address) {
  int best = -1;
  InitialWindows windows;
  for_each_ipv4_route([&](const rtmsg& route, const rtattr* first, int length) {
    if (route.rtm_table != RT_TABLE_MAIN || route.rtm_dst_len <= best) return;
    Ipv4 destination{0};
    const rtattr* metrics = nullptr;
    for (const rtattr* a = first; RTA_OK(a, length); a = RTA_NEXT(a, length)) {
      if (a->rta_type == RTA_DST && RTA_PAYLOAD(a) >= 4) destination = ipv4_attribute(a);
      if (a->rta_type == RTA_METRICS) metrics = a;
    }
    if (!Ipv4Net::of(destination, route.rtm_dst_len).contains(address)) return;
    best = route.rtm_dst_len;
    windows = metrics ? windows_of(metrics) : InitialWindows{};
  });
  return windows;
}

namespace {
// A route of the main table, to be completed with its attributes.
rtmsg main_table_route(unsigned char destination_length, unsigned char protocol, unsigned char scope,
                       unsigned char type = RTN_UNICAST) {
  rtmsg route{};
  route.rtm_family = AF_INET;
  route.rtm_dst_len = destination_length;
  route.rtm_table = RT_TABLE_MAIN;
  route.rtm_protocol = protocol;
  route.rtm_scope = scope;
  route.rtm_type = type;
  return route;
}

unsigned device_index(const std::string& device) {
  const unsigned index = ::if_nametoindex(device.c_str());
  if (index == 0) throw SystemError("no interface " + device);
  return index;
}
}  // namespace

void set_peer_route_windows(const std::string& device, Ipv4 local, Ipv4 peer, InitialWindows windows) {
  const unsigned index = device_index(device);
  NetlinkRequest request(RTM_NEWROUTE, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE,
                         main_table_route(32, RTPROT_KERNEL, RT_SCOPE_LINK));
  const in_addr destination = socket_address(peer, 0).sin_addr, source = socket_address(local, 0).sin_addr;
  request.add(RTA_DST, &destination, sizeof destination);
  request.add(RTA_PREFSRC, &source, sizeof source);
  request.add_u32(RTA_OIF, index);
  request.add_windows(windows);
  request.execute("setting the initial windows of the route to " + peer.str() + " on " + device);
}

void set_default_route_windows(const std::string& device, Ipv4 gateway, InitialWindows windows) {
  const unsigned index = device_index(device);
  NetlinkRequest request(RTM_NEWROUTE, NLM_F_REQUEST | NLM_F_ACK | NLM_F_REPLACE,
                         main_table_route(0, RTPROT_BOOT, RT_SCOPE_UNIVERSE));
  const in_addr via = socket_address(gateway, 0).sin_addr;
  request.add(RTA_GATEWAY, &via, sizeof via);
  request.add_u32(RTA_OIF, index);
  request.add_windows(windows);
  request.execute("setting the initial windows of the default route via " + gateway.str());
}

void add_unreachable_default(InitialWindows windows) {
  NetlinkRequest request(RTM_NEWROUTE, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
                         main_table_route(0, RTPROT_STATIC, RT_SCOPE_UNIVERSE, RTN_UNREACHABLE));
  request.add_windows(windows);
  request.execute("adding the unreachable default route with initial windows");
}

bool has_default_route() {
  bool found = false;
  for_each_ipv4_route([&](const rtmsg& route, const rtattr*, int) {
    if (route.rtm_dst_len == 0 && route.rtm_type == RTN_UNICAST) found = true;
  });
  return found;
}

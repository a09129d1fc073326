// SPDX-License-Identifier: GPL-3.0-or-later
// TUN devices, addresses and routes of the current namespace, by ioctl (see netdevice.hh).
#include "shell/netdevice.hh"

#include <fcntl.h>
#include <linux/if_tun.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <net/route.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <initializer_list>

#include "shell/route_table.hh"
#include "util/exception.hh"

namespace {

ifreq request_for(const std::string& name) {
  if (name.size() >= IFNAMSIZ) throw std::runtime_error("interface name too long: " + name);
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, name.c_str(), name.size());
  return ifr;
}

FileDescriptor ioctl_socket() {
  return FileDescriptor(check_syscall("socket", ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)));
}

void set_sockaddr(sockaddr& sa, Ipv4 a) {
  const sockaddr_in sin = socket_address(a, 0);
  std::memcpy(&sa, &sin, sizeof sin);
}

// UDP segmentation offload (linux/if_tun.h of 6.2; older headers lack them).
constexpr unsigned long kTunUso4 = 0x20, kTunUso6 = 0x40;

void interface_ioctl(int sock, unsigned long request, ifreq& ifr, const char* what) {
  if (::ioctl(sock, request, &ifr) < 0) throw SystemError(std::string(what) + " on " + ifr.ifr_name);
}

FileDescriptor open_tun_device() {
  FileDescriptor fd(::open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) {
    if (errno == ENOENT || errno == ENODEV || errno == ENXIO) {
      throw UserError("this kernel has no TUN device (/dev/net/tun: " + std::string(std::strerror(errno)) +
                      "); enable CONFIG_TUN or load the tun module (modprobe tun); in a container, give it the host's: "
                      "--device /dev/net/tun");
    }
    throw SystemError("/dev/net/tun");
  }
  return fd;
}

}  // namespace

FileDescriptor create_tun(const std::string& name) {
  FileDescriptor fd = open_tun_device();
  ifreq ifr = request_for(name);
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
  if (::ioctl(fd.get(), TUNSETIFF, &ifr) < 0) throw SystemError("creating TUN device " + name);
  return fd;
}

OffloadTun create_offload_tun(const std::string& name, bool header_required) {
  FileDescriptor fd = open_tun_device();
  unsigned int features = 0;
  if (::ioctl(fd.get(), TUNGETFEATURES, &features) < 0 || !(features & IFF_VNET_HDR))
    return {FileDescriptor(), "the kernel's TUN driver has no IFF_VNET_HDR", ""};
  ifreq ifr = request_for(name);
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI | IFF_VNET_HDR;
  if (::ioctl(fd.get(), TUNSETIFF, &ifr) < 0) {
    return {FileDescriptor(), "creating " + name + " with IFF_VNET_HDR: " + std::strerror(errno), ""};
  }
  // What the ferry can take apart: TCP/IPv4 super-packets, with or without ECN's CWR, and UDP
  // ones where the kernel has UDP segmentation offload (6.2 and later; it takes USO4 only with
  // USO6, and the shells carry no IPv6: those would be dropped as any IPv6 packet is).
  std::string refused;
  for (unsigned long offloads :
       std::initializer_list<unsigned long>{TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO_ECN | kTunUso4 | kTunUso6,
                                            TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO_ECN, TUN_F_CSUM | TUN_F_TSO4}) {
    if (::ioctl(fd.get(), TUNSETOFFLOAD, offloads) == 0) {
      std::string enabled = "checksum, TCP/IPv4 segmentation";
      if (offloads & kTunUso4) enabled += ", UDP segmentation";
      return {std::move(fd), "", enabled};
    }
    refused = std::string("TUNSETOFFLOAD on ") + name + ": " + std::strerror(errno);
  }
  if (header_required) {
    ::ioctl(fd.get(), TUNSETOFFLOAD, 0UL);
    return {std::move(fd), refused, ""};
  }
  return {FileDescriptor(), refused, ""};
}

void configure_point_to_point(const std::string& name, Ipv4 local, Ipv4 peer, int txqueuelen) {
  FileDescriptor sock = ioctl_socket();
  ifreq ifr = request_for(name);
  set_sockaddr(ifr.ifr_addr, local);
  interface_ioctl(sock.get(), SIOCSIFADDR, ifr, "setting address");
  ifr = request_for(name);
  set_sockaddr(ifr.ifr_dstaddr, peer);
  interface_ioctl(sock.get(), SIOCSIFDSTADDR, ifr, "setting peer address");
  ifr = request_for(name);
  set_sockaddr(ifr.ifr_netmask, Ipv4{0xffffffffu});
  interface_ioctl(sock.get(), SIOCSIFNETMASK, ifr, "setting netmask");
  set_tx_queue_length(name, txqueuelen);
  bring_up(name);
}

// By rtnetlink: the kernel refuses SIOCSIFTXQLEN without CAP_NET_ADMIN in the first user
// namespace, which a rootless shell has only in its own.
void set_tx_queue_length(const std::string& name, int length) {
  ifinfomsg link{};
  link.ifi_family = AF_UNSPEC;
  link.ifi_index = static_cast<int>(::if_nametoindex(name.c_str()));
  if (link.ifi_index == 0) throw SystemError("no interface " + name);
  NetlinkRequest request(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, link);
  request.add_u32(IFLA_TXQLEN, static_cast<uint32_t>(length));
  request.execute("setting txqueuelen on " + name);
}

void bring_up(const std::string& name) {
  FileDescriptor sock = ioctl_socket();
  ifreq ifr = request_for(name);
  interface_ioctl(sock.get(), SIOCGIFFLAGS, ifr, "reading flags");
  ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
  interface_ioctl(sock.get(), SIOCSIFFLAGS, ifr, "bringing up");
}

void add_default_route(const std::string& device, Ipv4 gateway) {
  FileDescriptor sock = ioctl_socket();
  rtentry route{};
  set_sockaddr(route.rt_dst, Ipv4{0});
  set_sockaddr(route.rt_genmask, Ipv4{0});
  set_sockaddr(route.rt_gateway, gateway);
  route.rt_flags = RTF_UP | RTF_GATEWAY;
  std::string dev = device;
  route.rt_dev = dev.data();
  if (::ioctl(sock.get(), SIOCADDRT, &route) < 0) throw SystemError("adding default route via " + gateway.str());
}

void add_addresses(const std::string& device, const std::vector<Ipv4>& addresses) {
  // One netlink socket, one request per address (ioctl aliases would need a label each).
  const unsigned index = ::if_nametoindex(device.c_str());
  if (index == 0) throw SystemError("no interface " + device);
  FileDescriptor sock = rtnetlink_socket();
  for (Ipv4 address : addresses) {
    ifaddrmsg message{};
    message.ifa_family = AF_INET;
    message.ifa_prefixlen = 32;
    message.ifa_scope = RT_SCOPE_UNIVERSE;
    message.ifa_index = index;
    NetlinkRequest request(RTM_NEWADDR, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE, message);
    const in_addr a = socket_address(address, 0).sin_addr;
    request.add(IFA_LOCAL, &a, sizeof a);
    request.add(IFA_ADDRESS, &a, sizeof a);
    request.execute(sock, "adding address " + address.str() + " to " + device);
  }
}

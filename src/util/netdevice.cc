#include "netdevice.hh"

#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <net/route.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "exception.hh"

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

void interface_ioctl(int sock, unsigned long request, ifreq& ifr, const char* what) {
  if (::ioctl(sock, request, &ifr) < 0) throw SystemError(std::string(what) + " on " + ifr.ifr_name);
}

}  // namespace

FileDescriptor create_tun(const std::string& name) {
  FileDescriptor fd(::open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) {
    if (errno == ENOENT || errno == ENODEV || errno == ENXIO) {
      throw UserError("this kernel has no TUN device (/dev/net/tun: " + std::string(std::strerror(errno)) +
                      "); enable CONFIG_TUN or load the tun module");
    }
    throw SystemError("/dev/net/tun");
  }
  ifreq ifr = request_for(name);
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
  if (::ioctl(fd.get(), TUNSETIFF, &ifr) < 0) throw SystemError("creating TUN device " + name);
  return fd;
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
  ifr = request_for(name);
  ifr.ifr_qlen = txqueuelen;
  interface_ioctl(sock.get(), SIOCSIFTXQLEN, ifr, "setting txqueuelen");
  bring_up(name);
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

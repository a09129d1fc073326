// SPDX-License-Identifier: GPL-3.0-or-later
// An interface's state and where it is: what mm-eth saves before it takes an interface and puts
// back after (interface_state.hh).
#include "shell/interface_state.hh"

#include <fcntl.h>
#include <net/if.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <exception>
#include <iostream>
#include <set>

#include "shell/admin_config.hh"
#include "shell/privileged.hh"
#include "shell/rootless.hh"
#include "shell/route_table.hh"
#include "util/exception.hh"
#include "util/text.hh"

namespace {
constexpr size_t kMaxSavedMessages = 256;  // addresses and routes of one interface
}  // namespace

InNamespace::InNamespace(const FileDescriptor& ns) : back_(open_own_namespace("net")) { enter_namespace(ns); }

InNamespace::~InNamespace() {
  try {
    enter_namespace(back_);
  } catch (...) {
    std::terminate();  // root's thread left in another namespace: nothing after it is safe
  }
}

// ---- namespaces

ino_t inode_of(const FileDescriptor& fd) {
  struct stat st {};
  check_syscall("fstat", ::fstat(fd.get(), &st));
  return st.st_ino;
}

namespace {
// The parent of `pid`, from /proc/PID/stat (after the command's name, which may hold anything).
std::optional<pid_t> parent_of(pid_t pid) {
  FileDescriptor fd(::open(("/proc/" + std::to_string(pid) + "/stat").c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return std::nullopt;
  char buffer[1024];
  const ssize_t n = ::read(fd.get(), buffer, sizeof buffer - 1);
  if (n <= 0) return std::nullopt;
  const std::string_view text(buffer, static_cast<size_t>(n));
  const size_t close = text.rfind(')');
  if (close == std::string_view::npos || close + 4 >= text.size()) return std::nullopt;
  const std::vector<std::string_view> fields = blank_separated_words(text.substr(close + 1));
  if (fields.size() < 2) return std::nullopt;
  const std::optional<uint64_t> parent = decimal_value(fields[1]);
  if (!parent) return std::nullopt;
  return static_cast<pid_t>(*parent);
}
}  // namespace

// The network namespaces of this process and of its ancestors, nearest first, each once.
std::vector<FileDescriptor> ancestor_namespaces() {
  std::vector<FileDescriptor> found;
  std::set<ino_t> seen;
  pid_t pid = ::getpid();
  for (int depth = 0; depth < 256 && pid > 0; depth++) {
    FileDescriptor ns(::open(("/proc/" + std::to_string(pid) + "/ns/net").c_str(), O_RDONLY | O_CLOEXEC));
    if (ns.valid() && seen.insert(inode_of(ns)).second) found.push_back(std::move(ns));
    if (pid == 1) break;
    const std::optional<pid_t> parent = parent_of(pid);
    if (!parent) break;
    pid = *parent;
  }
  return found;
}

// ---- the interface's state, as rtnetlink messages (the payload after the header)

namespace {
std::string hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}
}  // namespace

namespace {
std::optional<std::string> unhex(std::string_view text) {
  if (text.size() % 2) return std::nullopt;
  std::string out;
  for (size_t i = 0; i < text.size(); i += 2) {
    auto digit = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      return -1;
    };
    const int high = digit(text[i]), low = digit(text[i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    out += static_cast<char>(high << 4 | low);
  }
  return out;
}
}  // namespace

namespace {
std::string payload_of(const nlmsghdr& message) {
  return std::string(static_cast<const char*>(NLMSG_DATA(&message)), message.nlmsg_len - NLMSG_HDRLEN);
}
}  // namespace

// What the interface of index `index` has in the current namespace and would lose in another.
InterfaceState capture_state(unsigned index) {
  InterfaceState state;
  rtnetlink_dump(RTM_GETLINK, AF_UNSPEC, [&](const nlmsghdr& message) {
    if (message.nlmsg_type != RTM_NEWLINK) return;
    const auto* link = static_cast<const ifinfomsg*>(NLMSG_DATA(&message));
    if (link->ifi_index != static_cast<int>(index)) return;
    state.up = link->ifi_flags & IFF_UP;
    int length = static_cast<int>(IFLA_PAYLOAD(&message));
    for (const rtattr* a = IFLA_RTA(link); RTA_OK(a, length); a = RTA_NEXT(a, length)) {
      if (a->rta_type == IFLA_MTU && RTA_PAYLOAD(a) >= 4) std::memcpy(&state.mtu, RTA_DATA(a), 4);
      if (a->rta_type == IFLA_MASTER && RTA_PAYLOAD(a) >= 4) std::memcpy(&state.master, RTA_DATA(a), 4);
    }
  });
  rtnetlink_dump(RTM_GETADDR, AF_UNSPEC, [&](const nlmsghdr& message) {
    if (message.nlmsg_type != RTM_NEWADDR) return;
    const auto* address = static_cast<const ifaddrmsg*>(NLMSG_DATA(&message));
    // IPv6's link-local and temporary addresses come back by themselves.
    if (address->ifa_index != index || address->ifa_scope == RT_SCOPE_LINK || (address->ifa_flags & IFA_F_TEMPORARY))
      return;
    if (state.addresses.size() < kMaxSavedMessages) state.addresses.push_back(payload_of(message));
  });
  rtnetlink_dump(RTM_GETROUTE, AF_UNSPEC, [&](const nlmsghdr& message) {
    if (message.nlmsg_type != RTM_NEWROUTE) return;
    const auto* route = static_cast<const rtmsg*>(NLMSG_DATA(&message));
    // The kernel's own routes (of the addresses, of router advertisements) come back with them.
    if (route->rtm_protocol == RTPROT_KERNEL || route->rtm_protocol == RTPROT_RA || route->rtm_table == RT_TABLE_LOCAL)
      return;
    bool via_interface = false;
    int length = static_cast<int>(RTM_PAYLOAD(&message));
    for (const rtattr* a = RTM_RTA(route); RTA_OK(a, length); a = RTA_NEXT(a, length)) {
      uint32_t oif = 0;
      if (a->rta_type == RTA_OIF && RTA_PAYLOAD(a) >= 4) std::memcpy(&oif, RTA_DATA(a), 4);
      if (oif == index) via_interface = true;
    }
    if (via_interface && state.routes.size() < kMaxSavedMessages) state.routes.push_back(payload_of(message));
  });
  return state;
}

std::string state_text(const std::string& interface, const InterfaceState& state, ino_t source, ino_t shell) {
  std::string text = "interface " + interface + "\nsource " + std::to_string(source) + "\nshell " +
                     std::to_string(shell) + "\nmtu " + std::to_string(state.mtu) + "\nup " + (state.up ? "1" : "0") +
                     "\nmaster " + std::to_string(state.master) + "\n";
  for (const std::string& a : state.addresses) text += "address " + hex(a) + "\n";
  for (const std::string& r : state.routes) text += "route " + hex(r) + "\n";
  return text;
}

// The note's text (root's file; still read as untrusted: bounded, checked).
std::optional<SavedNote> parse_note(std::string_view text) {
  SavedNote note;
  while (!text.empty()) {
    const std::string_view line = next_line(text);
    const size_t space = line.find(' ');
    if (space == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, space), value = line.substr(space + 1);
    const std::optional<uint64_t> number = decimal_value(value);
    if (key == "interface" && is_interface_name(value)) {
      note.interface = std::string(value);
    } else if (key == "source" && number) {
      note.source = static_cast<ino_t>(*number);
    } else if (key == "shell" && number) {
      note.shell = static_cast<ino_t>(*number);
    } else if (key == "dnsmasq" && number && *number < 1u << 22) {
      note.dnsmasq = static_cast<pid_t>(*number);
    } else if (key == "mtu" && number && *number < 1u << 20) {
      note.state.mtu = static_cast<unsigned>(*number);
    } else if (key == "up" && number) {
      note.state.up = *number == 1;
    } else if (key == "master" && number && *number < 1u << 31) {
      note.state.master = static_cast<unsigned>(*number);
    } else if ((key == "address" || key == "route") && value.size() < 8192) {
      std::optional<std::string> bytes = unhex(value);
      auto& list = key == "address" ? note.state.addresses : note.state.routes;
      if (bytes && list.size() < kMaxSavedMessages) list.push_back(std::move(*bytes));
    }
  }
  if (note.interface.empty()) return std::nullopt;
  return note;
}

namespace {
// Sends one rtnetlink message: a saved payload, its index fields set to `index`.
void send_saved(const FileDescriptor& sock, uint16_t type, const std::string& payload, unsigned index) {
  std::vector<nlmsghdr> storage((NLMSG_HDRLEN + payload.size()) / sizeof(nlmsghdr) + 2);
  auto* header = storage.data();
  header->nlmsg_len = static_cast<uint32_t>(NLMSG_LENGTH(payload.size()));
  header->nlmsg_type = type;
  header->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE;
  header->nlmsg_seq = 1;
  char* data = static_cast<char*>(NLMSG_DATA(header));
  std::memcpy(data, payload.data(), payload.size());
  if (type == RTM_NEWADDR) {
    if (payload.size() < sizeof(ifaddrmsg)) return;
    reinterpret_cast<ifaddrmsg*>(data)->ifa_index = index;
    int length = static_cast<int>(payload.size() - NLMSG_ALIGN(sizeof(ifaddrmsg)));
    for (rtattr* a = IFA_RTA(reinterpret_cast<ifaddrmsg*>(data)); RTA_OK(a, length); a = RTA_NEXT(a, length))
      if (a->rta_type == IFA_CACHEINFO) a->rta_type = IFA_UNSPEC;  // lifetimes: permanent again
  } else {
    if (payload.size() < sizeof(rtmsg)) return;
    int length = static_cast<int>(payload.size() - NLMSG_ALIGN(sizeof(rtmsg)));
    for (rtattr* a = RTM_RTA(reinterpret_cast<rtmsg*>(data)); RTA_OK(a, length); a = RTA_NEXT(a, length)) {
      if (a->rta_type == RTA_OIF && RTA_PAYLOAD(a) >= 4) std::memcpy(RTA_DATA(a), &index, 4);
      if (a->rta_type == RTA_CACHEINFO || a->rta_type == RTA_EXPIRES) a->rta_type = RTA_UNSPEC;
    }
  }
  rtnetlink_request(sock, *header, type == RTM_NEWADDR ? "restoring an address" : "restoring a route");
}
}  // namespace

void set_link(unsigned index, std::optional<unsigned> mtu, std::optional<bool> up, const std::string& what) {
  ifinfomsg link{};
  link.ifi_family = AF_UNSPEC;
  link.ifi_index = static_cast<int>(index);
  if (up) {
    link.ifi_flags = *up ? IFF_UP : 0;
    link.ifi_change = IFF_UP;
  }
  NetlinkRequest request(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, link);
  if (mtu && *mtu) request.add_u32(IFLA_MTU, *mtu);
  request.execute(what);
}

// Puts the interface's state back (the current namespace: where it came from). What cannot be
// put back is said, and the rest still done.
void restore_state(const std::string& interface, const InterfaceState& state) {
  const unsigned index = ::if_nametoindex(interface.c_str());
  if (index == 0) {
    std::cerr << "mm-eth: " << interface << " is not back (it is gone: a virtual interface goes with the namespace)"
              << std::endl;
    return;
  }
  auto attempt = [&](const std::string& what, const auto& step) {
    try {
      step();
    } catch (const std::exception& e) {
      std::cerr << "mm-eth: " << interface << ": could not put back " << what << ": " << e.what() << std::endl;
    }
  };
  if (state.master) {
    attempt("its place in its bridge or bond", [&] {
      ifinfomsg link{};
      link.ifi_family = AF_UNSPEC;
      link.ifi_index = static_cast<int>(index);
      NetlinkRequest request(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, link);
      request.add_u32(IFLA_MASTER, state.master);
      request.execute("putting " + interface + " back into its bridge or bond");
    });
  }
  attempt("its MTU and link state", [&] { set_link(index, state.mtu, state.up, "restoring " + interface); });
  FileDescriptor sock = rtnetlink_socket();
  for (const std::string& a : state.addresses) attempt("an address", [&] { send_saved(sock, RTM_NEWADDR, a, index); });
  for (const std::string& r : state.routes) attempt("a route", [&] { send_saved(sock, RTM_NEWROUTE, r, index); });
}

void move_interface(unsigned index, const FileDescriptor& to, const std::string& what) {
  ifinfomsg link{};
  link.ifi_family = AF_UNSPEC;
  link.ifi_index = static_cast<int>(index);
  NetlinkRequest request(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, link);
  request.add_u32(IFLA_NET_NS_FD, static_cast<uint32_t>(to.get()));
  request.execute(what);
}

// The interface carries a default route of the current namespace.
bool carries_default_route(unsigned index) {
  bool carries = false;
  for_each_ipv4_route([&](const rtmsg& route, const rtattr* first, int length) {
    if (route.rtm_dst_len != 0 || route.rtm_type != RTN_UNICAST) return;
    for (const rtattr* a = first; RTA_OK(a, length); a = RTA_NEXT(a, length)) {
      uint32_t oif = 0;
      if (a->rta_type == RTA_OIF && RTA_PAYLOAD(a) >= 4) std::memcpy(&oif, RTA_DATA(a), 4);
      if (oif == index) carries = true;
    }
  });
  return carries;
}

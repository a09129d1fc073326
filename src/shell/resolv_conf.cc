// SPDX-License-Identifier: GPL-3.0-or-later
// resolv.conf's nameserver lines (see resolv_conf.hh).
#include "shell/resolv_conf.hh"

#include <ifaddrs.h>
#include <netinet/in.h>

#include <algorithm>
#include <sstream>

#include "util/exception.hh"
#include "util/file_descriptor.hh"

namespace {

// The address word of each "nameserver ADDRESS" line, in order, whatever its address family.
std::vector<std::string> nameserver_words(const std::string& text) {
  std::vector<std::string> found;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string keyword, address;
    if (!(words >> keyword >> address) || keyword != "nameserver") continue;
    found.push_back(address);
  }
  return found;
}

}  // namespace

std::string read_resolv_conf() {
  try {
    return read_small_file(kResolvConfPath);
  } catch (const SystemError&) {
    return {};  // no resolv.conf: no resolver named
  }
}

std::vector<Ipv4> resolv_conf_nameservers(const std::string& text) {
  std::vector<Ipv4> found;
  for (const std::string& word : nameserver_words(text)) {
    if (auto ip = Ipv4::parse(word)) found.push_back(*ip);
  }
  return found;
}

std::vector<Ipv4> loopback_nameservers(const std::string& text) {
  std::vector<Ipv4> found;
  const Ipv4Net loopback = *Ipv4Net::parse("127.0.0.0/8");
  for (Ipv4 ip : resolv_conf_nameservers(text)) {
    if (loopback.contains(ip) && found.size() < 3) found.push_back(ip);
  }
  return found;
}

std::vector<Ipv4> own_address_nameservers(const std::string& text) {
  std::vector<Ipv4> own, found;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return found;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET)
      own.push_back(Ipv4::from_in_addr(reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr));
  }
  ::freeifaddrs(list);
  const Ipv4Net loopback = *Ipv4Net::parse("127.0.0.0/8");
  for (Ipv4 ip : resolv_conf_nameservers(text)) {
    if (!loopback.contains(ip) && std::find(own.begin(), own.end(), ip) != own.end() && found.size() < 3)
      found.push_back(ip);
  }
  return found;
}

std::vector<Ipv4> c_library_resolvers(const std::string& text) {
  const std::vector<std::string> words = nameserver_words(text);
  if (words.empty()) return {*Ipv4::parse("127.0.0.1")};
  std::vector<Ipv4> found;
  for (size_t i = 0; i < words.size() && i < 3; i++) {
    if (auto ip = Ipv4::parse(words[i])) found.push_back(*ip);
  }
  return found;
}

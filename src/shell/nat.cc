// SPDX-License-Identifier: GPL-3.0-or-later
// A shell's nftables NAT table, and the removal of stale ones (see nat.hh).
#include "shell/nat.hh"

#include <dlfcn.h>
#include <net/if.h>
#include <nftables/libnftables.h>
#include <unistd.h>

#include <sstream>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace {
constexpr std::string_view kPrefix = "mahimahi_";

// libnftables and the five libraries it brings are loaded only by the root helpers that use it,
// at their first transaction: the supervisor and the ferry, which live as long as the shell,
// never map them (about 800 kB of an idle shell's RSS).
struct Nftables {
  decltype(&nft_ctx_new) ctx_new;
  decltype(&nft_ctx_buffer_output) buffer_output;
  decltype(&nft_ctx_buffer_error) buffer_error;
  decltype(&nft_run_cmd_from_buffer) run_cmd_from_buffer;
  decltype(&nft_ctx_get_output_buffer) get_output_buffer;
  decltype(&nft_ctx_get_error_buffer) get_error_buffer;

  static const Nftables& get() {
    static const Nftables library = load();
    return library;
  }

 private:
  static Nftables load() {
    constexpr const char* kSoname = "libnftables.so.1";
    void* handle = ::dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      throw std::runtime_error(std::string("cannot load ") + kSoname + " (" + ::dlerror() +
                               "); install the nftables library (Debian: apt-get install libnftables1)");
    }
    const auto symbol = [handle](auto& pointer, const char* name) {
      pointer = reinterpret_cast<std::remove_reference_t<decltype(pointer)>>(::dlsym(handle, name));
      if (!pointer) throw std::runtime_error(std::string(kSoname) + " has no " + name + "; it is too old");
    };
    Nftables n{};
    symbol(n.ctx_new, "nft_ctx_new");
    symbol(n.buffer_output, "nft_ctx_buffer_output");
    symbol(n.buffer_error, "nft_ctx_buffer_error");
    symbol(n.run_cmd_from_buffer, "nft_run_cmd_from_buffer");
    symbol(n.get_output_buffer, "nft_ctx_get_output_buffer");
    symbol(n.get_error_buffer, "nft_ctx_get_error_buffer");
    return n;
  }
};
}  // namespace

std::string run_nft(const std::string& script) {
  // libxtables, which libnftables loads, _exit()s when the real and effective uids differ (its
  // guard against setuid use): only root helpers, root through and through, may get here.
  if (::getuid() != 0 || ::geteuid() != 0) throw std::logic_error("nftables used outside a root helper");
  // Each context, and its netlink socket, is kept until the helper exits (never freed): closing
  // the socket of a transaction that deleted something waits for an RCU grace period (5-20 ms
  // here), and the shell's last helper reports before it exits, so no one waits for that.
  static std::vector<nft_ctx*>& open_contexts = *new std::vector<nft_ctx*>;
  const Nftables& nft = Nftables::get();
  nft_ctx* ctx = nft.ctx_new(NFT_CTX_DEFAULT);
  if (!ctx) throw std::runtime_error("nftables: cannot create a context");
  open_contexts.push_back(ctx);
  nft.buffer_output(ctx);
  nft.buffer_error(ctx);
  if (nft.run_cmd_from_buffer(ctx, script.c_str()) != 0) {
    std::string err = nft.get_error_buffer(ctx);
    while (!err.empty() && err.back() == '\n') err.pop_back();
    throw std::runtime_error("nftables refused \"" + script.substr(0, script.find('\n')) + "\": " + err +
                             " (is CONFIG_NF_TABLES with NAT and MASQUERADE in this kernel?)");
  }
  return nft.get_output_buffer(ctx);
}

std::string nat_table_name(const std::string& device) {
  std::string name(kPrefix);
  for (char c : device) name += (c == '-') ? '_' : c;
  return name;
}

std::string nat_table_script(const std::string& device, Ipv4 inner) {
  const std::string table = nat_table_name(device);
  std::ostringstream s;
  s << "add table ip " << table << "\n"
    << "add chain ip " << table << " postrouting { type nat hook postrouting priority srcnat; policy accept; }\n"
    << "add rule ip " << table << " postrouting ip saddr " << inner.str() << " oifname != \"" << device
    << "\" masquerade\n";
  return s.str();
}

std::string intercept_script(const std::string& device, Ipv4 inner, Ipv4 outer, uint16_t port, bool refuse_quic) {
  const std::string table = nat_table_name(device);
  std::ostringstream s;
  s << "add chain ip " << table << " prerouting { type nat hook prerouting priority dstnat; policy accept; }\n"
    << "add rule ip " << table << " prerouting iifname \"" << device << "\" ip saddr " << inner.str()
    << " meta l4proto tcp dnat to " << outer.str() << ":" << port << "\n";
  if (refuse_quic) {
    // Browsers fall back from QUIC to TCP at once when UDP/443 is refused (ICMP port unreachable).
    s << "add chain ip " << table << " forward { type filter hook forward priority filter; policy accept; }\n"
      << "add rule ip " << table << " forward iifname \"" << device << "\" udp dport 443 reject\n";
  }
  return s.str();
}

std::vector<std::string> remove_stale_nat_tables() {
  std::vector<std::string> removed;
  std::istringstream out(run_nft("list tables ip"));
  std::string word, family, name;
  while (out >> word >> family >> name) {  // "table ip NAME"
    if (word != "table" || name.rfind(kPrefix, 0) != 0) continue;
    // mahimahi_<kind>_<pid> was made for device <kind>-<pid>
    std::string device = name.substr(kPrefix.size());
    auto us = device.rfind('_');
    // Only shell tables (<kind>_<pid>); others, such as mahimahi_forward, are shared state.
    if (us == std::string::npos || us + 1 == device.size() ||
        device.find_first_not_of("0123456789", us + 1) != std::string::npos)
      continue;
    device[us] = '-';
    if (if_nametoindex(device.c_str()) != 0) continue;  // its shell is still alive
    try {
      run_nft("delete table ip " + name);
      removed.push_back(name);
    } catch (...) {
      // Another starting shell removed it first.
    }
  }
  return removed;
}

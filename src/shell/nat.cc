// A shell's nftables NAT table, and the removal of stale ones (see nat.hh).
#include "shell/nat.hh"

#include <net/if.h>
#include <nftables/libnftables.h>
#include <unistd.h>

#include <memory>
#include <sstream>
#include <stdexcept>

namespace {
constexpr std::string_view kPrefix = "mahimahi_";

struct NftContextDeleter {
  void operator()(nft_ctx* c) const { nft_ctx_free(c); }
};
}  // namespace

std::string run_nft(const std::string& script) {
  // libxtables, which libnftables loads, _exit()s when the real and effective uids differ (its
  // guard against setuid use): only root helpers, root through and through, may get here.
  if (::getuid() != 0 || ::geteuid() != 0) throw std::logic_error("nftables used outside a root helper");
  std::unique_ptr<nft_ctx, NftContextDeleter> ctx(nft_ctx_new(NFT_CTX_DEFAULT));
  if (!ctx) throw std::runtime_error("nftables: cannot create a context");
  nft_ctx_buffer_output(ctx.get());
  nft_ctx_buffer_error(ctx.get());
  if (nft_run_cmd_from_buffer(ctx.get(), script.c_str()) != 0) {
    std::string err = nft_ctx_get_error_buffer(ctx.get());
    while (!err.empty() && err.back() == '\n') err.pop_back();
    throw std::runtime_error("nftables refused \"" + script.substr(0, script.find('\n')) + "\": " + err +
                             " (is CONFIG_NF_TABLES with NAT and MASQUERADE in this kernel?)");
  }
  return nft_ctx_get_output_buffer(ctx.get());
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

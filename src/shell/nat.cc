// SPDX-License-Identifier: GPL-3.0-or-later
// Shells' NAT in the shared nftables table (see nat.hh), and libnftables.
#include "shell/nat.hh"

#include <dlfcn.h>
#include <nftables/libnftables.h>
#include <unistd.h>

#include <sstream>
#include <stdexcept>
#include <type_traits>

namespace {
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

void load_nftables() { Nftables::get(); }

std::string run_nft(const std::string& script) {
  // libxtables, which libnftables loads, _exit()s when the real and effective uids differ (its
  // guard against setuid use): only root helpers, root through and through, may get here.
  if (::getuid() != 0 || ::geteuid() != 0) throw std::logic_error("nftables used outside a root helper");
  // One context, and its netlink socket, for the helper's life (never freed): closing a socket
  // after a transaction that deleted something waits for an RCU grace period (5-20 ms here)
  // holding the namespace's nftables mutex, and the shell's helpers report before they exit.
  const Nftables& nft = Nftables::get();
  static nft_ctx* const ctx = [&nft] {
    nft_ctx* c = nft.ctx_new(NFT_CTX_DEFAULT);
    if (c) {
      nft.buffer_output(c);
      nft.buffer_error(c);
    }
    return c;
  }();
  if (!ctx) throw std::runtime_error("nftables: cannot create a context");
  const int status = nft.run_cmd_from_buffer(ctx, script.c_str());
  std::string out = nft.get_output_buffer(ctx);  // (reading empties the buffers for the next run)
  std::string err = nft.get_error_buffer(ctx);
  if (status != 0) {
    while (!err.empty() && err.back() == '\n') err.pop_back();
    throw std::runtime_error("nftables refused \"" + script.substr(0, script.find('\n')) + "\": " + err +
                             " (is CONFIG_NF_TABLES with NAT and MASQUERADE in this kernel?)");
  }
  return out;
}

std::string nat_definitions(const std::string& table) {
  const std::string t = " ip " + table;
  std::ostringstream s;
  // inners: every shell's inner address; own_paths: inner . its own device, where it is not
  // masqueraded; intercepts: device . inner -> the listening socket of mm-record's shells;
  // quic_refused: the devices of shells refusing QUIC.
  s << "add set" << t << " inners { type ipv4_addr; }\n"
    << "add set" << t << " own_paths { type ipv4_addr . ifname; }\n"
    << "add map" << t << " intercepts { type ifname . ipv4_addr : ipv4_addr . inet_service; }\n"
    << "add set" << t << " quic_refused { type ifname; }\n"
    << "add chain" << t << " postrouting { type nat hook postrouting priority srcnat; policy accept; }\n"
    << "add rule" << t << " postrouting ip saddr . oifname @own_paths return\n"
    << "add rule" << t << " postrouting ip saddr @inners masquerade\n"
    << "add chain" << t << " prerouting { type nat hook prerouting priority dstnat; policy accept; }\n"
    << "add rule" << t
    << " prerouting meta l4proto tcp dnat ip to iifname . ip saddr map @intercepts\n"
    // Browsers fall back from QUIC to TCP at once when UDP/443 is refused (ICMP port unreachable).
    << "add chain" << t << " quic { type filter hook forward priority filter; policy accept; }\n"
    << "add rule" << t << " quic iifname @quic_refused udp dport 443 reject\n";
  return s.str();
}

std::string nat_elements(const std::string& verb, const std::string& table, const ShellEntry& entry) {
  const std::string e = verb + " element ip " + table;
  const std::string device = "\"" + entry.device + "\"", inner = entry.inner.str();
  std::ostringstream s;
  s << e << " inners { " << inner << " }\n" << e << " own_paths { " << inner << " . " << device << " }\n";
  if (entry.intercept) {
    s << e << " intercepts { " << device << " . " << inner;
    if (verb != "delete") s << " : " << entry.intercept->outer.str() << " . " << entry.intercept->port;
    s << " }\n";
    if (entry.intercept->refuse_quic) s << e << " quic_refused { " << device << " }\n";
  }
  return s.str();
}

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// nftables, spoken directly over netlink (libnftnl builds the messages, libmnl carries them):
// the few objects the shells' shared table needs (shell/forwarding.hh), each built as the
// kernel takes it, with no rule language, parser or cache in between. Only root helpers
// (privileged.hh) use it.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "util/address.hh"

struct mnl_nlmsg_batch;
struct nlmsghdr;
struct nftnl_expr;

namespace nft {

// nft's numbers for the types of set keys and values (a concatenation: 6 bits each), by which
// nft shows a set's elements.
constexpr uint32_t kIpv4Type = 7, kServiceType = 13, kIfindexType = 20, kUidType = 24, kIfnameType = 41;
constexpr uint32_t concatenation(uint32_t a, uint32_t b) { return a << 6 | b; }

// A set's key or a map's value: up to 24 bytes, as the kernel compares them.
struct Bytes {
  uint8_t data[24] = {};
  uint32_t size = 0;

  Bytes& ifname(const std::string& name);  // 16 bytes, zero-padded
  Bytes& ipv4(Ipv4 address);               // 4 bytes, network order
  Bytes& port(uint16_t port);              // 2 bytes, network order, padded to 4
  Bytes& number(uint32_t value);           // 4 bytes, host order (an ifindex, a uid)
  bool operator==(const Bytes& other) const;
};
std::string ifname_of(const Bytes& bytes);  // the name at its start

// The kernel's registers, as nft numbers them (a 16-byte register, or a 4-byte one).
enum Register : uint32_t { kVerdict = 0, kReg1 = 1, kReg2 = 2, kReg32_01 = 9 };
// An element's key already in its set: the addition fails (EEXIST), or it is left as it is.
enum class IfPresent { Fail, Keep };

// One rule's expressions, in order.
class Rule {
 public:
  Rule();
  ~Rule();
  Rule(const Rule&) = delete;  // (it owns its expressions)
  Rule& operator=(const Rule&) = delete;
  Rule& meta(uint32_t key, Register into);                                        // NFT_META_*
  Rule& payload(uint32_t base, uint32_t offset, uint32_t length, Register into);  // NFT_PAYLOAD_*
  Rule& equals(Register reg, const void* data, uint32_t length, bool negated = false);
  Rule& ct(uint32_t key, Register into);  // NFT_CT_*
  Rule& bitwise_and(Register reg, uint32_t mask);
  Rule& lookup(Register key, const std::string& set, bool negated = false);
  Rule& map(Register key, const std::string& set, Register into);
  Rule& verdict(int verdict);  // NF_ACCEPT, NF_DROP, NFT_RETURN
  Rule& masquerade();
  Rule& dnat(Register address, Register port);  // port kVerdict: the port is kept
  Rule& snat(Register address);                 // the port is kept
  Rule& immediate(Register into, const void* data, uint32_t length);
  Rule& reject_port_unreachable();
  std::vector<nftnl_expr*> take();

 private:
  Rule& add(nftnl_expr* expression);
  std::vector<nftnl_expr*> expressions_;
};

// One transaction on one table of family ip: all of it, or none of it.
class Transaction {
 public:
  explicit Transaction(std::string table);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  void create_table();  // fails (EEXIST) if the table is there
  void delete_table();
  // A set (a map if data_type): types as nft numbers them (concatenations: 6 bits a type).
  void add_set(const std::string& name, uint32_t key_type, uint32_t key_length, uint32_t data_type = 0,
               uint32_t data_length = 0);
  void add_base_chain(const std::string& name, const char* type, uint32_t hook, int32_t priority);
  void add_rule(const std::string& chain, Rule& rule);  // takes rule's expressions
  void add_element(const std::string& set, const Bytes& key, const Bytes* data = nullptr,
                   IfPresent if_present = IfPresent::Fail);
  void delete_element(const std::string& set, const Bytes& key);

  // Sends it and waits for the kernel's answer to every part: 0 if committed, else the errno
  // of the first part refused (nothing is then changed).
  int commit();
  // Each part as a transaction of its own, whatever becomes of the others (a clean-up of what
  // may be partly gone).
  void commit_each();

 private:
  void add_message(uint16_t type, uint16_t flags, const std::function<void(nlmsghdr*)>& payload);
  std::string table_;
  std::vector<char> buffer_;
  std::unique_ptr<mnl_nlmsg_batch, void (*)(mnl_nlmsg_batch*)> batch_;
  std::vector<std::pair<size_t, size_t>> parts_;  // each part's offset and length in buffer_
  uint32_t next_set_id_ = 1;
  std::vector<std::pair<std::string, uint32_t>> new_sets_;
};

// Whether table (family ip) exists. Asked before a transaction that would fail without it: a
// refused batch costs an RCU grace period (the kernel's abort waits one: ~10-14 ms here).
// Throws SystemError if nftables cannot be asked.
bool table_exists(const std::string& table);

// The elements of a set or map of table (family ip): key and value. Throws SystemError (with
// the errno: ENOENT if there is no such table or set).
std::vector<std::pair<Bytes, Bytes>> elements(const std::string& table, const std::string& set);

// The descriptor of this process's socket to nftables (opened at its first request, kept for the
// process's life), or -1 if it has made none.
int socket_fd();

}  // namespace nft

// SPDX-License-Identifier: GPL-3.0-or-later
// nftables over netlink (see nftables.hh).
#include "shell/nftables.hh"

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <ctime>
#include <memory>
#include <stdexcept>

#include "util/exception.hh"

namespace nft {

namespace {

constexpr uint32_t kFamily = NFPROTO_IPV4;

// The helper's socket, for its whole life (never closed): closing a netlink socket of
// nftables while a deletion (of any namespace) awaits its RCU grace period waits for it (5-20 ms
// here) holding the namespace's nftables mutex; the helpers report before they exit.
mnl_socket* opened = nullptr;  // netlink()'s, once it has been asked for

mnl_socket* netlink() {
  // Only root helpers talk to nftables: forwarding.cc and nat.cc, reached only from the root
  // helper's one switch (privileged.cc, perform_root_request), which checks who it runs as.
  static mnl_socket* const socket = [] {
    mnl_socket* s = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
    if (!s) throw SystemError("opening a netlink socket to nftables");
    if (mnl_socket_bind(s, 0, MNL_SOCKET_AUTOPID) < 0) throw SystemError("binding the netlink socket to nftables");
    // An answer lost or never sent must not hold the namespace's lock for good.
    const timeval timeout{10, 0};
    ::setsockopt(mnl_socket_get_fd(s), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    return opened = s;
  }();
  return socket;
}

uint32_t next_sequence(uint32_t count) {
  static uint32_t sequence = static_cast<uint32_t>(::time(nullptr));
  const uint32_t first = sequence;
  sequence += count;
  return first;
}

// A received answer: up to 64 kB (a dump's messages are at most a page or two each).
std::vector<char>& receive_buffer() {
  static std::vector<char> buffer(65536);
  return buffer;
}

template <typename T, void (*Free)(const T*)>
struct Freer {
  void operator()(T* p) const { Free(p); }
};
template <typename T, void (*Free)(const T*)>
using Owned = std::unique_ptr<T, Freer<T, Free>>;
using Table = Owned<nftnl_table, nftnl_table_free>;
using Chain = Owned<nftnl_chain, nftnl_chain_free>;
using Set = Owned<nftnl_set, nftnl_set_free>;
using RuleObject = Owned<nftnl_rule, nftnl_rule_free>;

template <typename T>
T allocated(typename T::pointer p) {
  if (!p) throw std::bad_alloc();
  return T(p);
}

nftnl_expr* expression(const char* name) {
  nftnl_expr* e = nftnl_expr_alloc(name);
  if (!e) throw std::bad_alloc();
  return e;
}

}  // namespace

Bytes& Bytes::ifname(const std::string& name) {
  if (size + IFNAMSIZ > sizeof data || name.size() >= IFNAMSIZ) throw std::logic_error("nftables key too long");
  std::memcpy(data + size, name.data(), name.size());
  size += IFNAMSIZ;
  return *this;
}

Bytes& Bytes::ipv4(Ipv4 address) {
  if (size + 4 > sizeof data) throw std::logic_error("nftables key too long");
  const uint32_t network = htonl(address.value);
  std::memcpy(data + size, &network, 4);
  size += 4;
  return *this;
}

Bytes& Bytes::port(uint16_t port) {
  if (size + 4 > sizeof data) throw std::logic_error("nftables key too long");
  const uint16_t network = htons(port);
  std::memcpy(data + size, &network, 2);
  size += 4;
  return *this;
}

Bytes& Bytes::number(uint32_t value) {
  if (size + 4 > sizeof data) throw std::logic_error("nftables key too long");
  std::memcpy(data + size, &value, 4);
  size += 4;
  return *this;
}

bool Bytes::operator==(const Bytes& other) const {
  return size == other.size && std::memcmp(data, other.data, size) == 0;
}

std::string ifname_of(const Bytes& bytes) {
  const char* start = reinterpret_cast<const char*>(bytes.data);
  return std::string(start, ::strnlen(start, std::min<size_t>(IFNAMSIZ, bytes.size)));
}

Rule::Rule() = default;
Rule::~Rule() {
  for (nftnl_expr* e : expressions_) nftnl_expr_free(e);
}

Rule& Rule::add(nftnl_expr* e) {
  expressions_.push_back(e);
  return *this;
}

std::vector<nftnl_expr*> Rule::take() {
  std::vector<nftnl_expr*> taken;
  taken.swap(expressions_);
  return taken;
}

Rule& Rule::meta(uint32_t key, Register into) {
  nftnl_expr* e = expression("meta");
  nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, key);
  nftnl_expr_set_u32(e, NFTNL_EXPR_META_DREG, into);
  return add(e);
}

Rule& Rule::payload(uint32_t base, uint32_t offset, uint32_t length, Register into) {
  nftnl_expr* e = expression("payload");
  nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_BASE, base);
  nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET, offset);
  nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_LEN, length);
  nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_DREG, into);
  return add(e);
}

Rule& Rule::equals(Register reg, const void* data, uint32_t length, bool negated) {
  nftnl_expr* e = expression("cmp");
  nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_SREG, reg);
  nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_OP, negated ? NFT_CMP_NEQ : NFT_CMP_EQ);
  nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, data, length);
  return add(e);
}

Rule& Rule::ct(uint32_t key, Register into) {
  nftnl_expr* e = expression("ct");
  nftnl_expr_set_u32(e, NFTNL_EXPR_CT_KEY, key);
  nftnl_expr_set_u32(e, NFTNL_EXPR_CT_DREG, into);
  return add(e);
}

Rule& Rule::bitwise_and(Register reg, uint32_t mask) {
  nftnl_expr* e = expression("bitwise");
  const uint32_t zero = 0;
  nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_SREG, reg);
  nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_DREG, reg);
  nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_LEN, sizeof mask);
  nftnl_expr_set(e, NFTNL_EXPR_BITWISE_MASK, &mask, sizeof mask);
  nftnl_expr_set(e, NFTNL_EXPR_BITWISE_XOR, &zero, sizeof zero);
  return add(e);
}

Rule& Rule::lookup(Register key, const std::string& set, bool negated) {
  nftnl_expr* e = expression("lookup");
  nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_SREG, key);
  nftnl_expr_set_str(e, NFTNL_EXPR_LOOKUP_SET, set.c_str());
  if (negated) nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_FLAGS, NFT_LOOKUP_F_INV);
  return add(e);
}

Rule& Rule::map(Register key, const std::string& set, Register into) {
  lookup(key, set);
  nftnl_expr_set_u32(expressions_.back(), NFTNL_EXPR_LOOKUP_DREG, into);
  return *this;
}

Rule& Rule::verdict(int verdict) {
  nftnl_expr* e = expression("immediate");
  nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
  nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, static_cast<uint32_t>(verdict));
  return add(e);
}

Rule& Rule::masquerade() { return add(expression("masq")); }

Rule& Rule::dnat(Register address, Register port) {
  nftnl_expr* e = expression("nat");
  nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_TYPE, NFT_NAT_DNAT);
  nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_FAMILY, kFamily);
  nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_REG_ADDR_MIN, address);
  if (port != kVerdict) nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_REG_PROTO_MIN, port);
  return add(e);
}

Rule& Rule::snat(Register address) {
  nftnl_expr* e = expression("nat");
  nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_TYPE, NFT_NAT_SNAT);
  nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_FAMILY, kFamily);
  nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_REG_ADDR_MIN, address);
  return add(e);
}

Rule& Rule::immediate(Register into, const void* data, uint32_t length) {
  nftnl_expr* e = expression("immediate");
  nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, into);
  nftnl_expr_set(e, NFTNL_EXPR_IMM_DATA, data, length);
  return add(e);
}

Rule& Rule::reject_port_unreachable() {
  nftnl_expr* e = expression("reject");
  nftnl_expr_set_u32(e, NFTNL_EXPR_REJECT_TYPE, NFT_REJECT_ICMP_UNREACH);
  nftnl_expr_set_u8(e, NFTNL_EXPR_REJECT_CODE, 3);  // ICMP_PORT_UNREACH
  return add(e);
}

Transaction::Transaction(std::string table)
    : table_(std::move(table)), buffer_(1 << 16), batch_(nullptr, mnl_nlmsg_batch_stop) {
  batch_.reset(mnl_nlmsg_batch_start(buffer_.data(), buffer_.size()));
  if (!batch_) throw std::bad_alloc();
  // (Sequence numbers are given at commit; each message's is rewritten then.)
  nftnl_batch_begin(static_cast<char*>(mnl_nlmsg_batch_current(batch_.get())), 0);
  mnl_nlmsg_batch_next(batch_.get());
}

Transaction::~Transaction() = default;

void Transaction::add_message(uint16_t type, uint16_t flags, const std::function<void(nlmsghdr*)>& payload) {
  // A message is at most a few hundred bytes; the buffer holds far more than a shell ever sends.
  if (buffer_.size() - mnl_nlmsg_batch_size(batch_.get()) < 8192)
    throw std::logic_error("nftables transaction too large");
  char* at = static_cast<char*>(mnl_nlmsg_batch_current(batch_.get()));
  nlmsghdr* nlh = nftnl_nlmsg_build_hdr(at, type, kFamily, flags | NLM_F_ACK, 0);
  payload(nlh);
  parts_.emplace_back(static_cast<size_t>(at - buffer_.data()), nlh->nlmsg_len);
  mnl_nlmsg_batch_next(batch_.get());
}

void Transaction::create_table() {
  Table t = allocated<Table>(nftnl_table_alloc());
  nftnl_table_set_str(t.get(), NFTNL_TABLE_NAME, table_.c_str());
  nftnl_table_set_u32(t.get(), NFTNL_TABLE_FAMILY, kFamily);
  add_message(NFT_MSG_NEWTABLE, NLM_F_CREATE | NLM_F_EXCL,
              [&](nlmsghdr* nlh) { nftnl_table_nlmsg_build_payload(nlh, t.get()); });
}

void Transaction::delete_table() {
  Table t = allocated<Table>(nftnl_table_alloc());
  nftnl_table_set_str(t.get(), NFTNL_TABLE_NAME, table_.c_str());
  nftnl_table_set_u32(t.get(), NFTNL_TABLE_FAMILY, kFamily);
  add_message(NFT_MSG_DELTABLE, 0, [&](nlmsghdr* nlh) { nftnl_table_nlmsg_build_payload(nlh, t.get()); });
}

void Transaction::add_set(const std::string& name, uint32_t key_type, uint32_t key_length, uint32_t data_type,
                          uint32_t data_length) {
  Set s = allocated<Set>(nftnl_set_alloc());
  const uint32_t id = next_set_id_++;
  nftnl_set_set_str(s.get(), NFTNL_SET_TABLE, table_.c_str());
  nftnl_set_set_str(s.get(), NFTNL_SET_NAME, name.c_str());
  nftnl_set_set_u32(s.get(), NFTNL_SET_FAMILY, kFamily);
  nftnl_set_set_u32(s.get(), NFTNL_SET_KEY_TYPE, key_type);
  nftnl_set_set_u32(s.get(), NFTNL_SET_KEY_LEN, key_length);
  nftnl_set_set_u32(s.get(), NFTNL_SET_ID, id);
  // nft's user data, which it reads to show the elements: the byte order of key and value
  // (type 0 and 1, 4 bytes each: host-endian strings 1, big-endian numbers 2, concatenations 0).
  std::vector<uint8_t> user_data;
  const auto put = [&user_data](uint8_t type, uint32_t value) {
    user_data.push_back(type);
    user_data.push_back(sizeof value);
    const auto* bytes = reinterpret_cast<const uint8_t*>(&value);
    user_data.insert(user_data.end(), bytes, bytes + sizeof value);
  };
  const auto byte_order = [](uint32_t type) -> uint32_t {
    if (type == kIfnameType || type == kIfindexType || type == kUidType) return 1;
    return type < 64 ? 2 : 0;
  };
  put(0, byte_order(key_type));
  if (data_type != 0) {
    nftnl_set_set_u32(s.get(), NFTNL_SET_FLAGS, NFT_SET_MAP);
    nftnl_set_set_u32(s.get(), NFTNL_SET_DATA_TYPE, data_type);
    nftnl_set_set_u32(s.get(), NFTNL_SET_DATA_LEN, data_length);
    put(1, byte_order(data_type));
  }
  nftnl_set_set_data(s.get(), NFTNL_SET_USERDATA, user_data.data(), static_cast<uint32_t>(user_data.size()));
  add_message(NFT_MSG_NEWSET, NLM_F_CREATE, [&](nlmsghdr* nlh) { nftnl_set_nlmsg_build_payload(nlh, s.get()); });
  new_sets_.emplace_back(name, id);
}

void Transaction::add_base_chain(const std::string& name, const char* type, uint32_t hook, int32_t priority) {
  Chain c = allocated<Chain>(nftnl_chain_alloc());
  nftnl_chain_set_str(c.get(), NFTNL_CHAIN_TABLE, table_.c_str());
  nftnl_chain_set_str(c.get(), NFTNL_CHAIN_NAME, name.c_str());
  nftnl_chain_set_u32(c.get(), NFTNL_CHAIN_FAMILY, kFamily);
  nftnl_chain_set_str(c.get(), NFTNL_CHAIN_TYPE, type);
  nftnl_chain_set_u32(c.get(), NFTNL_CHAIN_HOOKNUM, hook);
  nftnl_chain_set_s32(c.get(), NFTNL_CHAIN_PRIO, priority);
  nftnl_chain_set_u32(c.get(), NFTNL_CHAIN_POLICY, NF_ACCEPT);
  add_message(NFT_MSG_NEWCHAIN, NLM_F_CREATE, [&](nlmsghdr* nlh) { nftnl_chain_nlmsg_build_payload(nlh, c.get()); });
}

void Transaction::add_rule(const std::string& chain, Rule& rule) {
  RuleObject r = allocated<RuleObject>(nftnl_rule_alloc());
  nftnl_rule_set_str(r.get(), NFTNL_RULE_TABLE, table_.c_str());
  nftnl_rule_set_str(r.get(), NFTNL_RULE_CHAIN, chain.c_str());
  nftnl_rule_set_u32(r.get(), NFTNL_RULE_FAMILY, kFamily);
  for (nftnl_expr* e : rule.take()) {
    // A set made in this transaction is found by its id too.
    if (std::strcmp(nftnl_expr_get_str(e, NFTNL_EXPR_NAME), "lookup") == 0) {
      const std::string set = nftnl_expr_get_str(e, NFTNL_EXPR_LOOKUP_SET);
      for (const auto& [name, id] : new_sets_) {
        if (name == set) nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_SET_ID, id);
      }
    }
    nftnl_rule_add_expr(r.get(), e);  // (the rule owns it now)
  }
  add_message(NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND,
              [&](nlmsghdr* nlh) { nftnl_rule_nlmsg_build_payload(nlh, r.get()); });
}

namespace {
Set element_set(const std::string& table, const std::string& set, const Bytes& key, const Bytes* data) {
  Set s = allocated<Set>(nftnl_set_alloc());
  nftnl_set_set_str(s.get(), NFTNL_SET_TABLE, table.c_str());
  nftnl_set_set_str(s.get(), NFTNL_SET_NAME, set.c_str());
  nftnl_set_set_u32(s.get(), NFTNL_SET_FAMILY, kFamily);
  nftnl_set_elem* e = nftnl_set_elem_alloc();
  if (!e) throw std::bad_alloc();
  nftnl_set_elem_set(e, NFTNL_SET_ELEM_KEY, key.data, key.size);
  if (data) nftnl_set_elem_set(e, NFTNL_SET_ELEM_DATA, data->data, data->size);
  nftnl_set_elem_add(s.get(), e);
  return s;
}
}  // namespace

void Transaction::add_element(const std::string& set, const Bytes& key, const Bytes* data, IfPresent if_present) {
  Set s = element_set(table_, set, key, data);
  for (const auto& [name, id] : new_sets_) {
    if (name == set) nftnl_set_set_u32(s.get(), NFTNL_SET_ID, id);
  }
  const uint16_t flags = if_present == IfPresent::Fail ? NLM_F_CREATE | NLM_F_EXCL : NLM_F_CREATE;
  add_message(NFT_MSG_NEWSETELEM, flags, [&](nlmsghdr* nlh) { nftnl_set_elems_nlmsg_build_payload(nlh, s.get()); });
}

void Transaction::delete_element(const std::string& set, const Bytes& key) {
  Set s = element_set(table_, set, key, nullptr);
  add_message(NFT_MSG_DELSETELEM, 0, [&](nlmsghdr* nlh) { nftnl_set_elems_nlmsg_build_payload(nlh, s.get()); });
}

namespace {
// Sends a batch of `parts` messages between a begin and an end message, and waits for the
// kernel's answer to every part: 0 if committed, else the errno of the first part refused.
int send_batch(char* head, size_t size, size_t parts) {
  mnl_socket* nl = netlink();
  // Numbers every message: the begin, each part, the end.
  const uint32_t first = next_sequence(static_cast<uint32_t>(parts + 2));
  uint32_t sequence = first;
  int left = static_cast<int>(size);
  for (auto* nlh = reinterpret_cast<nlmsghdr*>(head); mnl_nlmsg_ok(nlh, left); nlh = mnl_nlmsg_next(nlh, &left)) {
    nlh->nlmsg_seq = sequence++;
  }
  if (mnl_socket_sendto(nl, head, size) < 0) throw SystemError("sending an nftables transaction");
  // Every part asked for an answer, and gets exactly one (0, or its errno) once the whole batch
  // has been processed; a batch refused as a whole gets one answer, to its begin message.
  const uint32_t portid = mnl_socket_get_portid(nl);
  const uint32_t last = first + static_cast<uint32_t>(parts) + 1;
  size_t answered = 0;
  int first_error = 0;
  std::vector<char>& buffer = receive_buffer();
  while (answered < parts) {
    const ssize_t n = mnl_socket_recvfrom(nl, buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw SystemError("waiting for nftables' answer");
    }
    left = static_cast<int>(n);
    for (auto* nlh = reinterpret_cast<const nlmsghdr*>(buffer.data()); mnl_nlmsg_ok(nlh, left);
         nlh = mnl_nlmsg_next(nlh, &left)) {
      if (nlh->nlmsg_pid != portid || nlh->nlmsg_type != NLMSG_ERROR) continue;
      if (nlh->nlmsg_seq < first || nlh->nlmsg_seq > last) continue;  // an older batch's
      const auto* err = static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(nlh));
      if (err->error != 0 && first_error == 0) first_error = -err->error;
      if (nlh->nlmsg_seq == first || nlh->nlmsg_seq == last) return first_error ? first_error : EIO;
      answered++;
    }
  }
  return first_error;
}

// A batch of one part.
int send_one(const char* part, size_t length) {
  std::vector<char> buffer(length + 8192);
  mnl_nlmsg_batch* batch = mnl_nlmsg_batch_start(buffer.data(), buffer.size());
  if (!batch) throw std::bad_alloc();
  nftnl_batch_begin(static_cast<char*>(mnl_nlmsg_batch_current(batch)), 0);
  mnl_nlmsg_batch_next(batch);
  std::memcpy(mnl_nlmsg_batch_current(batch), part, length);
  mnl_nlmsg_batch_next(batch);
  nftnl_batch_end(static_cast<char*>(mnl_nlmsg_batch_current(batch)), 0);
  mnl_nlmsg_batch_next(batch);
  const int error = send_batch(static_cast<char*>(mnl_nlmsg_batch_head(batch)), mnl_nlmsg_batch_size(batch), 1);
  mnl_nlmsg_batch_stop(batch);
  return error;
}
}  // namespace

int Transaction::commit() {
  if (parts_.empty()) return 0;
  nftnl_batch_end(static_cast<char*>(mnl_nlmsg_batch_current(batch_.get())), 0);
  mnl_nlmsg_batch_next(batch_.get());
  return send_batch(static_cast<char*>(mnl_nlmsg_batch_head(batch_.get())), mnl_nlmsg_batch_size(batch_.get()),
                    parts_.size());
}

void Transaction::commit_each() {
  for (const auto& [offset, length] : parts_) send_one(buffer_.data() + offset, length);
}

namespace {
// Sends a request and reads its answer to the end, each message through `parse` (may be null).
// Returns 0, or the errno of the answer's error (the caller decides which are errors); throws
// SystemError, naming `what`, if the socket fails.
int ask(const nlmsghdr* request, mnl_cb_t parse, void* data, const std::string& what) {
  mnl_socket* nl = netlink();
  if (mnl_socket_sendto(nl, request, request->nlmsg_len) < 0) throw SystemError(what);
  std::vector<char>& buffer = receive_buffer();
  const uint32_t portid = mnl_socket_get_portid(nl);
  for (;;) {
    const ssize_t n = mnl_socket_recvfrom(nl, buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw SystemError(what);
    }
    const int status = mnl_cb_run(buffer.data(), static_cast<size_t>(n), request->nlmsg_seq, portid, parse, data);
    if (status < 0) return errno != 0 ? errno : EIO;
    if (status == MNL_CB_STOP) return 0;
  }
}
}  // namespace

bool table_exists(const std::string& table) {
  Table t = allocated<Table>(nftnl_table_alloc());
  nftnl_table_set_str(t.get(), NFTNL_TABLE_NAME, table.c_str());
  nftnl_table_set_u32(t.get(), NFTNL_TABLE_FAMILY, kFamily);
  char request[512];
  nlmsghdr* nlh = nftnl_nlmsg_build_hdr(request, NFT_MSG_GETTABLE, kFamily, NLM_F_ACK, next_sequence(1));
  nftnl_table_nlmsg_build_payload(nlh, t.get());
  // The table's description, then the acknowledgement; or only an error.
  const int error = ask(nlh, nullptr, nullptr, "asking nftables for table " + table);
  if (error == ENOENT) return false;
  if (error != 0) throw SystemError("asking nftables for table " + table, error);
  return true;
}

std::vector<std::pair<Bytes, Bytes>> elements(const std::string& table, const std::string& set) {
  Set s = allocated<Set>(nftnl_set_alloc());
  nftnl_set_set_str(s.get(), NFTNL_SET_TABLE, table.c_str());
  nftnl_set_set_str(s.get(), NFTNL_SET_NAME, set.c_str());
  nftnl_set_set_u32(s.get(), NFTNL_SET_FAMILY, kFamily);
  char request[8192];
  nlmsghdr* nlh = nftnl_nlmsg_build_hdr(request, NFT_MSG_GETSETELEM, kFamily, NLM_F_DUMP, next_sequence(1));
  nftnl_set_elems_nlmsg_build_payload(nlh, s.get());
  const auto parse = [](const nlmsghdr* reply, void* data) {
    return nftnl_set_elems_nlmsg_parse(reply, static_cast<nftnl_set*>(data)) < 0 ? MNL_CB_ERROR : MNL_CB_OK;
  };
  if (const int error = ask(nlh, parse, s.get(), "asking nftables for " + set); error != 0)
    throw SystemError("reading nftables' " + set, error);
  std::vector<std::pair<Bytes, Bytes>> found;
  nftnl_set_elems_iter* it = nftnl_set_elems_iter_create(s.get());
  if (!it) throw std::bad_alloc();
  for (nftnl_set_elem* e = nftnl_set_elems_iter_cur(it); e; e = nftnl_set_elems_iter_next(it)) {
    Bytes key, value;
    uint32_t length = 0;
    if (const void* k = nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY, &length); k && length <= sizeof key.data) {
      std::memcpy(key.data, k, length);
      key.size = length;
    }
    if (nftnl_set_elem_is_set(e, NFTNL_SET_ELEM_DATA)) {
      if (const void* d = nftnl_set_elem_get(e, NFTNL_SET_ELEM_DATA, &length); d && length <= sizeof value.data) {
        std::memcpy(value.data, d, length);
        value.size = length;
      }
    }
    found.emplace_back(key, value);
  }
  nftnl_set_elems_iter_destroy(it);
  return found;
}

int socket_fd() { return opened ? mnl_socket_get_fd(opened) : -1; }

}  // namespace nft

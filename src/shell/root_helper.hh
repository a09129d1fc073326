// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The root helpers (root_helper.cc): every act of root's for a shell that other shells wait
// for, as one closed set of requests; and the grant of forwarding a shell holds until its end.
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "shell/nat.hh"
#include "util/address.hh"
#include "util/exception.hh"

// The user interrupted (SIGINT, SIGTERM, SIGHUP, SIGQUIT) a shell that was still setting up.
class SetupInterrupted : public UserError {
  using UserError::UserError;
};

// Forwarding opened for one shell's device, with its NAT (see forwarding.hh); closing it is the
// last step of the shell's clean-up, run in a root helper.
class ForwardingGrant {
 public:
  ForwardingGrant() = default;
  // slot_claim: the shell's claim on its addresses, open for as long as this grant; entry: what
  // open_forwarding added for the shell.
  // outermost: no other shell's reaper watches this one, so the clean-up's helper may outlive it
  // (it settles its deletion's grace period after the shell has returned: root_helper.cc).
  ForwardingGrant(ShellEntry entry, int slot_claim, bool outermost)
      : entry_(std::move(entry)), slot_claim_(slot_claim), outermost_(outermost) {}
  ForwardingGrant(ForwardingGrant&& other) noexcept
      : entry_(std::move(other.entry_)), slot_claim_(other.slot_claim_), outermost_(other.outermost_) {
    other.entry_.reset();
  }
  ForwardingGrant& operator=(ForwardingGrant&& other) noexcept;
  ~ForwardingGrant() { release(); }

 private:
  void release() noexcept;
  std::optional<ShellEntry> entry_;
  int slot_claim_ = -1;
  bool outermost_ = false;
};

// Everything a root helper does for a shell, one closed set (docs/security.md, "Root helpers"),
// in the manner of bubblewrap's privileged_op(): the supervisor names the operation and hands its
// bounded arguments; the helper re-checks them (check_root_request) and performs it in one
// switch (perform_root_request, privileged.cc), so that a reviewer sees every root act there.
enum class RootOp {
  OpenForwarding,             // the shell's NAT elements and forwarding (forwarding.hh), and a
                              // rootless outside's redirection of MAHIMAHI_BASE (nat.hh)
  CloseForwarding,            // the shell ended: its elements and forwarding removed
  CloseForwardingUnlessBusy,  // a set-up interrupted: the same, unless another shell holds the lock
  AddIsolatedAddresses,       // rootless: mm-replay's server addresses on lo in the shell's namespace
};
struct RootRequest {
  RootOp op = RootOp::OpenForwarding;
  ShellEntry entry;     // the forwarding operations'
  int slot_claim = -1;  // the forwarding operations': the namespace's slot claim (forwarding.hh)
  // OpenForwarding of a rootless outside (ShellNetworkOptions::base_to_host): the outer device
  // and address, the DNS relay's port, the host's own resolvers and where their DNS goes.
  struct OutsideRedirect {
    std::string device;
    Ipv4 outer;
    uint16_t relay_port = 0;
    std::vector<Ipv4> host_resolvers;
    Ipv4 dns_forward;
  };
  std::optional<OutsideRedirect> outside;
  // AddIsolatedAddresses: the rootless shell's namespaces (its user namespace, its network
  // namespace: descriptors, not owned) and the addresses.
  int user_namespace = -1, network_namespace = -1;
  std::vector<Ipv4> addresses;
  // CloseForwarding run with HelperWait::UntilReportedOnly: after reporting, the helper waits out
  // an RCU grace period before it exits (see settle_deletions in root_helper.cc).
  bool settle = false;

  // One of the three forwarding operations.
  static RootRequest forwarding(RootOp op, const ShellEntry& entry, int slot_claim) {
    RootRequest r;
    r.op = op;
    r.entry = entry;
    r.slot_claim = slot_claim;
    return r;
  }
  static RootRequest isolated_addresses(int user_namespace, int network_namespace, const std::vector<Ipv4>& addresses) {
    RootRequest r;
    r.op = RootOp::AddIsolatedAddresses;
    r.user_namespace = user_namespace;
    r.network_namespace = network_namespace;
    r.addresses = addresses;
    return r;
  }
};
// The most addresses an isolated namespace gets: each one costs root netlink work and kernel
// memory the user cannot reclaim, so the user (through a recording) must not choose without bound.
constexpr size_t kMaxIsolatedAddresses = 1024;

// Refuses (UserError naming the count and the fix) more than kMaxIsolatedAddresses addresses.
void check_isolated_address_count(size_t count);

// Checks a list of addresses requested for an isolated namespace's lo: at most
// kMaxIsolatedAddresses, each unicast (not 0.0.0.0/8, 127.0.0.0/8, 224.0.0.0/4 or
// 240.0.0.0/4), none twice. Throws UserError naming the address or the count and the fix.
void check_isolated_addresses(const std::vector<Ipv4>& addresses);

// Throws UserError (or std::logic_error, for a request the code could not have made) if a
// request's arguments are out of their bounds. The helper calls it before it acts.
void check_root_request(const RootRequest& request);

// Performs `request` in a separate process that the calling user cannot signal, stop or trace
// (real, effective and saved uid root, its own session) and waits for it: the few steps that
// hold a lock other shells wait for run there. The helper's exception text is rethrown as
// UserError. If interruptible, SIGINT, SIGTERM, SIGHUP or SIGQUIT (blocked by the caller) end the
// wait: the helper is killed and SetupInterrupted thrown. UntilReported returns as soon as the
// helper has reported that it succeeded and begun its exit, and leaves its exit (and its reaping)
// to happen meanwhile: only for the shell's last step, after which the supervisor exits.
// UntilReportedOnly returns at the report, the helper perhaps still running after the caller has
// exited: only where no reaper would take it for a process the command left (the outermost shell).
enum class HelperWait { UntilExited, UntilReported, UntilReportedOnly };
void run_root_helper(const RootRequest& request, bool interruptible, HelperWait wait);

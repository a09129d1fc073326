// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// mm-eth's root acts (the paper's EthShell and UsbShell): a network interface with devices on it
// (another machine on an Ethernet port, a phone's USB tethering, a VM on a TAP) becomes part of
// the shell's own namespace, so that the devices are clients of the shells around it.
//
// A host interface is moved into the shell's namespace (RTM_NEWLINK with IFLA_NET_NS_FD): the
// kernel then routes its frames, as it routes a command's packets, with no ferry of ours in
// between (no copy, and ARP, MTU and the NIC's offloads are the kernel's), and out through the
// shell's ferry like anything else inside. In the namespace the interface gets the subnet's first
// address; forwarding is switched on for it and the shell's own device only; a masquerade rule
// of a table of the namespace's own gives the devices' packets the shell's address; and dnsmasq,
// bound to the interface alone, gives the devices addresses, the gateway and DNS (forwarded to
// the namespace's resolvers: a replay's names resolve). At the end dnsmasq is stopped and the
// interface goes back to the namespace it came from, with its link state, MTU, addresses and
// routes as they were; everything else goes with the namespace.
//
// Which interface: the administrator lists those that ordinary users may have taken
// (allow-interface in mahimahi.conf); none by default, and never the one that carries the default
// route of the namespace it is in. It is looked for in the caller's namespace, then in those of
// the caller's ancestors (the namespaces of the shells around this one, nearest first): an
// interface of the machine's is found from inside any nesting of shells.
//
// A shell killed before its clean-up (SIGKILL) leaves a note, /run/mahimahi/eth-IFACE.state, with
// what it changed: the next mm-eth for that interface puts it back first (the interface returned
// by the kernel when the namespace died, or still in the namespace dnsmasq keeps alive).
//
// With a TAP (--tap NAME) nothing of the host's is taken: the TAP is made in the shell's namespace,
// owned by the user, for a VM or an emulator the command runs (qemu -netdev tap,ifname=NAME).
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "shell/admin_config.hh"
#include "shell/privileged.hh"
#include "util/address.hh"
#include "util/file_descriptor.hh"

struct DeviceAttachment {
  std::string interface;  // a host interface to take, or
  std::string tap;        // a TAP to make
  Ipv4Net subnet;         // the devices' subnet: its first address is the gateway's
};

// The devices' subnets mm-eth takes: a private or shared range, from /16 to /29.
bool usable_device_subnet(const Ipv4Net& subnet);

// The checks made before anything is set up: a user without root's rights takes no interface,
// an ordinary user only those the administrator lists; never lo or a shell's device. Throws
// UserError naming the setting to change.
void check_attachment(const DeviceAttachment& attachment, const UserIdentity& user, const AdministratorConfig& config);

class AttachedDevice {
 public:
  AttachedDevice() = default;
  AttachedDevice(AttachedDevice&& other) noexcept;
  AttachedDevice& operator=(AttachedDevice&&) = delete;
  ~AttachedDevice();

  // Root's rights, before the command starts; `net` is the shell's (its namespace made). Throws
  // UserError naming the interface and the fix for a refusal (not allowed, not found, the
  // default route's, a user without root's rights).
  static AttachedDevice attach(const DeviceAttachment& attachment, const ShellNetwork& net, const UserIdentity& user,
                               const AdministratorConfig& config, const std::vector<Ipv4>& resolvers);

  pid_t dnsmasq() const { return dnsmasq_; }  // the reaper spares it; this object ends it
  // In a child that drops privileges: the namespaces' descriptors are not the user's.
  void close_in_child();
  // --verbose: the leases dnsmasq gave, one line each ("ADDRESS MAC NAME").
  std::vector<std::string> leases() const;

 private:
  void detach() noexcept;

  DeviceAttachment what_;
  FileDescriptor source_namespace_;  // where the interface came from
  FileDescriptor shell_namespace_;   // holds the namespace while the interface is in it
  std::string saved_;                // the interface's state before (state_text)
  std::string directory_;            // dnsmasq's lease file and log
  pid_t dnsmasq_ = -1;
  bool attached_ = false;  // the interface is in the shell's namespace
  FileDescriptor note_;    // the note (see above), locked while the shell lives
};

// Puts back what a shell killed before its clean-up left of `interface` (see above), if its note
// is there and no live shell holds it: called as mm-eth starts. Warns on standard error of what
// it could not put back.
void recover_abandoned_interface(const std::string& interface);

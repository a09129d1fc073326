// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Network devices of the current network namespace, configured with classic ioctls.
// Only the privileged set-up (privileged.cc) calls these.
#include <string>
#include <vector>

#include "util/address.hh"
#include "util/file_descriptor.hh"

// A non-persistent TUN device (IFF_TUN | IFF_NO_PI): it disappears when its last fd closes.
// The fd is non-blocking and close-on-exec.
FileDescriptor create_tun(const std::string& name);

// The same with offloads (packet/offload.hh): IFF_VNET_HDR, and TUNSETOFFLOAD for checksum and
// TCP/IPv4 segmentation offload (with ECN where the kernel takes it). Returns an invalid fd and
// the kernel's reason if it refuses the header or every offload (the caller then falls back to
// create_tun). With `header_required`, a device that takes the header but no offload is kept
// (its reads are then plain packets behind a header: the other device of the pair has one).
struct OffloadTun {
  FileDescriptor fd;
  std::string refused;  // why not, when fd is invalid (or why without offloads)
  std::string enabled;  // the offloads the device took, in words
};
OffloadTun create_offload_tun(const std::string& name, bool header_required);

// Sets local address, point-to-point peer, a /32 mask, the transmit queue length, and brings it up.
void configure_point_to_point(const std::string& name, Ipv4 local, Ipv4 peer, int txqueuelen);
void bring_up(const std::string& name);
void set_tx_queue_length(const std::string& name, int length);
// Adds each address, as a /32, to the device (e.g. lo).
void add_addresses(const std::string& device, const std::vector<Ipv4>& addresses);
void add_default_route(const std::string& device, Ipv4 gateway);

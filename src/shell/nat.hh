#pragma once
// Source NAT for a shell's inner address, as one nftables table per shell.
// The table is named after the shell's outer TUN device; a table whose device no longer
// exists belonged to a shell that died without cleaning up (SIGKILL) and is removed by the
// next shell that starts in the same namespace. Only the privileged set-up uses this.
#include <string>
#include <vector>

#include "util/address.hh"

class MasqueradeTable {
 public:
  // Adds table ip mahimahi_<device> that masquerades packets from inner leaving any
  // interface but `device`.
  MasqueradeTable(const std::string& device, Ipv4 inner);
  ~MasqueradeTable();
  MasqueradeTable(const MasqueradeTable&) = delete;
  MasqueradeTable& operator=(const MasqueradeTable&) = delete;

  const std::string& name() const { return table_; }
  // Leaves the deletion to someone else (the shell's detached clean-up helper): the destructor
  // then does nothing.
  void hand_over() { owned_ = false; }

  // Deletes every mahimahi_* table of this namespace whose device is gone; returns their names.
  static std::vector<std::string> remove_stale();
  static std::string table_name_for(const std::string& device);

 private:
  std::string table_;
  bool owned_ = true;  // deleted by the destructor
};

// Runs one nft script with libnftables; throws std::runtime_error with nft's message.
std::string run_nft(const std::string& script);

// SPDX-License-Identifier: GPL-3.0-or-later
// Shells' device names (shell/nat.hh): every kind makes a name that the shared table knows as a
// shell's, so that no shell's device is ever taken for one of the host's.
#include <net/if.h>

#include "expect.hh"
#include "shell/nat.hh"

TEST(ShellDeviceNames, every_kind_names_a_shells_device) {
  for (const auto& [kind, word] : kShellKinds) {
    const std::string name = shell_device_name(kind, 4194304);  // the largest pid_max
    EXPECT_EQ(name, std::string(word) + "-4194304");
    EXPECT_LT(name.size(), size_t{IFNAMSIZ});
    EXPECT_TRUE(is_shell_device_name(name)) << name;
  }
  EXPECT_TRUE(is_shell_device_name("meter-12"));
  EXPECT_TRUE(is_shell_device_name("cumulus-12"));
}

TEST(ShellDeviceNames, the_hosts_devices_are_none) {
  for (const char* name : {"eth0", "delay", "delay-", "delay-12a", "replay-12", "veth-12", "mmt-a12", "xdelay-1", "-1"})
    EXPECT_FALSE(is_shell_device_name(name)) << name;
}

// SPDX-License-Identifier: GPL-3.0-or-later
// mm-eth's command line and the devices' subnets (shell/eth_shell.hh, shell/attached_device.hh).
#include <string>
#include <vector>

#include "expect.hh"
#include "shell/attached_device.hh"
#include "shell/eth_shell.hh"
#include "util/exception.hh"

namespace {
const ProgramInfo kInfo{"mm-eth", "IFACE [OPTION]... [--] [COMMAND...]", "help\n"};

ShellSpec parse(std::vector<std::string> words) {
  words.insert(words.begin(), "mm-eth");
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  return eth_shell(kInfo, static_cast<int>(argv.size()), argv.data());
}
}  // namespace

TEST(EthShell, takes_an_interface_or_a_tap_and_the_command_after) {
  ShellSpec s = parse({"usb0", "curl", "-s", "http://x/"});
  ASSERT_TRUE(s.attachment);
  EXPECT_EQ(s.attachment->interface, "usb0");
  EXPECT_TRUE(s.attachment->tap.empty());
  EXPECT_EQ(s.attachment->subnet.str(), "192.168.77.0/24");
  EXPECT_EQ(s.command, (std::vector<std::string>{"curl", "-s", "http://x/"}));
  EXPECT_EQ(s.device_kind, ShellKind::Eth);
  s = parse({"--tap=vm0", "--subnet=10.9.8.0/24", "--", "qemu-system-x86_64", "-nographic"});
  EXPECT_EQ(s.attachment->tap, "vm0");
  EXPECT_TRUE(s.attachment->interface.empty());
  EXPECT_EQ(s.attachment->subnet.str(), "10.9.8.0/24");
  EXPECT_EQ(s.command.front(), "qemu-system-x86_64");
}

TEST(EthShell, refuses_what_is_not_an_interface_or_a_devices_subnet) {
  EXPECT_THROW_WITH(UsageError, parse({}), "missing IFACE");
  EXPECT_THROW_WITH(UsageError, parse({"usb0", "--tap=vm0"}), "not both");
  EXPECT_THROW_WITH(UsageError, parse({"a/b"}), "\"a/b\" is not an interface's name");
  EXPECT_THROW_WITH(UsageError, parse({"--tap=a b"}), "--tap needs a name");
  EXPECT_THROW_WITH(UsageError, parse({"--tap=ingress"}), "has already");
  EXPECT_THROW_WITH(UsageError, parse({"--subnet=8.8.8.0/24", "usb0"}), "--subnet needs a private or shared range");
  EXPECT_THROW_WITH(UsageError, parse({"--subnet=192.168.77.1/24", "usb0"}), "--subnet needs");
}

TEST(EthShell, devices_subnets_are_private_or_shared_from_16_to_29) {
  for (const char* good : {"192.168.77.0/24", "10.0.0.0/16", "172.16.4.0/29", "100.64.0.0/24"})
    EXPECT_TRUE(usable_device_subnet(*Ipv4Net::parse(good))) << good;
  for (const char* bad : {"8.8.8.0/24", "10.0.0.0/8", "192.168.77.0/30", "198.51.100.0/24", "172.32.0.0/24"})
    EXPECT_FALSE(usable_device_subnet(*Ipv4Net::parse(bad))) << bad;
}

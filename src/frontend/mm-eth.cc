// SPDX-License-Identifier: GPL-3.0-or-later
// mm-eth IFACE [OPTION]... [--] [COMMAND...], mm-eth --tap NAME [OPTION]... [--] [COMMAND...]:
// the devices on a network interface (another machine, a phone's USB tethering) or on a TAP (a
// VM) become clients of the shells around this one (the paper's EthShell and UsbShell).
#include <string>

#include "shell/eth_shell.hh"
#include "shell/packet_shell.hh"

namespace {
const ProgramInfo kInfo{
    "mm-eth", "IFACE [OPTION]... [--] [COMMAND...]  or  mm-eth --tap NAME [OPTION]... [--] [COMMAND...]",
    "Puts the devices on the network interface IFACE (another machine on an Ethernet port, a phone's\n"
    "USB tethering interface such as usb0 or enx..., a USB Ethernet adapter) behind the shells this\n"
    "one runs in: while COMMAND (default: your login shell) runs, IFACE is in this shell's network\n"
    "namespace, its devices get an address, a gateway and DNS by DHCP, and their traffic crosses\n"
    "every shell around (delay, link, loss, record, replay); a replay's names resolve for them.\n"
    "  mm-replay site mm-link up.trace down.trace -- mm-delay 50 -- mm-eth usb0\n"
    "When the shell ends, IFACE is back where it was, with its addresses, routes and link state.\n"
    "Ordinary users may take only the interfaces the administrator lists (allow-interface IFACE in\n"
    "mahimahi.conf), never the one of the default route.\n"
    "\n"
    "Options:\n"
    "  --tap=NAME  make a TAP named NAME, yours, for a virtual machine or an emulator that COMMAND\n"
    "              runs (qemu ... -netdev tap,id=n0,ifname=NAME,script=no,downscript=no), instead\n"
    "              of taking an interface; needs no root's rights\n"
    "  --subnet=A.B.C.D/N\n"
    "              the devices' addresses (default 192.168.77.0/24): the first is the gateway's and\n"
    "              the DNS server's, the leases from the tenth (a private or shared range, /16 to /29)\n" +
        std::string(kHelpAndVersionLines) +
        "\n"
        "With --verbose, the leases given are listed at the end. Only IPv4 is carried, as in every\n"
        "shell: the devices get no IPv6 address (no router advertisement).\n"};
}  // namespace

int main(int argc, char** argv) {
  return run_packet_shell(argc, argv, kInfo, [](int ac, char** av) { return eth_shell(kInfo, ac, av); });
}

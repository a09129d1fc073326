// SPDX-License-Identifier: GPL-3.0-or-later
#include "shell/eth_shell.hh"

#include <string>

#include "packet/queues.hh"
#include "shell/admin_config.hh"
#include "shell/attached_device.hh"
#include "shell/ferry_pair.hh"
#include "util/exception.hh"
#include "util/text.hh"

namespace {
constexpr const char* kDefaultDeviceSubnet = "192.168.77.0/24";
}  // namespace

ShellSpec eth_shell(const ProgramInfo& info, int ac, char** av) {
  ShellSpec spec;
  DeviceAttachment attachment;
  attachment.subnet = *Ipv4Net::parse(kDefaultDeviceSubnet);
  std::vector<ArgScanner::Option> options{
      {"tap", true,
       [&](std::string_view v) {
         if (!is_interface_name(v))
           throw UsageError("--tap needs a name for the TAP (1 to 15 of a-z, A-Z, 0-9, . _ -), not \"" +
                            printable(v, 40) + "\"");
         if (v == "lo" || v == kInnerDevice)
           throw UsageError("--tap=" + std::string(v) + " is a name the shell's namespace has already: choose another");
         attachment.tap = std::string(v);
       }},
      {"subnet", true,
       [&](std::string_view v) {
         const std::optional<Ipv4Net> subnet = Ipv4Net::parse(v);
         if (!subnet || !usable_device_subnet(*subnet))
           throw UsageError(
               "--subnet needs a private or shared range from /16 to /29 (10.0.0.0/8, 172.16.0.0/12, "
               "192.168.0.0/16, 100.64.0.0/10) with its host bits zero, such as 192.168.77.0/24, not \"" +
               printable(v, 40) + "\"");
         attachment.subnet = *subnet;
       }},
      ArgScanner::verbose_option(spec.verbose),
      ArgScanner::tcp_ecn_option(spec.tcp_ecn)};
  ArgScanner scanner(info, std::move(options));
  spec.command = scanner.scan(ac, av, [&](std::string_view word) {
    if (!attachment.interface.empty() || !attachment.tap.empty()) return false;
    if (!is_interface_name(word))
      throw UsageError("\"" + printable(word, 40) + "\" is not an interface's name (ip link lists them)");
    attachment.interface = std::string(word);
    return true;
  });
  if (attachment.interface.empty() == attachment.tap.empty())
    throw UsageError(attachment.tap.empty() ? "missing IFACE (the interface the devices are on) or --tap NAME"
                                            : "give IFACE or --tap NAME, not both");
  spec.device_kind = ShellKind::Eth;
  const std::string name = attachment.interface.empty() ? attachment.tap : attachment.interface;
  spec.tag = "[eth " + name + "] ";
  spec.attachment = attachment;
  // Between the shell's namespace and the caller's, the packets of the devices and of the command
  // cross as through mm-delay 0; the interface's own frames never meet a ferry of ours.
  spec.ferry = [](const FerryEndpoints& tuns, const std::function<void()>& ready) {
    DelayQueue uplink(0), downlink(0);
    return run_ferry_pair(tuns, uplink, downlink, ready);
  };
  return spec;
}

// SPDX-License-Identifier: GPL-3.0-or-later
// The administrator's configuration file: settings, comments, bad lines, ownership.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "expect.hh"
#include "shell/admin_config.hh"
#include "util/exception.hh"

TEST(AdminConfig, admin_config_parses_settings_and_comments) {
  auto c = AdministratorConfig::parse(
      "# comment\n\n  allow-address-pool 198.18.0.0/15  # lab range\nallow-address-pool 203.0.113.0/24\nferry-nice "
      "-20\n",
      "f");
  ASSERT_EQ(c.allowed_pools.size(), 2u);
  ASSERT_EQ(c.allowed_pools[0].str(), "198.18.0.0/15");
  ASSERT_TRUE(c.ferry_nice && *c.ferry_nice == -20);
  auto empty = AdministratorConfig::parse("", "f");
  ASSERT_TRUE(empty.allowed_pools.empty() && !empty.ferry_nice);
}

TEST(AdminConfig, admin_config_refuses_bad_lines_naming_them) {
  EXPECT_THROW_WITH(UserError, AdministratorConfig::parse("ferry-nice -21\n", "f"), "f:1: ferry-nice");
  EXPECT_THROW_WITH(UserError, AdministratorConfig::parse("ferry-nice x\n", "f"), "f:1:");
  EXPECT_THROW_WITH(UserError, AdministratorConfig::parse("\nallow-address-pool 10.0.0.1/8\n", "f"), "f:2:");
  EXPECT_THROW_WITH(UserError, AdministratorConfig::parse("allow-address-pool\n", "f"), "KEY VALUE");
  EXPECT_THROW_WITH(UserError, AdministratorConfig::parse("ferry-nice 0 1\n", "f"), "KEY VALUE");
  EXPECT_THROW_WITH(UserError, AdministratorConfig::parse("nice -20\n", "f"), "unknown setting");
}

TEST(AdminConfig, admin_config_file_must_be_root_only) {
  char dir[] = "/tmp/mm-conf.XXXXXX";
  ASSERT_TRUE(::mkdtemp(dir));
  const std::string path = std::string(dir) + "/mahimahi.conf";
  auto empty = AdministratorConfig::load(path);  // absent: nothing widened
  ASSERT_TRUE(empty.allowed_pools.empty());
  std::ofstream(path) << "ferry-nice -5\n";
  ::chmod(path.c_str(), 0666);
  if (::geteuid() == 0) {
    EXPECT_THROW_WITH(UserError, AdministratorConfig::load(path), "writable by root only");
    ::chmod(path.c_str(), 0644);
    ::chmod(dir, 0755);
    auto c = AdministratorConfig::load(path);
    ASSERT_TRUE(c.ferry_nice && *c.ferry_nice == -5);
  } else {
    EXPECT_THROW_WITH(UserError, AdministratorConfig::load(path), "owned by root");  // owned by this user
  }
  ::unlink(path.c_str());
  ::rmdir(dir);
}

TEST(AdminConfig, admin_config_lists_the_interfaces_mm_eth_may_take) {
  auto c = AdministratorConfig::parse("allow-interface usb0\nallow-interface enx00e04c680001  # the adapter\n", "f");
  ASSERT_EQ(c.interfaces.size(), 2u);
  EXPECT_EQ(c.interfaces[1], "enx00e04c680001");
  EXPECT_THROW_WITH(UserError, AdministratorConfig::parse("allow-interface a/b\n", "f"),
                    "f:1: \"a/b\" is not an interface");
  EXPECT_THROW_WITH(UserError, AdministratorConfig::parse("allow-interface sixteen-letters-\n", "f"),
                    "not an interface");
  EXPECT_TRUE(is_interface_name("eth0") && is_interface_name("usb0") && is_interface_name("br-lan.10"));
  EXPECT_FALSE(is_interface_name("") || is_interface_name("..") || is_interface_name("a b") ||
               is_interface_name("x\n") || is_interface_name("0123456789abcdef"));
}

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "admin_config.hh"
#include "exception.hh"
#include "harness.hh"

TEST(admin_config_parses_settings_and_comments) {
  auto c = AdministratorConfig::parse(
      "# comment\n\n  allow-address-pool 198.18.0.0/15  # lab range\nallow-address-pool 203.0.113.0/24\nferry-nice -20\n",
      "f");
  CHECK_EQ(c.allowed_pools.size(), 2u);
  CHECK_EQ(c.allowed_pools[0].str(), "198.18.0.0/15");
  CHECK(c.ferry_nice && *c.ferry_nice == -20);
  auto empty = AdministratorConfig::parse("", "f");
  CHECK(empty.allowed_pools.empty() && !empty.ferry_nice);
}

TEST(admin_config_refuses_bad_lines_naming_them) {
  CHECK_THROWS(UserError, AdministratorConfig::parse("ferry-nice -21\n", "f"), "f:1: ferry-nice");
  CHECK_THROWS(UserError, AdministratorConfig::parse("ferry-nice x\n", "f"), "f:1:");
  CHECK_THROWS(UserError, AdministratorConfig::parse("\nallow-address-pool 10.0.0.1/8\n", "f"), "f:2:");
  CHECK_THROWS(UserError, AdministratorConfig::parse("allow-address-pool\n", "f"), "KEY VALUE");
  CHECK_THROWS(UserError, AdministratorConfig::parse("ferry-nice 0 1\n", "f"), "KEY VALUE");
  CHECK_THROWS(UserError, AdministratorConfig::parse("nice -20\n", "f"), "unknown setting");
}

TEST(admin_config_file_must_be_root_only) {
  char dir[] = "/tmp/mm-conf.XXXXXX";
  CHECK(::mkdtemp(dir));
  const std::string path = std::string(dir) + "/mahimahi.conf";
  auto empty = AdministratorConfig::load(path);  // absent: nothing widened
  CHECK(empty.allowed_pools.empty());
  std::ofstream(path) << "ferry-nice -5\n";
  ::chmod(path.c_str(), 0666);
  if (::geteuid() == 0) {
    CHECK_THROWS(UserError, AdministratorConfig::load(path), "writable by root only");
    ::chmod(path.c_str(), 0644);
    ::chmod(dir, 0755);
    auto c = AdministratorConfig::load(path);
    CHECK(c.ferry_nice && *c.ferry_nice == -5);
  } else {
    CHECK_THROWS(UserError, AdministratorConfig::load(path), "owned by root");  // owned by this user
  }
  ::unlink(path.c_str());
  ::rmdir(dir);
}

// SPDX-License-Identifier: GPL-3.0-or-later
// The parts of the privileged set-up that need no root: the ferry's priority and the bound on an
// isolated namespace's addresses.
#include <sys/resource.h>

#include <vector>

#include "expect.hh"
#include "shell/privileged.hh"
#include "util/exception.hh"

namespace {
// Sets this process's RLIMIT_NICE soft limit for one test, and restores it.
class NiceLimit {
 public:
  explicit NiceLimit(rlim_t soft) {
    ::getrlimit(RLIMIT_NICE, &saved_);
    rlimit changed = saved_;
    changed.rlim_cur = std::min(soft, saved_.rlim_max);
    ::setrlimit(RLIMIT_NICE, &changed);
  }
  ~NiceLimit() { ::setrlimit(RLIMIT_NICE, &saved_); }

 private:
  rlimit saved_{};
};
}  // namespace

TEST(Privileged, ferry_nice_for_root_is_a_little_above_the_programs_it_carries) {
  AdministratorConfig config;
  ASSERT_EQ(ferry_nice(UserIdentity{0, 0}, config), -5);
  config.ferry_nice = 5;  // the administrator's setting is for ordinary users
  ASSERT_EQ(ferry_nice(UserIdentity{0, 0}, config), -5);
}

TEST(Privileged, ferry_nice_for_a_user_follows_rlimit_and_configuration) {
  const UserIdentity user{12345, 12345};
  AdministratorConfig config;
  {
    NiceLimit none(0);
    ASSERT_EQ(ferry_nice(user, config), kNoPriorityChange);
    config.ferry_nice = -5;
    ASSERT_EQ(ferry_nice(user, config), -5);
    config.ferry_nice = -20;  // the administrator may allow more than the ferry takes by itself
    ASSERT_EQ(ferry_nice(user, config), -20);
    config.ferry_nice.reset();
  }
  ASSERT_EQ(ferry_nice(user, config, 23), -3);  // RLIMIT_NICE 23: down to nice -3
  ASSERT_EQ(ferry_nice(user, config, 40), -5);  // down to -20 allowed, -5 taken
  ASSERT_EQ(ferry_nice(user, config, RLIM_INFINITY), -5);
  ASSERT_EQ(ferry_nice(user, config, 15), 5);  // a lower priority than inherited: raise_priority ignores it
}

TEST(Privileged, isolated_address_count_is_bounded) {
  check_isolated_address_count(0);
  check_isolated_address_count(kMaxIsolatedAddresses);
  EXPECT_THROW_WITH(UserError, check_isolated_address_count(kMaxIsolatedAddresses + 1), "too many addresses");
}

TEST(Privileged, raise_priority_leaves_the_inherited_priority_alone) {
  errno = 0;
  const int before = ::getpriority(PRIO_PROCESS, 0);
  raise_priority(kNoPriorityChange);
  ASSERT_EQ(::getpriority(PRIO_PROCESS, 0), before);
}

TEST(Privileged, isolated_addresses_are_checked) {
  auto ip = [](const char* text) { return *Ipv4::parse(text); };
  check_isolated_addresses({});
  check_isolated_addresses({ip("10.0.0.1"), ip("93.184.216.34"), ip("100.64.1.2"), ip("223.255.255.254")});
  EXPECT_THROW_WITH(UserError, check_isolated_addresses({ip("10.0.0.1"), ip("127.0.0.2")}),
                    "server address 127.0.0.2 is not a unicast address (loopback");
  EXPECT_THROW_WITH(UserError, check_isolated_addresses({ip("0.0.0.0")}), "0.0.0.0 is not a unicast address");
  EXPECT_THROW_WITH(UserError, check_isolated_addresses({ip("224.0.0.1")}),
                    "224.0.0.1 is not a unicast address (multicast");
  EXPECT_THROW_WITH(UserError, check_isolated_addresses({ip("255.255.255.255")}),
                    "255.255.255.255 is not a unicast address");
  EXPECT_THROW_WITH(UserError, check_isolated_addresses({ip("240.0.0.1")}), "reserved");
  EXPECT_THROW_WITH(UserError, check_isolated_addresses({ip("10.0.0.1"), ip("10.0.0.2"), ip("10.0.0.1")}),
                    "server address 10.0.0.1 was requested twice");
  std::vector<Ipv4> many;
  for (uint32_t i = 0; i < kMaxIsolatedAddresses; i++) many.push_back(Ipv4{0x0a000001 + i});
  check_isolated_addresses(many);
  many.push_back(Ipv4{0x0b000001});
  EXPECT_THROW_WITH(UserError, check_isolated_addresses(many),
                    "too many addresses for the replay: 1025 (the recorded servers' and the resolvers'; at most 1024)");
  EXPECT_THROW_WITH(UserError, check_isolated_address_count(4000000000u), "--single-server");
}

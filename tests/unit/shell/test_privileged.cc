// The parts of the privileged set-up that need no root: the ferry's priority and the bound on an
// isolated namespace's addresses.
#include <sys/resource.h>

#include "expect.hh"
#include "shell/privileged.hh"

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

TEST(Privileged, ferry_nice_for_root_is_the_highest) {
  AdministratorConfig config;
  ASSERT_EQ(ferry_nice(UserIdentity{0, 0}, config), -20);
  config.ferry_nice = 5;  // the administrator's setting is for ordinary users
  ASSERT_EQ(ferry_nice(UserIdentity{0, 0}, config), -20);
}

TEST(Privileged, ferry_nice_for_a_user_follows_rlimit_and_configuration) {
  const UserIdentity user{12345, 12345};
  NiceLimit none(0);
  AdministratorConfig config;
  ASSERT_EQ(ferry_nice(user, config), kNoPriorityChange);
  config.ferry_nice = -5;
  ASSERT_EQ(ferry_nice(user, config), -5);
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

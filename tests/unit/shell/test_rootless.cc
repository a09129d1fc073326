// SPDX-License-Identifier: GPL-3.0-or-later
// Rootless shells' parts that a test can run as an ordinary user: the kernel's refusals as
// messages (from setting files of the test's own), the user's state directory, the privilege
// mode's decision, descriptors passed between processes, and the namespaces themselves where
// the kernel allows an ordinary user to make them.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "expect.hh"
#include "shell/privileged.hh"
#include "shell/rootless.hh"
#include "temp_files.hh"
#include "util/exception.hh"

namespace {

#define EXPECT_CONTAINS_TEXT(text, fragment) \
  EXPECT_NE(std::string(text).find(fragment), std::string::npos) << "without \"" << (fragment) << "\": " << (text)

void write_text(const std::filesystem::path& path, const std::string& text) { std::ofstream(path) << text; }

// Setting files as the kernel shows them when everything is allowed, and a usable "TUN device".
RootlessSettingPaths allowed(const TempDir& dir) {
  RootlessSettingPaths paths{(dir.path / "max").string(), (dir.path / "clone").string(),
                             (dir.path / "apparmor").string(), (dir.path / "tun").string()};
  write_text(paths.max_user_namespaces, "15000\n");
  write_text(paths.unprivileged_userns_clone, "1\n");
  write_text(paths.apparmor_restrict, "0\n");
  write_text(paths.tun, "");
  ::chmod(paths.tun.c_str(), 0666);
  return paths;
}

std::string refusal(bool needs_tun, const RootlessSettingPaths& paths) {
  try {
    check_rootless_support(needs_tun, paths);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

bool user_namespaces_allowed() {
  std::ifstream max("/proc/sys/user/max_user_namespaces");
  long value = 0;
  return (max >> value) && value > 0 && ::access("/proc/self/ns/user", R_OK) == 0;
}

}  // namespace

TEST(Rootless, every_setting_allowing_it_passes) {
  TempDir dir;
  const RootlessSettingPaths paths = allowed(dir);
  ASSERT_EQ(refusal(true, paths), "");
  // A kernel without Debian's or Ubuntu's settings: nothing to say.
  RootlessSettingPaths missing = paths;
  missing.unprivileged_userns_clone = (dir.path / "none1").string();
  missing.apparmor_restrict = (dir.path / "none2").string();
  ASSERT_EQ(refusal(true, missing), "");
}

TEST(Rootless, each_refusing_setting_is_named_with_the_fix) {
  TempDir dir;
  RootlessSettingPaths paths = allowed(dir);
  write_text(paths.max_user_namespaces, "0\n");
  std::string message = refusal(false, paths);
  EXPECT_CONTAINS_TEXT(message, "user namespaces are switched off (user.max_user_namespaces = 0)");
  EXPECT_CONTAINS_TEXT(message, "sysctl user.max_user_namespaces=");
  EXPECT_CONTAINS_TEXT(message, "setuid root");
  paths = allowed(dir);
  write_text(paths.unprivileged_userns_clone, "0\n");
  EXPECT_CONTAINS_TEXT(refusal(false, paths), "kernel.unprivileged_userns_clone = 0");
  paths = allowed(dir);
  write_text(paths.apparmor_restrict, "1\n");
  EXPECT_CONTAINS_TEXT(refusal(false, paths), "kernel.apparmor_restrict_unprivileged_userns = 1");
}

TEST(Rootless, a_tun_device_the_user_cannot_open_is_named_with_its_mode) {
  TempDir dir;
  RootlessSettingPaths paths = allowed(dir);
  ::chmod(paths.tun.c_str(), 0);
  if (::access(paths.tun.c_str(), W_OK) == 0) GTEST_SKIP() << "run as root: every file is writable";
  const std::string message = refusal(true, paths);
  EXPECT_CONTAINS_TEXT(message, "you may not open " + paths.tun + " (mode 0000)");
  EXPECT_CONTAINS_TEXT(message, "chmod 0666 " + paths.tun);
  ASSERT_EQ(refusal(false, paths), "");  // mm-replay makes no TUN device
  paths.tun = (dir.path / "absent").string();
  EXPECT_CONTAINS_TEXT(refusal(true, paths), "does not exist; an administrator can load the tun module");
}

TEST(Rootless, the_state_directory_is_made_private_and_refused_if_others_can_write) {
  TempDir dir;
  const std::string made = rootless_state_directory(dir.path.c_str(), nullptr, nullptr);
  ASSERT_EQ(made, (dir.path / "mahimahi").string());
  struct stat st {};
  ASSERT_EQ(::stat(made.c_str(), &st), 0);
  ASSERT_EQ(st.st_mode & 07777, 0700u);
  ASSERT_EQ(st.st_uid, ::getuid());
  ASSERT_EQ(rootless_state_directory(dir.path.c_str(), nullptr, nullptr), made);  // again: the same one
  ::chmod(made.c_str(), 0777);
  // (It would be passed over for TMPDIR's; here that one is taken too.)
  TempDir taken;
  std::ofstream(taken.path / ("mahimahi-" + std::to_string(::getuid()))) << "not a directory\n";
  EXPECT_THROW_WITH(UserError, rootless_state_directory(dir.path.c_str(), nullptr, taken.path.c_str()),
                    "nobody else can write");
  // Without XDG_RUNTIME_DIR (or a relative one): /run/user/UID if it is the user's, else TMPDIR.
  TempDir tmp;
  const std::string fallback = rootless_state_directory("relative", nullptr, tmp.path.c_str());
  ASSERT_TRUE(fallback == "/run/user/" + std::to_string(::getuid()) + "/mahimahi" ||
              fallback == (tmp.path / ("mahimahi-" + std::to_string(::getuid()))).string())
      << fallback;
}

// Without a runtime directory, the home directory's .cache: a name in TMPDIR that another user
// made first (here: one that others can write) is passed over, and refused only when nothing else is left.
TEST(Rootless, a_state_directory_taken_in_tmp_is_passed_over_for_the_home_directory) {
  if (std::filesystem::exists("/run/user/" + std::to_string(::getuid()))) GTEST_SKIP() << "/run/user/UID is used";
  TempDir tmp, home;
  const std::string squatted = (tmp.path / ("mahimahi-" + std::to_string(::getuid()))).string();
  ASSERT_EQ(::mkdir(squatted.c_str(), 0777), 0);
  ASSERT_EQ(::chmod(squatted.c_str(), 0777), 0);
  const std::string made = rootless_state_directory(nullptr, home.path.c_str(), tmp.path.c_str());
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  EXPECT_EQ(made, (home.path / ".cache" / ("mahimahi-" + std::string(host))).string());
  struct stat st {};
  ASSERT_EQ(::stat(made.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  // A home that is not the user's (here: none at all) leaves only TMPDIR's, which is refused, saying what to do.
  EXPECT_THROW_WITH(UserError, rootless_state_directory(nullptr, (home.path / "absent").c_str(), tmp.path.c_str()),
                    "set XDG_RUNTIME_DIR");
  EXPECT_THROW_WITH(UserError, rootless_state_directory(nullptr, nullptr, tmp.path.c_str()), "remove " + squatted);
}

TEST(Rootless, the_mode_is_decided_from_the_rights_and_the_variable) {
  if (::geteuid() == 0) GTEST_SKIP() << "run as root: the mode is Root";
  EXPECT_THROW_WITH(UsageError, acquire_privileges("mm-delay", "yes"), "MAHIMAHI_ROOTLESS must be 1");
  EXPECT_THROW_WITH(UserError, acquire_privileges("mm-delay", "0"), "needs root's rights with MAHIMAHI_ROOTLESS=0");
  const UserIdentity user = acquire_privileges("mm-delay", nullptr);
  ASSERT_EQ(user.mode, PrivilegeMode::Rootless);
  ASSERT_EQ(user.uid, ::getuid());
  ASSERT_EQ(privilege_mode(), PrivilegeMode::Rootless);
  ASSERT_EQ(acquire_privileges("mm-delay", "1").mode, PrivilegeMode::Rootless);
}

TEST(Rootless, descriptors_pass_between_processes_whole) {
  int ends[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends), 0);
  FileDescriptor a(ends[0]), b(ends[1]);
  TempFile one("one"), two("two");
  FileDescriptor f1(::open(one.path.c_str(), O_RDONLY | O_CLOEXEC)), f2(::open(two.path.c_str(), O_RDONLY | O_CLOEXEC));
  send_descriptors(a.get(), {f1.get(), f2.get()});
  std::vector<FileDescriptor> got = receive_descriptors(b.get());
  ASSERT_EQ(got.size(), 2u);
  char text[4] = {};
  ASSERT_EQ(::pread(got[1].get(), text, 3, 0), 3);
  ASSERT_EQ(std::string(text), "two");
  ASSERT_NE(got[0].get(), f1.get());  // new descriptors, the same files
  a.close();
  EXPECT_THROW_WITH(std::runtime_error, receive_descriptors(b.get()), "no descriptors");
}

// TSan's runtime runs a thread of its own, in a forked child too, and the kernel makes no user
// namespace for a process with several threads.
#if defined(__SANITIZE_THREAD__)
constexpr bool kThreadSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool kThreadSanitizer = true;
#else
constexpr bool kThreadSanitizer = false;
#endif
#else
constexpr bool kThreadSanitizer = false;
#endif

TEST(Rootless, the_command_namespaces_are_new_and_configured_inside) {
  if (!user_namespaces_allowed()) GTEST_SKIP() << "this kernel lets no ordinary user make user namespaces";
  if (kThreadSanitizer) GTEST_SKIP() << "under TSan, whose thread forbids user namespaces";
  struct stat own_net {
  }, own_user{};
  ASSERT_EQ(::stat("/proc/self/ns/net", &own_net), 0);
  ASSERT_EQ(::stat("/proc/self/ns/user", &own_user), 0);
  RootlessNamespaces made = create_rootless_namespaces(::getuid(), ::getgid(), [] {
    // Inside: every capability over the new namespace (a sysctl of its own), lo up.
    write_existing_file("/proc/sys/net/ipv4/ip_unprivileged_port_start", "0");
    std::vector<FileDescriptor> fds;
    fds.emplace_back(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    return fds;
  });
  struct stat net {
  }, user{};
  ASSERT_EQ(::fstat(made.net.get(), &net), 0);
  ASSERT_EQ(::fstat(made.userns.get(), &user), 0);
  ASSERT_NE(net.st_ino, own_net.st_ino);
  ASSERT_NE(user.st_ino, own_user.st_ino);
  ASSERT_EQ(made.made.size(), 1u);
  ASSERT_TRUE(made.made[0].valid());
  // What fails inside is said here.
  EXPECT_THROW_WITH(
      UserError,
      create_rootless_namespaces(::getuid(), ::getgid(),
                                 []() -> std::vector<FileDescriptor> { throw UserError("a refusal made inside"); }),
      "a refusal made inside");
}

TEST(Rootless, dropping_capabilities_leaves_none) {
  if (::geteuid() == 0) GTEST_SKIP() << "run as root: dropping would change the test process";
  drop_capabilities();  // (an ordinary user's process has none to begin with: a no-op that checks)
}

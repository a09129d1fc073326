// SPDX-License-Identifier: GPL-3.0-or-later
// RecordProxy without a network namespace: its set-up (the servers' CA bundle), run() until
// stop(), and a connection that was not redirected to it (no SO_ORIGINAL_DST), which is closed
// without being counted as failed. Loopback only.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "expect.hh"
#include "loopback.hh"
#include "record/record_proxy.hh"
#include "temp_files.hh"
#include "util/exception.hh"

namespace fs = std::filesystem;

namespace {

struct Fixture {
  TempDir tmp;
  CertificateAuthority ca = CertificateAuthority::load_or_create(tmp.path / "ca");
  RecordWriter writer{tmp.path, [](const std::string&) {}};
};
}  // namespace

TEST(RecordProxy, unreadable_upstream_ca_bundle_is_a_user_error) {
  Fixture f;
  sockaddr_in address;
  const fs::path bundle = f.tmp.path / "bundle.pem";
  std::ofstream(bundle) << "not PEM\n";
  RecordProxyOptions options;
  options.upstream_ca_file = bundle.string();
  EXPECT_THROW_WITH(UserError, RecordProxy(loopback_listener(&address), f.ca, f.writer, options),
                    "cannot use " + bundle.string() + " as the servers' CA bundle");
}

TEST(RecordProxy, connection_not_redirected_is_closed_and_stop_ends_run) {
  Fixture f;
  sockaddr_in address;
  RecordProxyOptions options;
  options.verify_upstream = false;
  RecordProxy proxy(loopback_listener(&address), f.ca, f.writer, options);
  std::thread runner([&proxy] { proxy.run(); });

  FileDescriptor client(check_syscall("socket", ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)));
  ASSERT_EQ(::connect(client.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  const timeval timeout{5, 0};
  ASSERT_EQ(::setsockopt(client.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout), 0);
  char byte;
  EXPECT_EQ(::recv(client.get(), &byte, 1, 0), 0);  // closed by the proxy, not left hanging

  proxy.stop();
  runner.join();
  EXPECT_EQ(proxy.failed_connections(), 0u);
  f.writer.finish();
  EXPECT_EQ(f.writer.written(), 0u);
}

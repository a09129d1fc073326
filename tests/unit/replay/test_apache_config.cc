// SPDX-License-Identifier: GPL-3.0-or-later
// Apache's configuration for a replay server, as text: HTTP, HTTPS and HTTP/2 instances, quoting
// of paths, the certificate's names, the modules needed, paths Apache cannot hold.
#include <string>

#include "expect.hh"
#include "replay/apache_config.hh"
#include "util/exception.hh"

namespace {

const ApacheFiles kFiles{"/usr/lib/apache2/modules", "/tmp/mm-replay.abc", "apache-10.0.0.1-443",
                         "/tmp/mm-replay.abc/matcher.sock"};

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

}  // namespace

TEST(ApacheConfig, http_server) {
  const ReplayServerSpec spec{"10.0.0.1", 80, false, {"a.test"}, false};
  const ApacheFiles files{"/m", "/w", apache_file_stem(spec), "/w/matcher.sock"};
  EXPECT_EQ(files.stem, "apache-10.0.0.1-80");
  const std::string c = apache_configuration({spec}, files, 1);
  EXPECT_EQ(c.rfind("# Apache httpd for 10.0.0.1:80 (HTTP), written by mm-replay", 0), 0u) << c;
  for (const char* line :
       {"ServerRoot \"/w\"", "DefaultRuntimeDir \"/w\"", "PidFile \"/w/apache-10.0.0.1-80.pid\"",
        "ErrorLog \"/w/apache-10.0.0.1-80.log\"", "ServerName 10.0.0.1", "Listen 10.0.0.1:80",
        "<VirtualHost 10.0.0.1:80>", "</VirtualHost>", "LoadModule mpm_worker_module \"/m/mod_mpm_worker.so\"",
        "LoadModule proxy_fcgi_module \"/m/mod_proxy_fcgi.so\"",
        "ProxyPass \"/\" \"unix:/w/matcher.sock|fcgi://localhost/\"", "SetEnv ap_trust_cgilike_cl 1",
        "AllowEncodedSlashes NoDecode", "LimitRequestLine 65536", "ServerTokens Prod"}) {
    EXPECT_TRUE(has_line(c, line)) << line << "\n" << c;
  }
  EXPECT_EQ(c.find("SSL"), std::string::npos);
  EXPECT_EQ(c.find("http2"), std::string::npos);
}

TEST(ApacheConfig, https_and_http2_server) {
  const ReplayServerSpec tls{"10.0.0.1", 443, true, {"a.test"}, false};
  const std::string c = apache_configuration({tls}, kFiles, 40);
  EXPECT_TRUE(c.find("(HTTPS), written") != std::string::npos);
  for (const char* line : {"SSLEngine on", "SSLProtocol -all +TLSv1.2 +TLSv1.3", "ServerName a.test",
                           "SSLCertificateFile \"/tmp/mm-replay.abc/apache-10.0.0.1-443.pem\"",
                           "SSLCertificateKeyFile \"/tmp/mm-replay.abc/apache-10.0.0.1-443.key\"",
                           "SSLSessionCache \"shmcb:/tmp/mm-replay.abc/apache-10.0.0.1-443.ssl-cache(512000)\"",
                           "LoadModule ssl_module \"/usr/lib/apache2/modules/mod_ssl.so\""}) {
    EXPECT_TRUE(has_line(c, line)) << line << "\n" << c;
  }
  EXPECT_EQ(c.find("Protocols"), std::string::npos);

  ReplayServerSpec h2 = tls;
  h2.h2 = true;
  const std::string c2 = apache_configuration({h2}, kFiles, 40);
  EXPECT_TRUE(c2.find("(HTTPS, HTTP/2), written") != std::string::npos);
  EXPECT_TRUE(has_line(c2, "Protocols h2 http/1.1"));
  EXPECT_TRUE(has_line(c2, "H2Push off"));
  EXPECT_TRUE(has_line(c2, "LoadModule http2_module \"/usr/lib/apache2/modules/mod_http2.so\""));
}

// Several IP:ports in one Apache: a Listen and an IP-based virtual host each, TLS, its certificate
// and HTTP/2 only where that IP:port has them; the modules and the session cache once.
TEST(ApacheConfig, one_instance_serves_several_ip_ports_each_its_own_virtual_host) {
  const std::vector<ReplayServerSpec> specs = {{"10.0.0.1", 80, false, {"a.test"}, false},
                                               {"10.0.0.2", 443, true, {"b.test", "c.test"}, true},
                                               {"10.0.0.3", 8443, true, {"d.test"}, false}};
  const ApacheFiles files{"/m", "/w", apache_file_stem(specs[0]), "/w/s"};
  const std::string c = apache_configuration(specs, files, 1);
  EXPECT_EQ(c.rfind("# Apache httpd for 10.0.0.1:80 and 2 other IP:ports (HTTPS, HTTP/2), written", 0), 0u) << c;
  const std::string expected_hosts =
      "Listen 10.0.0.1:80\n<VirtualHost 10.0.0.1:80>\nServerName 10.0.0.1\nAllowEncodedSlashes "
      "NoDecode\n</VirtualHost>\n"
      "Listen 10.0.0.2:443\n<VirtualHost 10.0.0.2:443>\nServerName b.test\nAllowEncodedSlashes NoDecode\nSSLEngine on\n"
      "SSLProtocol -all +TLSv1.2 +TLSv1.3\nSSLCertificateFile \"/w/apache-10.0.0.2-443.pem\"\n"
      "SSLCertificateKeyFile \"/w/apache-10.0.0.2-443.key\"\nProtocols h2 http/1.1\nH2Push off\n</VirtualHost>\n"
      "Listen 10.0.0.3:8443\n<VirtualHost 10.0.0.3:8443>\nServerName d.test\nAllowEncodedSlashes NoDecode\nSSLEngine "
      "on\n"
      "SSLProtocol -all +TLSv1.2 +TLSv1.3\nSSLCertificateFile \"/w/apache-10.0.0.3-8443.pem\"\n"
      "SSLCertificateKeyFile \"/w/apache-10.0.0.3-8443.key\"\n</VirtualHost>\n";
  EXPECT_NE(c.find(expected_hosts), std::string::npos) << c;
  for (const char* once : {"LoadModule ssl_module", "LoadModule http2_module", "SSLSessionCache", "PidFile"}) {
    const size_t first = c.find(once);
    EXPECT_NE(first, std::string::npos) << once;
    EXPECT_EQ(c.find(once, first + 1), std::string::npos) << once << " twice";
  }
  EXPECT_TRUE(has_line(c, "PidFile \"/w/apache-10.0.0.1-80.pid\""));
  EXPECT_THROW(apache_configuration({}, files, 1), std::invalid_argument);
}

TEST(ApacheConfig, groups_of_at_most_128_ip_ports_in_order) {
  std::vector<ReplayServerSpec> servers;
  for (int i = 0; i < 300; i++)
    servers.push_back({"10.0." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1), 80, false, {}, false});
  const auto groups = apache_groups(servers);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].size(), 128u);
  EXPECT_EQ(groups[1].size(), 128u);
  EXPECT_EQ(groups[2].size(), 44u);
  EXPECT_EQ(groups[1].front().ip, servers[128].ip);
  EXPECT_EQ(apache_groups({servers[0]}).size(), 1u);
  EXPECT_TRUE(apache_groups({}).empty());
}

// The worker MPM, with more processes at first the fewer instances the replay runs: a burst of a
// browser's connections finds threads ready.
TEST(ApacheConfig, processes_at_start_follow_the_number_of_servers) {
  EXPECT_EQ(apache_start_processes(0), 8u);
  EXPECT_EQ(apache_start_processes(1), 8u);
  EXPECT_EQ(apache_start_processes(2), 4u);
  EXPECT_EQ(apache_start_processes(3), 2u);
  EXPECT_EQ(apache_start_processes(8), 1u);
  EXPECT_EQ(apache_start_processes(500), 1u);
  const ReplayServerSpec spec{"10.0.0.1", 80, false, {"a.test"}, false};
  const ApacheFiles files{"/m", "/w", apache_file_stem(spec), "/w/s"};
  EXPECT_TRUE(has_line(apache_configuration({spec}, files, 2), "StartServers 4"));
  const std::string many = apache_configuration({spec}, files, 100);
  for (const char* line : {"StartServers 1", "ServerLimit 16", "ThreadsPerChild 32", "MaxRequestWorkers 512",
                           "LoadModule mpm_worker_module \"/m/mod_mpm_worker.so\""}) {
    EXPECT_TRUE(has_line(many, line)) << line;
  }
}

TEST(ApacheConfig, unquotable_paths_refused) {
  const ReplayServerSpec spec{"10.0.0.1", 80, false, {}, false};
  ApacheFiles files = kFiles;
  files.work = "/tmp/a\"b";
  EXPECT_THROW_WITH(UserError, apache_configuration({spec}, files, 1), "it cannot quote that name");
  EXPECT_THROW_WITH(UserError, require_plain_path("/tmp/a|b"), "Apache cannot quote its name; set TMPDIR");
  EXPECT_THROW_WITH(UserError, require_plain_path("/tmp/a\nb"), "Apache cannot quote its name");
  EXPECT_THROW_WITH(UserError, require_plain_path("/tmp/a\\b"), "Apache cannot quote its name");
  require_plain_path("/tmp/mm-replay.Ab9_-x y");
}

TEST(ApacheConfig, certificate_names) {
  const ReplayServerSpec spec{
      "10.0.0.1", 443, true, {"WWW.A.test.", "a.test", "www.a.test", "10.0.0.9", "bad name", "b.test"}, false};
  EXPECT_EQ(certificate_names(spec), (std::vector<std::string>{"www.a.test", "a.test", "b.test", "10.0.0.1"}));
  EXPECT_EQ(certificate_names({"10.0.0.2", 443, true, {}, false}), std::vector<std::string>{"10.0.0.2"});
}

TEST(ApacheConfig, required_modules) {
  EXPECT_TRUE(required_apache_modules({}).empty());
  const std::vector<std::string> http = required_apache_modules({{"10.0.0.1", 80, false, {}, true}});
  EXPECT_EQ(http, (std::vector<std::string>{"mod_mpm_worker.so", "mod_authz_core.so", "mod_proxy.so",
                                            "mod_proxy_fcgi.so", "mod_env.so"}));
  const auto tls = required_apache_modules({{"10.0.0.1", 80, false, {}, false}, {"10.0.0.1", 443, true, {}, false}});
  EXPECT_EQ(tls.size(), http.size() + 2);
  EXPECT_EQ(tls.back(), "mod_socache_shmcb.so");
  const auto h2 = required_apache_modules({{"10.0.0.1", 443, true, {}, true}});
  EXPECT_EQ(h2.back(), "mod_http2.so");
}

// Certificates as recorded: one name-based virtual host per certificate, each with its own files
// and the SNI names it answers; the first carries the address and answers any other name.
TEST(ApacheConfig, recorded_certificates_become_name_based_virtual_hosts) {
  ReplayServerSpec spec{"10.0.0.2", 443, true, {"b.test", "www.b.test", "cdn.b.test"}, true};
  spec.certificates = {{{"b.test"}, {"b.test"}}, {{"cdn.b.test", "www.b.test"}, {"cdn.b.test", "www.b.test"}}};
  const auto certificates = server_certificates(spec);
  ASSERT_EQ(certificates.size(), 2u);
  EXPECT_EQ(certificates[0].names, (std::vector<std::string>{"b.test", "10.0.0.2"}));
  EXPECT_EQ(certificates[0].stem, "apache-10.0.0.2-443");
  EXPECT_EQ(certificates[1].names, (std::vector<std::string>{"cdn.b.test", "www.b.test"}));
  EXPECT_EQ(certificates[1].stem, "apache-10.0.0.2-443-1");
  const std::string c = apache_configuration({spec}, kFiles, 40);
  size_t hosts = 0;
  for (size_t at = c.find("<VirtualHost "); at != std::string::npos; at = c.find("<VirtualHost ", at + 1)) hosts++;
  EXPECT_EQ(hosts, 2u) << c;
  EXPECT_NE(
      c.find("Listen 10.0.0.2:443\n<VirtualHost 10.0.0.2:443>\nServerName b.test\nAllowEncodedSlashes NoDecode\n"),
      std::string::npos)
      << c;
  EXPECT_NE(c.find("<VirtualHost 10.0.0.2:443>\nServerName cdn.b.test\nServerAlias www.b.test\n"), std::string::npos)
      << c;
  EXPECT_TRUE(has_line(c, "SSLCertificateFile \"/tmp/mm-replay.abc/apache-10.0.0.2-443-1.pem\"")) << c;
  size_t listens = 0;
  for (size_t at = c.find("Listen "); at != std::string::npos; at = c.find("Listen ", at + 1)) listens++;
  EXPECT_EQ(listens, 1u);
  // A certificate names the hosts it is presented for, even if the recording's did not.
  spec.certificates = {{{"b.test"}, {"www.b.test"}}};
  EXPECT_EQ(server_certificates(spec)[0].names, (std::vector<std::string>{"www.b.test", "b.test", "10.0.0.2"}));
  // None recorded: one certificate for every name, as before.
  spec.certificates.clear();
  ASSERT_EQ(server_certificates(spec).size(), 1u);
  EXPECT_EQ(server_certificates(spec)[0].names, certificate_names(spec));
}

// The TLS versions offered: TLS 1.2 only where the recorded server chose it, except over HTTP/2
// (mod_http2 answers a TLS 1.2 False Start request a round trip late).
TEST(ApacheConfig, tls_1_2_only_where_recorded_except_over_http2) {
  ReplayServerSpec spec{"10.0.0.1", 443, true, {"a.test"}, false};
  EXPECT_TRUE(has_line(apache_configuration({spec}, kFiles, 40), "SSLProtocol -all +TLSv1.2 +TLSv1.3"));
  spec.tls_max = "TLSv1.2";
  EXPECT_TRUE(has_line(apache_configuration({spec}, kFiles, 40), "SSLProtocol -all +TLSv1.2"));
  spec.h2 = true;
  EXPECT_TRUE(has_line(apache_configuration({spec}, kFiles, 40), "SSLProtocol -all +TLSv1.2 +TLSv1.3"));
}

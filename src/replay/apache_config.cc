// SPDX-License-Identifier: GPL-3.0-or-later
// Apache httpd's configuration for one replay server, as text. See apache_config.hh.
#include "replay/apache_config.hh"

#include <algorithm>
#include <sstream>

#include "util/address.hh"
#include "util/exception.hh"
#include "util/host_name.hh"
#include "util/text.hh"

namespace fs = std::filesystem;

namespace {

// A quoted argument for Apache's configuration (the paths in it were checked by require_plain_path).
std::string config_quoted(const fs::path& path) {
  const std::string text = path.string();
  for (unsigned char c : text) {
    if (c == '"' || c == '\\' || c < 0x20 || c == 0x7f) {
      throw UserError("cannot put " + text + " in Apache's configuration: it cannot quote that name");
    }
  }
  return '"' + text + '"';
}

// "LoadModule NAME "MODULES/FILE"" and a newline.
std::string load_module(const ApacheFiles& files, const char* name, const char* file) {
  return std::string("LoadModule ") + name + " " + config_quoted(files.modules / file) + "\n";
}

// The virtual host of one IP:port: its name, and TLS with its certificate, and HTTP/2, where asked.
// TLS 1.2 only where the recorded server chose it, except over HTTP/2: Apache's mod_http2 leaves
// a request that comes with the client's Finished (TLS 1.2 False Start, as Chromium sends it)
// unanswered until the client's next packet, a round trip later (measured: the first response
// on each such connection 160 ms late at 157 ms of RTT), where a TLS 1.3 handshake takes
// Chromium as many round trips as a False Start one.
bool tls12_only(const ReplayServerSpec& spec) { return spec.tls_max == "TLSv1.2" && !spec.h2; }

// With several certificates (as recorded), one name-based virtual host per certificate, chosen
// by the client's server name (SNI); the first also answers any other name.
std::string virtual_host(const ReplayServerSpec& spec, const ApacheFiles& files) {
  const std::string endpoint = spec.ip + ":" + std::to_string(spec.port);
  const std::vector<ServerCertificate> certificates = server_certificates(spec);
  std::ostringstream c;
  c << "Listen " << endpoint << "\n";
  for (size_t i = 0; i < certificates.size(); i++) {
    c << "<VirtualHost " << endpoint << ">\n"
      << "ServerName " << (i == 0 ? apache_server_name(spec) : certificates[i].server_names.front()) << "\n";
    for (size_t k = i == 0 ? 0 : 1; k < certificates[i].server_names.size(); k++) {
      if (i == 0 && certificates[i].server_names[k] == apache_server_name(spec)) continue;
      c << "ServerAlias " << certificates[i].server_names[k] << "\n";
    }
    // Not inherited from the server's configuration (Apache bug 46830): %2F forwarded here too.
    c << "AllowEncodedSlashes NoDecode\n";
    if (spec.https) {
      c << "SSLEngine on\n"
        << (tls12_only(spec) ? "SSLProtocol -all +TLSv1.2\n" : "SSLProtocol -all +TLSv1.2 +TLSv1.3\n")
        << "SSLCertificateFile " << config_quoted(files.work / (certificates[i].stem + ".pem")) << "\n"
        << "SSLCertificateKeyFile " << config_quoted(files.work / (certificates[i].stem + ".key")) << "\n";
      if (spec.h2) {
        c << "Protocols h2 http/1.1\n"
             // No server push from recorded "Link: rel=preload" headers: the recorded server did not push.
             "H2Push off\n";
      }
    }
    c << "</VirtualHost>\n";
  }
  return c.str();
}
}  // namespace

std::vector<std::vector<ReplayServerSpec>> apache_groups(const std::vector<ReplayServerSpec>& servers) {
  std::vector<std::vector<ReplayServerSpec>> groups;
  for (size_t i = 0; i < servers.size(); i += kEndpointsPerApache) {
    groups.emplace_back(
        servers.begin() + static_cast<std::ptrdiff_t>(i),
        servers.begin() + static_cast<std::ptrdiff_t>(std::min(servers.size(), i + kEndpointsPerApache)));
  }
  return groups;
}

std::string apache_server_name(const ReplayServerSpec& spec) {
  return spec.https ? server_certificates(spec).front().names.front() : spec.ip;
}

std::vector<ServerCertificate> server_certificates(const ReplayServerSpec& spec) {
  const std::string stem = apache_file_stem(spec);
  if (!spec.https || spec.certificates.empty()) return {{{}, certificate_names(spec), stem}};
  auto valid = [](const std::vector<std::string>& names) {
    ReplayServerSpec only;
    only.names = names;
    std::vector<std::string> out = certificate_names(only);
    out.pop_back();  // the empty ip certificate_names appends
    return out;
  };
  std::vector<ServerCertificate> out;
  for (const ReplayCertificate& certificate : spec.certificates) {
    ServerCertificate c{valid(certificate.server_names), valid(certificate.names), ""};
    if (c.server_names.empty()) continue;
    // A certificate names at least the hosts it is presented for.
    for (const std::string& n : c.server_names)
      if (std::find(c.names.begin(), c.names.end(), n) == c.names.end()) c.names.push_back(n);
    c.stem = out.empty() ? stem : stem + "-" + std::to_string(out.size());
    out.push_back(std::move(c));
  }
  if (out.empty()) return {{{}, certificate_names(spec), stem}};
  out.front().names.push_back(spec.ip);  // the default one also answers clients that use the address
  return out;
}

std::string apache_file_stem(const ReplayServerSpec& spec) {
  return "apache-" + spec.ip + "-" + std::to_string(spec.port);
}

std::vector<std::string> certificate_names(const ReplayServerSpec& spec) {
  std::vector<std::string> names;
  for (const std::string& name : spec.names) {
    const std::string n =
        ascii_lowercase(name.size() > 1 && name.back() == '.' ? name.substr(0, name.size() - 1) : name);
    if (is_host_name(n) && !Ipv4::parse(n) && std::find(names.begin(), names.end(), n) == names.end()) {
      names.push_back(n);
    }
  }
  names.push_back(spec.ip);
  return names;
}

unsigned apache_start_processes(size_t instances) {
  return instances >= 8 ? 1u : static_cast<unsigned>(8 / std::max<size_t>(instances, 1));
}

std::string apache_configuration(const std::vector<ReplayServerSpec>& specs, const ApacheFiles& files,
                                 size_t instances) {
  if (specs.empty()) throw std::invalid_argument("apache_configuration needs at least one server");
  const fs::path& work = files.work;
  const std::string& stem = files.stem;
  auto module = [&](const char* name, const char* file) { return load_module(files, name, file); };
  const bool https = std::any_of(specs.begin(), specs.end(), [](const ReplayServerSpec& s) { return s.https; });
  const bool h2 = std::any_of(specs.begin(), specs.end(), [](const ReplayServerSpec& s) { return s.https && s.h2; });
  std::ostringstream c;
  c << "# Apache httpd for " << specs.front().ip << ":" << specs.front().port;
  if (specs.size() > 1) c << " and " << specs.size() - 1 << (specs.size() == 2 ? " other IP:port" : " other IP:ports");
  c << (https ? " (HTTPS" : " (HTTP") << (h2 ? ", HTTP/2)" : ")")
    << ", written by mm-replay: every request goes to the\n"
       "# replay matcher over FastCGI.\n"
    << "ServerRoot " << config_quoted(work) << "\n"
    << "DefaultRuntimeDir " << config_quoted(work) << "\n"
    << "PidFile " << config_quoted(work / (stem + ".pid"))
    << "\n"
    // In shared memory: lock files would cost a file creation per mutex per instance.
    << "Mutex pthread default\n"
    << "ErrorLog " << config_quoted(work / (stem + ".log")) << "\n"
    << "LogLevel warn\n"
    // Each virtual host has its own (apache_server_name); Apache uses them only in answers it
    // makes itself: the matcher sees the client's Host.
    << "ServerName " << apache_server_name(specs.front()) << "\n"
    << "DocumentRoot " << config_quoted(work) << "\n"
    << module("mpm_worker_module", "mod_mpm_worker.so")
    << module("authz_core_module", "mod_authz_core.so")  // without it every request fails: AH00025
    << module("proxy_module", "mod_proxy.so")
    << module("proxy_fcgi_module", "mod_proxy_fcgi.so")
    // Add as little as possible to what the matcher answers: "Server: Apache" only where the
    // recorded response has no Server header (and Date likewise), no error-page signature.
    << "ServerTokens Prod\n"
       "ServerSignature Off\n"
       "Timeout 60\n"
       "KeepAlive On\n"
       "MaxKeepAliveRequests 0\n"
       "KeepAliveTimeout 30\n"
       // Recorded URLs and cookies can be long; Apache's 8 KB limits would answer 414/400 instead.
       "LimitRequestLine 65536\n"
       "LimitRequestFieldSize 65536\n"
       // Range requests are the matcher's (replay_range.hh): Apache must not cut a whole 200 it
       // answers (several ranges, or a failed If-Range) into ranges of its own.
       "MaxRanges none\n"
       // %2F in a path: forward it (the default answers 404 without asking the matcher).
       "AllowEncodedSlashes NoDecode\n"
    // The worker MPM, not event: under load (all of a process's threads busy) event closes
    // idle keep-alive connections, which a client that does not retry (h2load, a script)
    // sees as errors (bench/load: 10,000 requests over 200 connections lost 80 % of them;
    // event failed beyond 30 connections). Worker keeps each connection on its thread, and
    // further connections wait in the listen queue until a thread is free or Apache has
    // added a process (it checks once a second, adding 1, 2, 4... at a time; MinSpareThreads
    // 16 makes it add one while 16 threads are still idle). Processes of 32 threads, up to
    // 16 (512 connections at once; a browser keeps at most 256 open); at first
    // apache_start_processes. Each thread costs start-up time: 64 threads per process instead
    // of 32 made 100 instances start 15% slower.
    << "StartServers " << apache_start_processes(instances)
    << "\n"
       "ServerLimit 16\n"
       "ThreadLimit 32\n"
       "ThreadsPerChild 32\n"
       "MaxRequestWorkers 512\n"
       "MinSpareThreads 16\n"
       "MaxSpareThreads 256\n"
    // No enablereuse: a fresh unix-socket connection per request costs microseconds, and the
    // matcher then never has a thread held by an idle kept-open connection.
    << "ProxyPass \"/\" " << config_quoted("unix:" + files.socket.string() + "|fcgi://localhost/")
    << "\n"
    // Keep the matcher's Content-Length instead of re-framing the body as chunked (and closing
    // HTTP/1.0 keep-alive connections), which Apache 2.4.59 and later do with CGI-like back ends
    // unless told to trust them.
    << module("env_module", "mod_env.so") << "SetEnv ap_trust_cgilike_cl 1\n";
  if (https) {
    c << module("socache_shmcb_module", "mod_socache_shmcb.so")
      << module("ssl_module", "mod_ssl.so")
      // Session resumption, as the recorded servers most likely allowed.
      << "SSLSessionCache "
      << config_quoted("shmcb:" + (files.work / (files.stem + ".ssl-cache")).string() + "(512000)") << "\n";
  }
  if (h2) {
    c << module("http2_module", "mod_http2.so")
      // HTTP/2 workers are started when streams need them, not all at start-up (8% faster
      // start of 100 instances).
      << "H2MinWorkers 1\n";
  }
  for (const ReplayServerSpec& spec : specs) c << virtual_host(spec, files);
  return c.str();
}

std::vector<std::string> required_apache_modules(const std::vector<ReplayServerSpec>& servers) {
  if (servers.empty()) return {};
  std::vector<std::string> modules{"mod_mpm_worker.so", "mod_authz_core.so", "mod_proxy.so", "mod_proxy_fcgi.so",
                                   "mod_env.so"};
  if (std::any_of(servers.begin(), servers.end(), [](const ReplayServerSpec& s) { return s.https; })) {
    modules.insert(modules.end(), {"mod_ssl.so", "mod_socache_shmcb.so"});
  }
  if (std::any_of(servers.begin(), servers.end(), [](const ReplayServerSpec& s) { return s.https && s.h2; })) {
    modules.push_back("mod_http2.so");
  }
  return modules;
}

void require_plain_path(const fs::path& path) {
  for (unsigned char c : path.string()) {
    if (c == '"' || c == '\\' || c == '|' || c < 0x20 || c == 0x7f) {
      throw UserError(
          "cannot use " + path.string() +
          " for replay's servers: Apache cannot quote its name; set TMPDIR to a plain directory such as /tmp");
    }
  }
}

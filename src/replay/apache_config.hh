// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Apache httpd's configuration for one instance of replay's servers, as text: everything the
// instance needs (modules, where its files are, limits), one IP-based virtual host per recorded
// IP:port it serves (its own Listen, TLS and certificate, HTTP/2), and a ProxyPass sending every
// request to the replay matcher over FastCGI. One instance serves up to kEndpointsPerApache
// IP:ports: 100 Apaches of one virtual host each took 0.5 s of a replay's start on 2 cores (each
// loads OpenSSL and its modules, twice), one Apache with 100 virtual hosts 35 ms. Pure functions,
// no files touched: apache_server.cc writes what they return.
#include <filesystem>
#include <string>
#include <vector>

#include "replay/replay_server_spec.hh"

// Where one instance's files are and what it is called.
struct ApacheFiles {
  std::filesystem::path modules;  // the directory of Apache's modules (mod_*.so)
  std::filesystem::path work;     // the work directory: ServerRoot, pid file, log, certificate, key
  std::string stem;               // the instance's file names in work: STEM.pid, STEM.log, STEM.pem, ...
  std::filesystem::path socket;   // the matcher's FastCGI unix socket
};

// The most IP:ports one Apache serves: each costs it a listening socket, and its processes keep
// well under the usual limit of 1024 descriptors with 512 connections as well.
inline constexpr size_t kEndpointsPerApache = 128;

// The servers split into the instances that serve them: consecutive groups of at most
// kEndpointsPerApache, in the order given. None for none.
std::vector<std::vector<ReplayServerSpec>> apache_groups(const std::vector<ReplayServerSpec>& servers);

// "apache-IP-PORT": the stem of an IP:port's certificate and key in the work directory, and of
// the files (configuration, pid, log) of the instance whose first IP:port it is.
std::string apache_file_stem(const ReplayServerSpec& spec);

// The names an HTTPS server's certificate carries: the spec's host names (lower case, trailing dot
// dropped, invalid ones and IP literals left out, each once, in order), then its ip. The first is
// also its ServerName.
std::vector<std::string> certificate_names(const ReplayServerSpec& spec);

// The certificates of an HTTPS IP:port: as recorded (spec.certificates, names checked as
// certificate_names does; each also names the hosts it is presented for; the first also carries
// the ip and answers any other name), or one naming every host (certificate_names). Their files
// are STEM.pem/.key, STEM-1.pem/.key, ... (STEM: apache_file_stem).
struct ServerCertificate {
  std::vector<std::string> server_names;  // the SNI names it is presented for (empty: every name)
  std::vector<std::string> names;         // the names it carries
  std::string stem;
};
std::vector<ServerCertificate> server_certificates(const ReplayServerSpec& spec);

// The name an IP:port's virtual host answers as: its certificate's first name (HTTPS; mod_ssl warns,
// AH01909, when they differ), else its address.
std::string apache_server_name(const ReplayServerSpec& spec);

// The whole configuration of one instance serving `specs` (at least one). Nothing is read from
// /etc/apache2: every path is absolute. UserError if a path cannot be quoted in it.
// `instances` is how many Apaches the replay runs (apache_start_processes).
std::string apache_configuration(const std::vector<ReplayServerSpec>& specs, const ApacheFiles& files,
                                 size_t instances);

// How many processes (of 32 threads) each instance starts with: a replay of few servers
// (--single-server: one per port) gets its threads at once, so that a browser's burst of
// connections to one server (more than 32: many host names on one address) is not queued while
// Apache adds processes (once a second); many servers start one each, as a browser opens a few
// connections to each. 8 / instances, at least 1.
unsigned apache_start_processes(size_t instances);

// The module files (in the modules directory) that serving `servers` needs.
std::vector<std::string> required_apache_modules(const std::vector<ReplayServerSpec>& servers);

// UserError unless `path` can appear in Apache's configuration: its syntax has no escape for
// '"', '\\' or control characters, and '|' would end the socket path in ProxyPass.
void require_plain_path(const std::filesystem::path& path);

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Apache httpd's configuration for one replay server, as text: everything the instance needs
// (modules, where its files are, TLS, HTTP/2, limits) and a ProxyPass sending every request to
// the replay matcher over FastCGI. Pure functions, no files touched: apache_server.cc writes
// what they return.
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

// "apache-IP-PORT": the stem of an instance's files in the work directory.
std::string apache_file_stem(const ReplayServerSpec& spec);

// The names an HTTPS server's certificate carries: the spec's host names (lower case, trailing dot
// dropped, invalid ones and IP literals left out, each once, in order), then its ip. The first is
// also its ServerName.
std::vector<std::string> certificate_names(const ReplayServerSpec& spec);

// The whole configuration of one instance. Nothing is read from /etc/apache2: every path is
// absolute. UserError if a path cannot be quoted in it.
// `instances` is how many Apaches the replay runs (apache_start_processes).
std::string apache_configuration(const ReplayServerSpec& spec, const std::string& server_name, const ApacheFiles& files,
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

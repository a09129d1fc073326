// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Where and on what a measurement ran, recorded with each of a sweep's loads and runs so that
// results merged from several machines (a cluster's nodes) can be checked for machine effects.
#include <nlohmann/json_fwd.hpp>
#include <string>

struct HostFacts {
  std::string host;      // uname's node name
  std::string kernel;    // uname's release
  std::string cpu;       // /proc/cpuinfo's first model name ("unknown" without one)
  int cpus = 0;          // the CPUs this process may run on (sched_getaffinity)
  double load1 = 0;      // the 1-minute load average, now
  std::string mahimahi;  // this build's version

  bool operator==(const HostFacts&) const = default;
};

// This machine's, now.
HostFacts host_facts();

// As a JSON object {"host", "kernel", "cpu", "cpus", "load1", "mahimahi"}; reading takes what is
// there (texts bounded, numbers of the right type) and leaves the rest empty.
void to_json(nlohmann::json& out, const HostFacts& facts);
void from_json(const nlohmann::json& in, HostFacts& facts);

// The CSV columns "host,kernel,cpu,cpus,load1,mahimahi" (no newline) and a row's fields.
std::string host_csv_header();
std::string host_csv_fields(const HostFacts& facts);

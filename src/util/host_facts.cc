// SPDX-License-Identifier: GPL-3.0-or-later
// Where a measurement ran (see host_facts.hh).
#include "util/host_facts.hh"

#include <sched.h>
#include <sys/utsname.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "util/csv.hh"
#include "util/text.hh"

namespace {
constexpr size_t kMaxName = 64, kMaxCpu = 100;

std::string text_member(const nlohmann::json& in, const char* name, size_t limit) {
  const auto found = in.find(name);
  return found != in.end() && found->is_string() ? printable(found->get<std::string>(), limit) : std::string();
}
}  // namespace

HostFacts host_facts() {
  HostFacts facts;
  utsname u{};
  ::uname(&u);
  facts.host = printable(u.nodename, kMaxName);
  facts.kernel = printable(u.release, kMaxName);
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; facts.cpu.empty() && std::getline(info, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos)
      facts.cpu = printable(std::string(trim_blanks(std::string_view(line).substr(line.find(':') + 1))), kMaxCpu);
  if (facts.cpu.empty()) facts.cpu = "unknown";
  cpu_set_t set;
  facts.cpus = ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
  std::ifstream loadavg("/proc/loadavg");
  std::string load;
  std::getline(loadavg, load);
  facts.load1 = std::strtod(load.substr(0, 32).c_str(), nullptr);
  facts.mahimahi = PACKAGE_VERSION;
  return facts;
}

void to_json(nlohmann::json& out, const HostFacts& facts) {
  out = {{"host", facts.host}, {"kernel", facts.kernel}, {"cpu", facts.cpu},
         {"cpus", facts.cpus}, {"load1", facts.load1},   {"mahimahi", facts.mahimahi}};
}

void from_json(const nlohmann::json& in, HostFacts& facts) {
  facts = HostFacts{};
  if (!in.is_object()) return;
  facts.host = text_member(in, "host", kMaxName);
  facts.kernel = text_member(in, "kernel", kMaxName);
  facts.cpu = text_member(in, "cpu", kMaxCpu);
  facts.mahimahi = text_member(in, "mahimahi", kMaxName);
  if (const auto cpus = in.find("cpus"); cpus != in.end() && cpus->is_number_integer())
    facts.cpus = static_cast<int>(std::clamp<int64_t>(cpus->get<int64_t>(), 0, 1 << 20));
  if (const auto load = in.find("load1"); load != in.end() && load->is_number()) facts.load1 = load->get<double>();
}

std::string host_csv_header() { return "host,kernel,cpu,cpus,load1,mahimahi"; }

std::string host_csv_fields(const HostFacts& facts) {
  return csv_field(facts.host) + "," + csv_field(facts.kernel) + "," + csv_field(facts.cpu) + "," +
         std::to_string(facts.cpus) + "," + csv_number(facts.load1, 2) + "," + csv_field(facts.mahimahi);
}

// SPDX-License-Identifier: GPL-3.0-or-later
#include "monkey/workload.hh"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "packet/peer_paths.hh"
#include "util/exception.hh"
#include "util/text.hh"

namespace {
std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}
std::string ms(Nanos ns) { return fixed(static_cast<double>(ns) / 1e6, 3); }
std::string ms(const std::optional<Nanos>& ns) { return ns ? ms(*ns) : "-"; }
std::string yes_no(bool b) { return b ? "1" : "0"; }
// "N,N,...", or "-" for none.
std::string numbers_text(const std::vector<uint64_t>& numbers) {
  if (numbers.empty()) return "-";
  std::string text;
  for (uint64_t n : numbers) text += (text.empty() ? "" : ",") + std::to_string(n);
  return text;
}
// "BYTES,BYTES@PAUSE-MS,...": each part's bytes, and the application's pause before it ("-": none).
std::string parts_text(const std::vector<ResponsePart>& parts) {
  if (parts.empty()) return "-";
  std::string text;
  for (size_t i = 0; i < parts.size(); i++) {
    if (i) text += ",";
    text += std::to_string(parts[i].bytes);
    if (i) text += "@" + ms(parts[i].pause);
  }
  return text;
}
}  // namespace

std::string workload_header(const std::string& capture_description) {
  return "# mahimahi monkey workload 3\n"
         "# capture: " +
         capture_description +
         "\n"
         "# C\tid\tstart_s\tclient\tclient_port\tserver\tserver_port\tended_by\trtt_ms\thandshake_rtt_ms\trtt_samples\t"
         "bandwidth_mbps\tbandwidth_samples\tloss\tserver_segments\tretransmissions\tspurious\tclient_mss\tserver_mss\t"
         "client_wscale\tserver_wscale\tsack\ttimestamps\tecn\tce_marks\tclient_window\tacks_per_segment\t"
         "client_bytes\tserver_bytes\texchanges\tduration_ms\tflags\tnodelay\tlost_packets\n"
         "# E\tid\tindex\trequest_start_ms\trequest_end_ms\trequest_bytes\tresponse_start_ms\tresponse_end_ms\t"
         "response_bytes\tserver_delay_ms\tresponse_time_ms\thttp\tresponse_parts\trequest\thost\n";
}

std::string workload_lines(const MonkeyConnection& c) {
  std::string flags;
  for (const std::string& f : c.flags) flags += (flags.empty() ? "" : ",") + f;
  std::string out =
      "C\t" + std::to_string(c.id) + "\t" + fixed(static_cast<double>(c.start) / 1e9, 6) + "\t" +
      c.client.address_text() + "\t" + std::to_string(c.client.port) + "\t" + c.server.address_text() + "\t" +
      std::to_string(c.server.port) + "\t" + c.ended_by + "\t" + ms(c.rtt) + "\t" + ms(c.handshake_rtt) + "\t" +
      std::to_string(c.rtt_samples) + "\t" + (c.bandwidth_bps ? fixed(*c.bandwidth_bps / 1e6, 3) : "-") + "\t" +
      std::to_string(c.bandwidth_samples) + "\t" + (c.loss ? fixed(*c.loss, 4) : "-") + "\t" +
      std::to_string(c.server_segments) + "\t" + std::to_string(c.retransmissions) + "\t" + std::to_string(c.spurious) +
      "\t" + std::to_string(c.client_mss) + "\t" + std::to_string(c.server_mss) + "\t" +
      std::to_string(c.client_window_scale) + "\t" + std::to_string(c.server_window_scale) + "\t" + yes_no(c.sack) +
      "\t" + yes_no(c.timestamps) + "\t" + yes_no(c.ecn) + "\t" + std::to_string(c.ce_marks) + "\t" +
      std::to_string(c.client_window) + "\t" +
      (c.acked_segments ? fixed(static_cast<double>(c.client_acks) / c.acked_segments, 3) : "-") + "\t" +
      std::to_string(c.client_bytes) + "\t" + std::to_string(c.server_bytes) + "\t" +
      std::to_string(c.exchanges.size()) + "\t" + ms(c.end - c.start) + "\t" + (flags.empty() ? "-" : flags) + "\t" +
      yes_no(c.nodelay) + "\t" + numbers_text(c.lost_packets) + "\n";
  for (size_t i = 0; i < c.exchanges.size(); i++) {
    const MonkeyExchange& e = c.exchanges[i];
    const bool answered = e.response_start.has_value();
    out += "E\t" + std::to_string(c.id) + "\t" + std::to_string(i + 1) + "\t" + ms(e.request_start - c.start) + "\t" +
           ms(e.request_end - c.start) + "\t" + std::to_string(e.request_bytes) + "\t" +
           (answered ? ms(*e.response_start - c.start) : "-") + "\t" +
           (answered ? ms(*e.response_end - c.start) : "-") + "\t" + std::to_string(e.response_bytes) + "\t" +
           (answered && e.request_bytes ? ms(std::max<Nanos>(0, *e.response_start - e.request_end)) : "-") + "\t" +
           (answered ? ms(*e.response_end - e.request_start) : "-") + "\t" + yes_no(e.http) + "\t" +
           parts_text(e.parts) + "\t" + (e.target.empty() ? "-" : e.method + " " + e.target) + "\t" +
           (e.host.empty() ? "-" : e.host) + "\n";
  }
  return out;
}

namespace {
std::string shortest(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.10g", value);
  return text;
}

std::vector<std::string_view> tab_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  for (size_t at = 0;;) {
    const size_t tab = line.find('\t', at);
    fields.push_back(line.substr(at, tab == std::string_view::npos ? std::string_view::npos : tab - at));
    if (tab == std::string_view::npos) return fields;
    at = tab + 1;
  }
}

class LineReader {
 public:
  LineReader(std::vector<std::string_view> fields, std::string where)
      : fields_(std::move(fields)), where_(std::move(where)) {}
  std::string_view text(size_t i) const { return fields_[i]; }
  double number(size_t i, double max, std::string_view name) const {
    double value = -1;
    const std::string_view t = fields_[i];
    const auto [end, error] = std::from_chars(t.data(), t.data() + t.size(), value);
    if (t.empty() || error != std::errc() || end != t.data() + t.size() || !(value >= 0) || value > max)
      throw UserError(where_ + ": " + std::string(name) + " \"" + printable(t, 40) + "\" is not a number from 0 to " +
                      shortest(max));
    return value;
  }
  std::optional<double> optional_number(size_t i, double max, std::string_view name) const {
    if (fields_[i] == "-") return std::nullopt;
    return number(i, max, name);
  }
  uint64_t count(size_t i, uint64_t max, std::string_view name) const {
    const std::optional<uint64_t> v = decimal_value(fields_[i]);
    if (!v || *v > max)
      throw UserError(where_ + ": " + std::string(name) + " \"" + printable(fields_[i], 40) +
                      "\" is not a whole number up to " + std::to_string(max));
    return *v;
  }
  const std::string& where() const { return where_; }
  size_t size() const { return fields_.size(); }

 private:
  std::vector<std::string_view> fields_;
  std::string where_;
};

// Format 1 had no nodelay and lost_packets columns and no response parts; format 2 adds them at
// the ends of the lines, format 3 the request's line and host.
constexpr size_t kConnectionFields1 = 32, kExchangeFields1 = 12;

// "N,N,..." in increasing order (at most kMaxLostPackets), or "-".
std::vector<uint64_t> numbers_of(const LineReader& r, size_t i) {
  std::vector<uint64_t> numbers;
  std::string_view text = r.text(i);
  if (text == "-") return numbers;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::optional<uint64_t> n = decimal_value(text.substr(0, comma));
    if (!n || *n == 0 || numbers.size() == kMaxLostPackets || (!numbers.empty() && *n <= numbers.back()))
      throw UserError(r.where() + ": lost_packets: \"" + printable(text.substr(0, comma), 40) +
                      "\" is not the next of increasing numbers from 1 (" + std::to_string(kMaxLostPackets) +
                      " at most)");
    numbers.push_back(*n);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
  }
  return numbers;
}

WorkloadConnection connection_of(const LineReader& r) {
  WorkloadConnection c;
  c.id = r.count(1, UINT64_MAX, "id");
  c.start_s = r.number(2, 1e12, "start_s");  // capture time: seconds since 1970
  c.client = std::string(r.text(3));
  c.client_port = static_cast<uint16_t>(r.count(4, 65535, "client_port"));
  c.server = std::string(r.text(5));
  c.server_port = static_cast<uint16_t>(r.count(6, 65535, "server_port"));
  if (c.client.empty() || c.client.size() > 64 || c.server.empty() || c.server.size() > 64)
    throw UserError(r.where() + ": the client or server address is missing or too long");
  c.rtt_ms = r.optional_number(8, 2 * kMaxPathDelayMs, "rtt_ms");  // a replay's path: half each way
  c.bandwidth_mbps = r.optional_number(11, 1e6, "bandwidth_mbps");
  c.loss = r.optional_number(13, 1, "loss");
  c.server_segments = r.count(14, UINT64_MAX / 4, "server_segments");
  c.retransmissions = r.count(15, UINT64_MAX / 4, "retransmissions");
  c.flags = std::string(r.text(31).substr(0, 1000));
  if (r.size() > kConnectionFields1) {
    c.nodelay = r.count(32, 1, "nodelay") == 1;
    c.lost_packets = numbers_of(r, 33);
    c.has_lost_packets = true;
  }
  return c;
}

// "BYTES,BYTES@PAUSE-MS,...", adding up to the response's bytes.
std::vector<WorkloadPart> parts_of(const LineReader& r, uint64_t response_bytes) {
  std::vector<WorkloadPart> parts;
  std::string_view text = r.text(12);
  uint64_t total = 0;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    const size_t at = item.find('@');
    const std::optional<uint64_t> bytes = decimal_value(item.substr(0, at));
    double pause = 0;
    if (at != std::string_view::npos) {
      const std::string_view p = item.substr(at + 1);
      const auto [end, error] = std::from_chars(p.data(), p.data() + p.size(), pause);
      if (p.empty() || error != std::errc() || end != p.data() + p.size() || !(pause >= 0) || pause > kMaxWorkloadMs)
        throw UserError(r.where() + ": response_parts: \"" + printable(p, 40) + "\" is not a pause in ms");
    }
    if (!bytes || *bytes > kMaxWorkloadBytes || parts.size() == kMaxResponseParts)
      throw UserError(r.where() + ": response_parts: \"" + printable(item, 40) + "\" is not a part's bytes[@pause] (" +
                      std::to_string(kMaxResponseParts) + " parts at most)");
    parts.push_back({*bytes, pause});
    total += *bytes;
  }
  if (total != response_bytes)
    throw UserError(r.where() + ": the response's parts add up to " + std::to_string(total) + " bytes, not " +
                    std::to_string(response_bytes));
  return parts;
}

WorkloadExchange exchange_of(const LineReader& r) {
  WorkloadExchange e;
  e.index = static_cast<uint32_t>(r.count(2, 100'000'000, "index"));
  e.request_start_ms = r.number(3, kMaxWorkloadMs, "request_start_ms");
  e.request_end_ms = r.number(4, kMaxWorkloadMs, "request_end_ms");
  e.request_bytes = r.count(5, kMaxWorkloadBytes, "request_bytes");
  e.response_start_ms = r.optional_number(6, kMaxWorkloadMs, "response_start_ms");
  e.response_end_ms = r.optional_number(7, kMaxWorkloadMs, "response_end_ms");
  e.response_bytes = r.count(8, kMaxWorkloadBytes, "response_bytes");
  e.response_time_ms = r.optional_number(10, kMaxWorkloadMs, "response_time_ms");
  if (r.size() > kExchangeFields1 && r.text(12) != "-") e.parts = parts_of(r, e.response_bytes);
  if (r.size() > kExchangeFields1 + 1) {
    // "METHOD TARGET" and the host, or "-" each.
    auto visible = [](std::string_view t) {
      return std::all_of(t.begin(), t.end(), [](char ch) { return ch > ' ' && ch < 0x7f; });
    };
    const std::string_view request = r.text(13), host = r.text(14);
    if (request != "-") {
      const size_t space = request.find(' ');
      const std::string_view method = request.substr(0, space),
                             target = space == std::string_view::npos ? "" : request.substr(space + 1);
      // A method as HTTP/1.x servers take them (capitals, '-', '_'), a target of visible ASCII.
      const bool method_ok = std::all_of(method.begin(), method.end(),
                                         [](char ch) { return (ch >= 'A' && ch <= 'Z') || ch == '-' || ch == '_'; });
      if (method.empty() || method.size() > 32 || !method_ok || target.empty() || target.size() > kMaxRequestTarget ||
          !visible(target))
        throw UserError(r.where() + ": request: \"" + printable(request, 60) +
                        "\" is not \"METHOD TARGET\" (a method in capitals, a target of visible ASCII, " +
                        std::to_string(kMaxRequestTarget) + " bytes at most) or -");
      e.method = std::string(method);
      e.target = std::string(target);
    }
    if (host != "-") {
      if (host.empty() || host.size() > kMaxRequestHost || !visible(host))
        throw UserError(r.where() + ": host: \"" + printable(host, 60) + "\" is not a host (visible ASCII) or -");
      e.host = std::string(host);
    }
  }
  if (e.request_end_ms < e.request_start_ms || (e.response_end_ms && e.response_end_ms < e.response_start_ms))
    throw UserError(r.where() + ": an exchange ends before it starts");
  return e;
}
}  // namespace

std::vector<WorkloadConnection> parse_workload(std::string_view text, const std::string& source) {
  constexpr std::string_view kFormat = "# mahimahi monkey workload ";
  int format = 0;
  for (int f = 1; f <= 3; f++)
    if (text.starts_with(std::string(kFormat) + std::to_string(f) + "\n")) format = f;
  if (format == 0)
    throw UserError(source + " is not a workload of mm-monkey see (its first line is not \"" + std::string(kFormat) +
                    "1\", 2 or 3); make one with mm-monkey see CAPTURE -o WORKLOAD");
  const size_t connection_fields = kConnectionFields1 + (format >= 2 ? 2 : 0);
  const size_t exchange_fields = kExchangeFields1 + (format >= 2 ? 1 : 0) + (format >= 3 ? 2 : 0);
  std::vector<WorkloadConnection> connections;
  size_t line_number = 0, exchanges = 0;
  while (!text.empty()) {
    const std::string_view line = next_line(text);
    line_number++;
    if (line.empty() || line[0] == '#') continue;
    const std::string where = source + " line " + std::to_string(line_number);
    std::vector<std::string_view> fields = tab_fields(line);
    if (fields[0] == "C") {
      if (fields.size() != connection_fields)
        throw UserError(where + ": a connection's line has " + std::to_string(connection_fields) + " fields, not " +
                        std::to_string(fields.size()));
      if (connections.size() == kMaxWorkloadConnections)
        throw UserError(source + ": more than " + std::to_string(kMaxWorkloadConnections) +
                        " connections; split the capture (editcap -c) and replay the parts");
      connections.push_back(connection_of(LineReader(std::move(fields), where)));
    } else if (fields[0] == "E") {
      if (fields.size() != exchange_fields)
        throw UserError(where + ": an exchange's line has " + std::to_string(exchange_fields) + " fields, not " +
                        std::to_string(fields.size()));
      const LineReader r(std::move(fields), where);
      if (connections.empty() || r.count(1, UINT64_MAX, "id") != connections.back().id)
        throw UserError(where + ": an exchange not right after its connection's line (or other exchanges of it)");
      if (++exchanges > kMaxWorkloadExchanges)
        throw UserError(source + ": more than " + std::to_string(kMaxWorkloadExchanges) + " exchanges");
      connections.back().exchanges.push_back(exchange_of(r));
    } else {
      throw UserError(where + ": a line starts with C (a connection), E (an exchange) or # (a comment), not \"" +
                      printable(fields[0].substr(0, 20), 20) + "\"");
    }
  }
  return connections;
}

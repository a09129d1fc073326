// SPDX-License-Identifier: GPL-3.0-or-later
#include "monkey/workload.hh"

#include <cstdio>

namespace {
std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}
std::string ms(Nanos ns) { return fixed(static_cast<double>(ns) / 1e6, 3); }
std::string ms(const std::optional<Nanos>& ns) { return ns ? ms(*ns) : "-"; }
std::string yes_no(bool b) { return b ? "1" : "0"; }
}  // namespace

std::string workload_header(const std::string& capture_description) {
  return "# mahimahi monkey workload 1\n"
         "# capture: " +
         capture_description +
         "\n"
         "# C\tid\tstart_s\tclient\tclient_port\tserver\tserver_port\tended_by\trtt_ms\thandshake_rtt_ms\trtt_samples\t"
         "bandwidth_mbps\tbandwidth_samples\tloss\tserver_segments\tretransmissions\tspurious\tclient_mss\tserver_mss\t"
         "client_wscale\tserver_wscale\tsack\ttimestamps\tecn\tce_marks\tclient_window\tacks_per_segment\t"
         "client_bytes\tserver_bytes\texchanges\tduration_ms\tflags\n"
         "# E\tid\tindex\trequest_start_ms\trequest_end_ms\trequest_bytes\tresponse_start_ms\tresponse_end_ms\t"
         "response_bytes\tserver_delay_ms\tresponse_time_ms\thttp\n";
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
      std::to_string(c.exchanges.size()) + "\t" + ms(c.end - c.start) + "\t" + (flags.empty() ? "-" : flags) + "\n";
  for (size_t i = 0; i < c.exchanges.size(); i++) {
    const MonkeyExchange& e = c.exchanges[i];
    const bool answered = e.response_start.has_value();
    out += "E\t" + std::to_string(c.id) + "\t" + std::to_string(i + 1) + "\t" + ms(e.request_start - c.start) + "\t" +
           ms(e.request_end - c.start) + "\t" + std::to_string(e.request_bytes) + "\t" +
           (answered ? ms(*e.response_start - c.start) : "-") + "\t" +
           (answered ? ms(*e.response_end - c.start) : "-") + "\t" + std::to_string(e.response_bytes) + "\t" +
           (answered && e.request_bytes ? ms(*e.response_start - e.request_end) : "-") + "\t" +
           (answered ? ms(*e.response_end - e.request_start) : "-") + "\t" + yes_no(e.http) + "\n";
  }
  return out;
}

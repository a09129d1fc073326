// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: mm-link logs as the graph tools read them (graphing/link_log_reader.hh),
// and what mm-throughput-graph and mm-delay-graph compute from them.
#include <cstdint>
#include <string>

#include "graphing/link_log_reader.hh"
#include "graphing/throughput_plot.hh"
#include "util/exception.hh"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const LinkLog log = LinkLog::parse(text, "fuzz.log");
    // The signal delay takes a value per ms of the log's span: up to 24 hours (690 MB) for a
    // log the reader accepts. A minute exercises the same code at a thousandth of the cost.
    if (log.last - log.first <= 60'000) {
      (void)summarize(log);
      (void)signal_delays(log);
    }
    (void)delay_text(12.5, log);
    const std::vector<LabeledLog> logs{{"fuzz", log}};
    (void)empty_logs_note(logs);
    const ThroughputBins bins = bin_throughput(log, 500, "500");
    (void)throughput_csv(logs, {bins});
  } catch (const UserError&) {
  } catch (const UsageError&) {
  }
  return 0;
}

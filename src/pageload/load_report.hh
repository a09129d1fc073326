// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One page load's results as mm-pageload reports them and mm-sweep reads them back: the row of
// --csv and the object of --json (the same fields, the same names), and the summary (median,
// p75, p95) printed on standard output. Times are milliseconds since the navigation started.
#include <cstddef>
#include <istream>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "util/host_facts.hh"
#include "util/statistics.hh"  // percentile (nearest rank), which the summary uses

struct LoadResult {
  enum class Status { Ok, Timeout, Error };
  std::string url;  // as given on the command line
  int run = 1;      // 1..--runs
  Status status = Status::Error;
  std::string reason;   // why, for Timeout and Error ("" for Ok)
  std::string started;  // UTC, ISO 8601 with milliseconds ("2026-11-23T09:41:07.123Z")
  // Metrics; empty when the load did not get that far (a timeout may still have an FCP).
  std::optional<double> plt_ms;                  // Navigation Timing: loadEventEnd - startTime
  std::optional<double> fcp_ms;                  // first contentful paint
  std::optional<double> lcp_ms;                  // largest contentful paint (last candidate after capture)
  std::optional<double> speed_index_ms;          // from the captured frames (pageload/speed_index.hh)
  std::optional<double> bytes;                   // bytes received from the network (encoded, with headers)
  std::optional<double> requests;                // requests that got a response or failed
  std::optional<double> origins;                 // distinct scheme://host:port among them
  std::optional<double> frames;                  // frames captured for the speed index
  std::map<std::string, std::string> protocols;  // origin -> "h1" | "h2" | "h3" (as the browser saw it)
  // Where it ran, as mm-sweep records it (at the load's start): not in mm-pageload's CSV row.
  std::optional<HostFacts> host;
};

std::string status_name(LoadResult::Status status);  // "ok", "timeout", "error"

// CSV (RFC 4180, util/csv.hh quoting): the header line, then one line per load.
// Columns, in order: url,run,status,reason,started,plt_ms,fcp_ms,lcp_ms,speed_index_ms,bytes,
// requests,origins,frames,protocols ; protocols is "origin=proto" pairs joined by ' ' in origin
// order; an absent metric is an empty field. extra_columns (mm-sweep's configuration: name and
// value, in order) come first on every line when given.
std::string load_csv_header(const std::vector<std::string>& extra_columns = {});
std::string load_csv_row(const LoadResult& load, const std::vector<std::string>& extra_values = {});

// JSON: one object per load with the same names (metrics as numbers or null, protocols as an
// object, and "host" as an object when recorded), written as a JSON array of objects by write_load_json.
void write_load_json(const std::vector<LoadResult>& loads, std::ostream& out);
// Reads what write_load_json wrote (mm-sweep reads mm-pageload's --json files back). Throws
// UserError naming `name` and what is wrong when the text is not such an array, or is longer
// than max_bytes (the default is far more than mm-pageload's 10000 runs of a few URLs write).
// Missing optional members (reason, started, metrics, protocols) read as empty; unknown members
// are ignored.
inline constexpr size_t kMaxLoadJsonBytes = 256 * 1024 * 1024;
std::vector<LoadResult> read_load_json(std::istream& in, const std::string& name, size_t max_bytes = kMaxLoadJsonBytes);

// The summary mm-pageload prints: per URL, loads ok of total, then median, p75 and p95 of each
// metric over the ok loads (nearest-rank percentiles), as aligned text.
void write_load_summary(const std::vector<LoadResult>& loads, std::ostream& out);

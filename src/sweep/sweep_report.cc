// SPDX-License-Identifier: GPL-3.0-or-later
// Writing a sweep's CSV files and plots (see sweep_report.hh).
#include "sweep/sweep_report.hh"

#include <cctype>
#include <fstream>

#include "sweep/sweep_plots.hh"
#include "util/csv.hh"
#include "util/exception.hh"

namespace {
// The number after `label` in `line` ("CPU 2143 ms" -> 2143), if any.
std::optional<double> number_after(std::string_view line, std::string_view label) {
  const size_t at = line.find(label);
  if (at == std::string_view::npos) return std::nullopt;
  size_t pos = at + label.size(), end = pos;
  while (end < line.size() && (std::isdigit(static_cast<unsigned char>(line[end])) || line[end] == '.')) end++;
  if (end == pos) return std::nullopt;
  try {
    return std::stod(std::string(line.substr(pos, end - pos)));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string optional_field(const std::optional<double>& value) { return value ? csv_number(*value, 0) : ""; }

// The end of a load's log (its Cumulus lines come last): at most 1 MiB.
std::string read_log_tail(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff keep = std::min<std::streamoff>(size, 1 << 20);
  in.seekg(size - keep);
  std::string text(static_cast<size_t>(keep), '\0');
  in.read(text.data(), keep);
  return text;
}
}  // namespace

CumulusLoadLog parse_cumulus_log(std::string_view log) {
  CumulusLoadLog parsed;
  size_t pos = 0;
  while (pos < log.size()) {
    size_t end = log.find('\n', pos);
    if (end == std::string_view::npos) end = log.size();
    const std::string_view line = log.substr(pos, end - pos);
    pos = end + 1;
    if (!line.starts_with("mm-cumulus-local: ")) continue;
    if (const size_t bulk = line.find(": bulk response of "); bulk != std::string_view::npos) {
      const std::string_view rest = line.substr(bulk);
      parsed.bulk_objects = number_after(rest, "bulk response of ");
      parsed.bulk_kib = number_after(rest, "objects, ");
      if (!parsed.bulk_kib) parsed.bulk_kib = number_after(rest, "object, ");
      parsed.bulk_ms = number_after(rest, "KiB in ");
      const size_t status = rest.find("the Remote Proxy's load ");
      if (status != std::string_view::npos) {
        const std::string_view word = rest.substr(status + 24);
        parsed.remote_status = std::string(word.substr(0, word.find_first_of(" ,;(")));
        const std::string_view after = rest.substr(status);
        parsed.remote_cpu_ms = number_after(after, "CPU ");
        // The load's time: the number before " ms, CPU".
        const size_t cpu = after.find(" ms, CPU ");
        if (cpu != std::string_view::npos) {
          size_t start = cpu;
          while (start > 0 && (std::isdigit(static_cast<unsigned char>(after[start - 1])) || after[start - 1] == '.'))
            start--;
          if (start < cpu) parsed.remote_load_ms = std::stod(std::string(after.substr(start, cpu - start)));
        }
      }
    } else if (line.find("what the page still needs goes to its origins") != std::string_view::npos) {
      const size_t colon = line.find(": ", 18);
      const size_t reason_end = line.rfind("; what the page");
      if (colon != std::string_view::npos && reason_end > colon)
        parsed.bulk_failure = std::string(line.substr(colon + 2, reason_end - colon - 2));
    } else if (line.find(" answered from bulk responses") != std::string_view::npos) {
      const size_t comma = line.find(", ");
      if (comma != std::string_view::npos) parsed.answered = number_after(line.substr(comma), ", ");
      const size_t sent = line.find(" sent to servers");
      if (sent != std::string_view::npos) {
        size_t start = sent;
        while (start > 0 && std::isdigit(static_cast<unsigned char>(line[start - 1]))) start--;
        if (start < sent) parsed.forwarded = std::stod(std::string(line.substr(start, sent - start)));
      }
    }
  }
  return parsed;
}

std::string cumulus_csv_header() {
  return "configuration,run,remote_status,remote_load_ms,remote_cpu_ms,bulk_objects,bulk_kib,bulk_ms,"
         "answered_from_bulk,sent_to_servers,bulk_failure\n";
}

std::string cumulus_csv_row(const std::string& id, int run, const CumulusLoadLog& log) {
  return csv_field(id) + "," + std::to_string(run) + "," + csv_field(log.remote_status) + "," +
         optional_field(log.remote_load_ms) + "," + optional_field(log.remote_cpu_ms) + "," +
         optional_field(log.bulk_objects) + "," + optional_field(log.bulk_kib) + "," + optional_field(log.bulk_ms) +
         "," + optional_field(log.answered) + "," + optional_field(log.forwarded) + "," + csv_field(log.bulk_failure) +
         "\n";
}

std::vector<SummaryRow> write_sweep_report(const ResultStore& store) {
  const auto loads = store.read_loads();
  std::vector<SummaryRow> rows = summarize(store.configurations(), loads);
  for (SummaryRow& row : rows) row.loads_asked = static_cast<size_t>(store.runs_of(row.config));
  write_file_atomically(store.dir() / "loads.csv", loads_csv(store.configurations(), store.queue(), loads));
  write_file_atomically(store.dir() / "summary.csv", summary_csv(rows, store.queue()));
  std::string cumulus = cumulus_csv_header();
  bool any_cumulus = false;
  for (const Configuration& c : store.configurations()) {
    if (c.variant.protocol_kind != Protocol::kCumulus) continue;
    any_cumulus = true;
    const auto it = loads.find(c.id());
    if (it == loads.end()) continue;
    for (const LoadResult& load : it->second)
      cumulus += cumulus_csv_row(c.id(), load.run, parse_cumulus_log(read_log_tail(store.log_file(c.id(), load.run))));
  }
  if (any_cumulus) write_file_atomically(store.dir() / "cumulus.csv", cumulus);
  write_named_charts(store.dir() / "plots", sweep_charts(rows, loads));
  return rows;
}

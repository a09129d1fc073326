// SPDX-License-Identifier: GPL-3.0-or-later
// Writing a sweep's CSV files and plots (see sweep_report.hh).
#include "sweep/sweep_report.hh"

#include "sweep/sweep_plots.hh"
#include "util/exception.hh"

std::vector<SummaryRow> write_sweep_report(const ResultStore& store) {
  const auto loads = store.read_loads();
  const std::vector<SummaryRow> rows = summarize(store.configurations(), loads);
  write_file_atomically(store.dir() / "loads.csv", loads_csv(store.configurations(), store.queue(), loads));
  write_file_atomically(store.dir() / "summary.csv", summary_csv(rows, store.queue()));
  const std::filesystem::path plots = store.dir() / "plots";
  std::error_code error;
  std::filesystem::create_directories(plots, error);
  if (error) throw UserError("cannot create " + plots.string() + ": " + error.message());
  for (const NamedChart& named : sweep_charts(rows, loads)) {
    for (const char* extension : {".png", ".svg"}) {
      // Drawn under a temporary name, then renamed: a reader never sees half a plot.
      const std::filesystem::path final_path = plots / (named.name + extension);
      const std::filesystem::path temporary = plots / (".tmp-" + named.name + extension);
      render_chart(named.chart, temporary.string());
      std::filesystem::rename(temporary, final_path, error);
      if (error) throw UserError("cannot write " + final_path.string() + ": " + error.message());
    }
  }
  return rows;
}

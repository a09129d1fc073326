// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Monkey's workload file: what Monkey See inferred, one line per connection ("C") followed by
// one per exchange ("E"), tab-separated, with '#' lines naming the columns (man mm-monkey,
// "WORKLOAD FILE"). Missing figures are "-". Read by awk, a spreadsheet, or Monkey Do.
#include <string>

#include "monkey/monkey_see.hh"

// The header: the format's line, the capture's description, and the two lines naming the columns.
std::string workload_header(const std::string& capture_description);
// A connection's lines.
std::string workload_lines(const MonkeyConnection& c);

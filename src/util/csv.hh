// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Fields of the CSV files the tools write (the graph tools' and mm-pageload's --csv): RFC 4180,
// comma-separated, CRLF-free (one "\n" per row), a field quoted when it holds a comma, a quote or
// a line break.
#include <string>
#include <string_view>

std::string csv_field(std::string_view text);
// value with `decimals` digits after the point; "" (an empty field: no value) for NaN.
std::string csv_number(double value, int decimals);

// SPDX-License-Identifier: GPL-3.0-or-later
// Link-layer overhead profiles and their parsing (see link_overhead.hh).
#include "packet/link_overhead.hh"

#include <charconv>

#include "util/exception.hh"
#include "util/text.hh"

std::string LinkOverhead::describe() const {
  std::string s = name + " [bytes=" + std::to_string(bytes);
  if (minimum) s += ", min=" + std::to_string(minimum);
  if (cell) s += ", cell=" + std::to_string(cell) + ", cellovh=" + std::to_string(cell_overhead);
  return s + "]";
}

LinkOverhead LinkOverhead::parse(std::string_view text, std::string_view option) {
  LinkOverhead o;
  const std::string where(option);
  size_t position = 0;
  bool first = true;
  while (position <= text.size()) {
    size_t end = text.find(',', position);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = text.substr(position, end - position);
    position = end + 1;
    const size_t equals = item.find('=');
    if (equals == std::string_view::npos) {
      if (!first)
        throw UsageError(where + ": \"" + printable(item, 40) + "\" is not NAME=NUMBER (a profile's name comes first)");
      if (item == "none") {
      } else if (item == "ethernet") {
        o.bytes = 38;
        o.minimum = 84;
      } else if (item == "atm") {
        o.bytes = 8;
        o.cell = 48;
        o.cell_overhead = 5;
      } else {
        throw UsageError(where + ": unknown profile \"" + printable(item, 40) +
                         "\" (known: none, ethernet, atm; or bytes=N[,min=N][,cell=N,cellovh=N])");
      }
      o.name = std::string(item);
      first = false;
      continue;
    }
    first = false;
    const std::string_view key = item.substr(0, equals), value = item.substr(equals + 1);
    uint32_t number = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
    // A cell of 64 KiB, or as much framing, is beyond any link layer; the bound keeps a
    // packet's charge within 32 bits.
    if (value.empty() || ec != std::errc() || ptr != value.data() + value.size() || number > 65535)
      throw UsageError(where + ": " + printable(key, 40) + " must be a whole number of bytes from 0 to 65535, not \"" +
                       printable(value, 40) + "\"");
    if (key == "bytes")
      o.bytes = number;
    else if (key == "min")
      o.minimum = number;
    else if (key == "cell")
      o.cell = number;
    else if (key == "cellovh")
      o.cell_overhead = number;
    else
      throw UsageError(where + ": unknown parameter \"" + printable(key, 40) + "\" (known: bytes, min, cell, cellovh)");
    if (o.name == "none") o.name = "custom";
  }
  if (o.cell_overhead && !o.cell) throw UsageError(where + ": cellovh needs cell (the cells' payload in bytes)");
  return o;
}

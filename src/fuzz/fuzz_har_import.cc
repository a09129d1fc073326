// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: HAR import (recording/har.hh: parse_har_text, from_har), as mm-recording
// from-har reads a browser's or an edited export. Every pair it makes must be a valid record.
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.hh"
#include "recording/har.hh"
#include "recording/record_file.hh"
#include "util/exception.hh"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const nlohmann::json har = parse_har_text(text, "fuzz.har");
    std::vector<std::string> warnings, notes;
    const std::vector<RecordedPair> pairs = from_har(har, &warnings, "fuzz.har", &notes);
    for (const RecordedPair& pair : pairs) {
      std::string why;
      const auto again = parse_owned_pair(serialize_pair(pair), &why);
      FUZZ_CHECK(again && *again == pair);
    }
  } catch (const UserError&) {
  }
  return 0;
}

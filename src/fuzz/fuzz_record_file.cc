// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: arbitrary bytes as a record file (recording/record_file.hh), as mm-replay,
// mm-recording and HAR export load them. A pair that loads must survive being written and read
// again unchanged, and be printable by mm-recording show and exportable to HAR.
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.hh"
#include "recording/har.hh"
#include "recording/inspect.hh"
#include "recording/record_file.hh"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string why;
  auto pair = parse_owned_pair(std::string(reinterpret_cast<const char*>(data), size), &why);
  if (!pair) {
    FUZZ_CHECK(!why.empty());
    return 0;
  }
  auto again = parse_owned_pair(serialize_pair(*pair), &why);
  FUZZ_CHECK(again && *again == *pair);
  for (const BodyView view : {BodyView::summary, BodyView::raw, BodyView::decoded})
    (void)describe_pair("save.fuzz", *pair, view);
  std::vector<RecordingEntry> entries{{"save.fuzz", *pair}};
  (void)recording_table(entries, false);
  (void)to_har(entries).dump();
  return 0;
}

// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: what the Remote Proxy reads from anyone who connects (cumulus/bulk.hh's
// parse_bulk_request, the head of a bulk request), what the Local Proxy reads from the
// environment (parse_bulk_remote) and from the Remote Proxy (BulkDecoder, fed in two pieces).
// A parsed request must be one the Remote Proxy can pass to its loader: an http(s) URL within
// kMaxBulkUrl bytes with no spaces or control bytes, bounded header values without line ends;
// encoded again, it parses to the same request. A decoded frame is never beyond kMaxBulkFrame.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <string>

#include "cumulus/bulk.hh"
#include "fuzz/fuzz_check.hh"
#include "util/address.hh"

namespace {
bool clean_value(const std::string& value) {
  if (value.size() > kMaxBulkHeaderValue) return false;
  for (const char c : value)
    if (c == '\r' || c == '\n' || c == '\0') return false;
  return true;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  std::string why;
  if (const std::optional<BulkRequest> request = parse_bulk_request(input, &why)) {
    FUZZ_CHECK(request->url.starts_with("http://") || request->url.starts_with("https://"));
    FUZZ_CHECK(request->url.size() <= kMaxBulkUrl);
    for (const char c : request->url) FUZZ_CHECK(static_cast<unsigned char>(c) > 0x20 && c != 0x7f);
    FUZZ_CHECK(clean_value(request->user_agent) && clean_value(request->accept_language));
    FUZZ_CHECK(request->token.size() <= kMaxBulkHeaderValue);
    const std::string again = encode_bulk_request(*request, "127.0.0.1:1");
    const std::optional<BulkRequest> reparsed = parse_bulk_request(again, &why);
    FUZZ_CHECK(reparsed);
    FUZZ_CHECK(reparsed->url == request->url);
    FUZZ_CHECK(reparsed->user_agent == request->user_agent);
    FUZZ_CHECK(reparsed->accept_language == request->accept_language);
    // A token the check would accept survives the round trip whole.
    if (valid_bulk_token(request->token)) FUZZ_CHECK(reparsed->token == request->token);
  } else {
    FUZZ_CHECK(!why.empty());
  }

  if (const std::optional<BulkRemote> remote = parse_bulk_remote(input)) {
    FUZZ_CHECK(remote->token.empty() || valid_bulk_token(remote->token));
    FUZZ_CHECK(parse_ipv4_endpoint(remote->address));
  }

  const size_t cut = size == 0 ? 0 : data[0] % (size + 1);
  BulkDecoder decoder;
  if (decoder.feed(input.substr(0, cut)) && decoder.feed(input.substr(cut))) {
    while (const std::optional<BulkDecoder::Frame> frame = decoder.next())
      FUZZ_CHECK(frame->payload.size() <= kMaxBulkFrame);
  } else {
    FUZZ_CHECK(!decoder.error().empty());
  }
  return 0;
}

// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: the deterministic script's insertion (http/deterministic_page.hh) into a
// recorded response: its place in any bytes, Content-Security-Policy values amended, and the
// whole change of a response with the content codings the input chooses. A changed response
// decodes to the content with the script at its place and says its length; an unchanged one
// is byte for byte what it was.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_check.hh"
#include "http/content_coding.hh"
#include "http/deterministic_page.hh"

namespace {
const char* const kTypes[] = {"text/html", "text/html; charset=utf-8", "application/xhtml+xml", "text/plain",
                              "text/html; charset=utf-16"};
const char* const kCodings[] = {"", "gzip", "deflate", "br", "gzip, br", "zstd"};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider input(data, size);
  const std::string type = kTypes[input.ConsumeIntegralInRange<size_t>(0, 4)];
  const std::string coding_list = kCodings[input.ConsumeIntegralInRange<size_t>(0, 5)];
  const bool encode_first = input.ConsumeBool();  // a body that really is in the coding, or raw bytes
  const std::string policy = input.ConsumeRandomLengthString(256);
  const std::string content = input.ConsumeRemainingBytesAsString();

  const size_t at = script_position(content);
  FUZZ_CHECK(at == std::string::npos || at <= content.size());

  const std::string hash = "'sha256-AAAA'";
  const std::string amended = csp_allowing(policy, hash);
  FUZZ_CHECK(amended == policy || amended.find(hash) != std::string::npos);

  std::vector<HttpHeader> headers = {{"Content-Type", type}, {"Content-Length", "7"}};
  if (!policy.empty()) headers.push_back({"Content-Security-Policy", policy});
  if (!coding_list.empty()) headers.push_back({"Content-Encoding", coding_list});
  HttpMessage fields{"", headers, ""};
  const std::vector<std::string> codings = content_codings(fields);
  std::string body = content;
  if (encode_first && coding_list != "zstd") {
    std::string why;
    auto encoded = encode_content(content, codings, &why);
    FUZZ_CHECK(encoded.has_value());
    // What is encoded decodes to itself.
    FUZZ_CHECK(decode_content(*encoded, codings, &why) == content);
    body = *encoded;
  }
  const std::vector<HttpHeader> headers_before = headers;
  const std::string body_before = body;
  std::string why;
  const uint64_t start_ms = 1'790'000'000'000;
  if (!add_deterministic_script(headers, body, start_ms, &why)) {
    FUZZ_CHECK(body == body_before);
    FUZZ_CHECK(headers.size() == headers_before.size());
    for (size_t i = 0; i < headers.size(); i++)
      FUZZ_CHECK(headers[i].key == headers_before[i].key && headers[i].value == headers_before[i].value);
    return 0;
  }
  FUZZ_CHECK(why.empty());
  auto decoded = decode_content(body, codings, &why);
  FUZZ_CHECK(decoded.has_value());
  auto original = decode_content(body_before, codings, &why);
  FUZZ_CHECK(original.has_value());
  const size_t place = script_position(*original);
  FUZZ_CHECK(place != std::string::npos);
  const std::string element = "<script>" + deterministic_script(start_ms) + "</script>";
  FUZZ_CHECK(*decoded == original->substr(0, place) + element + original->substr(place));
  size_t lengths = 0;
  for (const HttpHeader& h : headers) {
    if (h.key == "Content-Length") {
      lengths++;
      FUZZ_CHECK(h.value == std::to_string(body.size()));
    }
  }
  FUZZ_CHECK(lengths == 1);
  return 0;
}
